package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCountAuditRequests(t *testing.T) {
	const user = "system:serviceaccount:bench-operator:operator"
	log := `{"stage":"ResponseComplete","verb":"get","user":{"username":"system:serviceaccount:bench-operator:operator"},"objectRef":{"resource":"deployments","namespace":"a","name":"x"},"responseStatus":{"code":200}}
{"stage":"ResponseComplete","verb":"get","user":{"username":"system:serviceaccount:bench-operator:operator"},"objectRef":{"resource":"deployments","namespace":"a","name":"y"},"responseStatus":{"code":200}}
{"stage":"ResponseComplete","verb":"delete","user":{"username":"system:serviceaccount:bench-operator:operator"},"objectRef":{"resource":"rolebindings","namespace":"kube-system"},"responseStatus":{"code":404}}
{"stage":"ResponseStarted","verb":"watch","user":{"username":"system:serviceaccount:bench-operator:operator"},"objectRef":{"resource":"leases"},"responseStatus":{"code":200}}
{"stage":"ResponseComplete","verb":"watch","user":{"username":"system:serviceaccount:bench-operator:operator"},"objectRef":{"resource":"leases"},"responseStatus":{"code":200}}
{"stage":"ResponseComplete","verb":"update","user":{"username":"system:serviceaccount:bench-operator:operator"},"objectRef":{"resource":"secondaryschedulers","subresource":"status"},"responseStatus":{"code":409}}
{"stage":"ResponseComplete","verb":"get","requestURI":"/version?timeout=32s","user":{"username":"system:serviceaccount:bench-operator:operator"},"responseStatus":{"code":200}}
{"stage":"ResponseComplete","verb":"list","user":{"username":"system:serviceaccount:other:operator-x"},"objectRef":{"resource":"pods"},"responseStatus":{"code":200}}
{"stage":"ResponseComplete","verb":"list","user":{"username":"system:serviceaccount:bench-scale:scale-000-scheduler"},"objectRef":{"resource":"pods"},"responseStatus":{"code":200}}
`
	got, err := countAuditRequests([]byte(log), user)
	if err != nil {
		t.Fatal(err)
	}
	want := map[requestKey]int{
		{verb: "get", resource: "deployments", code: 200}:                   2,
		{verb: "delete", resource: "rolebindings", code: 404}:               1,
		{verb: "watch", resource: "leases"}:                                 1,
		{verb: "update", resource: "secondaryschedulers/status", code: 409}: 1,
		{verb: "get", resource: "/version", code: 200}:                      1,
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(requestKey{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := countAuditRequests([]byte(`{"user":{"username":"`+user+`"`), user); err == nil {
		t.Error("a truncated line of the user's was accepted")
	}
}
