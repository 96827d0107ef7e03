package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// The extender answers as kube-scheduler expects, to node names and to whole nodes.
func TestExtenderVerbs(t *testing.T) {
	server := httptest.NewServer((&extender{reject: set("a,b"), prefer: set("d")}).handler())
	defer server.Close()
	post := func(path string, args extenderv1.ExtenderArgs, into any) {
		t.Helper()
		body, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		response, err := http.Post(server.URL+path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer response.Body.Close()
		if response.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: HTTP %d", path, response.StatusCode)
		}
		if err := json.NewDecoder(response.Body).Decode(into); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{"a", "b", "c", "d"}
	var byName extenderv1.ExtenderFilterResult
	post("/scheduler/filter", extenderv1.ExtenderArgs{NodeNames: &names}, &byName)
	if diff := cmp.Diff([]string{"c", "d"}, *byName.NodeNames); diff != "" {
		t.Errorf("filter by name (-want +got):\n%s", diff)
	}
	if len(byName.FailedNodes) != 2 || byName.FailedNodes["a"] == "" {
		t.Errorf("failed nodes %v, want a and b with a reason", byName.FailedNodes)
	}
	nodes := &corev1.NodeList{}
	for _, name := range names {
		nodes.Items = append(nodes.Items, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	var whole extenderv1.ExtenderFilterResult
	post("/filter", extenderv1.ExtenderArgs{Nodes: nodes}, &whole)
	if whole.Nodes == nil || len(whole.Nodes.Items) != 2 || whole.Nodes.Items[1].Name != "d" {
		t.Errorf("filter of whole nodes kept %v, want c and d", whole.Nodes)
	}
	var scores extenderv1.HostPriorityList
	post("/v1/prioritize", extenderv1.ExtenderArgs{NodeNames: &names}, &scores)
	want := extenderv1.HostPriorityList{{Host: "a"}, {Host: "b"}, {Host: "c"}, {Host: "d", Score: extenderv1.MaxExtenderPriority}}
	if diff := cmp.Diff(want, scores); diff != "" {
		t.Errorf("prioritize (-want +got):\n%s", diff)
	}
	response, err := http.Post(server.URL+"/bind", "application/json", bytes.NewReader([]byte("{}")))
	if err != nil {
		t.Fatal(err)
	}
	response.Body.Close()
	if response.StatusCode != http.StatusNotFound {
		t.Errorf("bind: HTTP %d, want 404: the scheduler keeps its own binder", response.StatusCode)
	}
}

// Taken down, the extender closes connections without an answer, and answers again once up.
func TestExtenderDown(t *testing.T) {
	server := &extender{}
	httpServer := httptest.NewServer(server.handler())
	defer httpServer.Close()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func() error {
		response, err := client.Get(httpServer.URL + "/calls")
		if err == nil {
			response.Body.Close()
		}
		return err
	}
	if err := get(); err != nil {
		t.Fatalf("up: %v", err)
	}
	server.down.Store(true)
	if err := get(); err == nil {
		t.Fatal("down: the request was answered")
	}
	server.down.Store(false)
	if err := get(); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
