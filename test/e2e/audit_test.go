//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
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

// podsBoundBy lists the pods of namespace that user bound, from the suite cluster's audit
// log: its accepted creations of pods/binding. Unlike the Scheduled event a scheduler
// reports after a binding, which it never sends when it stops while the binding is in
// flight, this is the API server's own record of who bound each pod. The API server may
// write it just after it answered: read it with Eventually.
func podsBoundBy(namespace, user string) map[string]int {
	bound := map[string]int{}
	for _, event := range auditRequestsOf(localCluster("e2e", outputDir, "audit-log"), user) {
		ref := event.ObjectRef
		if event.Verb == "create" && ref != nil && ref.Resource == "pods" && ref.Subresource == "binding" && ref.Namespace == namespace &&
			event.ResponseStatus != nil && event.ResponseStatus.Code == http.StatusCreated {
			bound[ref.Name]++
		}
	}
	return bound
}

// serviceAccountUser is the user name of a ServiceAccount's tokens.
func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}
