//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	. "github.com/onsi/gomega"
)

// auditEvent is the part of an audit.k8s.io/v1 Event the specs read. The local clusters'
// API servers record every request of a ServiceAccount (hack/audit-policy.yaml): the
// operator's and the schedulers' it runs.
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	RequestURI     string `json:"requestURI"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

func (e auditEvent) String() string {
	code := 0
	if e.ResponseStatus != nil {
		code = e.ResponseStatus.Code
	}
	return fmt.Sprintf("%s %s -> %d", e.Verb, e.RequestURI, code)
}

// auditRequestsOf reads, from the audit log at path, every request user made, once each
// (when its response completed).
func auditRequestsOf(path, user string) []auditEvent {
	file, err := os.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = file.Close() }()
	var events []auditEvent
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		var event auditEvent
		Expect(json.Unmarshal(scanner.Bytes(), &event)).To(Succeed())
		if event.User.Username == user && event.Stage == "ResponseComplete" {
			events = append(events, event)
		}
	}
	Expect(scanner.Err()).NotTo(HaveOccurred())
	return events
}

// bindingRequestsBy counts, per pod of namespace, the requests to bind it that user sent,
// from the suite cluster's audit log, whatever their answer: a scheduler that stops while
// its binding is in flight sees its request cancelled, yet the API server may have made
// the binding, answering nobody (the audit log then records the connection closed
// early). The API server's record tells who asked for each binding; the Scheduled event,
// which a scheduler reports only once it has the answer, does not. It may be written
// just after the API server answered: read it with Eventually.
func bindingRequestsBy(namespace, user string) map[string]int {
	requests := map[string]int{}
	for _, event := range auditRequestsOf(localCluster(clusterName, outputDir, "audit-log"), user) {
		ref := event.ObjectRef
		if event.Verb == "create" && ref != nil && ref.Resource == "pods" && ref.Subresource == "binding" && ref.Namespace == namespace {
			requests[ref.Name]++
		}
	}
	return requests
}

// serviceAccountUser is the user name of a ServiceAccount's tokens.
func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}
