package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// auditEvent is the part of an audit.k8s.io/v1 Event that the request counts read.
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	RequestURI string `json:"requestURI"`
	ObjectRef  *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// requestKey is what requests are counted by: verb, resource (with its subresource; the
// path for requests of no resource, such as discovery) and response code.
type requestKey struct {
	verb, resource string
	code           int
}

// countAuditRequests counts, in audit log lines, the requests user made: a watch once,
// when its response starts; any other request when its response completes.
func countAuditRequests(log []byte, user string) (map[requestKey]int, error) {
	counts := map[requestKey]int{}
	scanner := bufio.NewScanner(bytes.NewReader(log))
	scanner.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for scanner.Scan() {
		line := scanner.Bytes()
		// Most lines are other users'; skip them before decoding.
		if !bytes.Contains(line, []byte(user)) {
			continue
		}
		var event auditEvent
		if err := json.Unmarshal(line, &event); err != nil {
			return nil, fmt.Errorf("audit log line: %w", err)
		}
		if event.User.Username != user {
			continue
		}
		longRunningStart := event.Stage == "ResponseStarted"
		if !longRunningStart && (event.Stage != "ResponseComplete" || event.Verb == "watch") {
			continue
		}
		path, _, _ := strings.Cut(event.RequestURI, "?")
		key := requestKey{verb: event.Verb, resource: path}
		if event.ObjectRef != nil {
			key.resource = event.ObjectRef.Resource
			if event.ObjectRef.Subresource != "" {
				key.resource += "/" + event.ObjectRef.Subresource
			}
		}
		if event.ResponseStatus != nil && !longRunningStart {
			key.code = event.ResponseStatus.Code
		}
		counts[key]++
	}
	return counts, scanner.Err()
}

// auditLog reads the API server's audit log from an offset on.
type auditLog struct{ path string }

// offset is where the last complete line of the log ends now: requests after it are
// counted from it.
func (a auditLog) offset() int64 {
	file, err := os.Open(a.path)
	if err != nil {
		return 0
	}
	defer func() { _ = file.Close() }()
	info, err := file.Stat()
	if err != nil {
		return 0
	}
	size := info.Size()
	tail := make([]byte, min(size, 1<<20))
	if _, err := file.ReadAt(tail, size-int64(len(tail))); err != nil {
		return 0
	}
	return size - int64(len(tail)) + int64(bytes.LastIndexByte(tail, '\n')+1)
}

// requestsBetween counts user's requests logged between two offsets.
func (a auditLog) requestsBetween(from, to int64, user string) (map[requestKey]int, error) {
	if to <= from {
		return map[requestKey]int{}, nil
	}
	file, err := os.Open(a.path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = file.Close() }()
	data := make([]byte, to-from)
	if _, err := file.ReadAt(data, from); err != nil {
		return nil, fmt.Errorf("read the audit log %s: %w", a.path, err)
	}
	return countAuditRequests(data, user)
}
