package render

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/bindata"
)

// fieldsDocument has fields of each style, for setting values over them.
const fieldsDocument = `apiVersion: v1
kind: ConfigMap
metadata:
  name: set-by-render
  labels: {old: label}
plain: x
double: "x"
single: 'x'
literal: |
  x
flow: {a: b}
list: [a]
null:
number: 5
`

// expectSameDocument checks that two documents have the same nodes and text.
func expectSameDocument(t *testing.T, want, got *yaml.RNode) {
	t.Helper()
	if diff := cmp.Diff(shapeOf(want.YNode()), shapeOf(got.YNode())); diff != "" {
		t.Errorf("nodes differ from kyaml's (-kyaml +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.MustString(), got.MustString()); diff != "" {
		t.Errorf("text differs from kyaml's (-kyaml +got):\n%s", diff)
	}
}

func TestSetNodeMatchesKyaml(t *testing.T) {
	values := map[string]func() *yaml.RNode{}
	for _, s := range lookalikeStrings {
		values[fmt.Sprintf("string %q", s)] = func() *yaml.RNode { return yaml.NewStringRNode(s) }
		values[fmt.Sprintf("scalar %q", s)] = func() *yaml.RNode { return yaml.NewScalarRNode(s) }
	}
	values["mapping"] = func() *yaml.RNode { return yaml.NewMapRNode(&map[string]string{"k": "v"}) }
	values["tagged null"] = func() *yaml.RNode {
		return yaml.NewRNode(&yaml.Node{Kind: yaml.ScalarNode, Tag: nullTag, Value: "null"})
	}
	values["integer"] = func() *yaml.RNode { return yaml.NewRNode(marshalledInteger(7)) }
	values["quoted string"] = func() *yaml.RNode {
		return yaml.NewRNode(&yaml.Node{Kind: yaml.ScalarNode, Tag: strTag, Value: "yes", Style: yaml.SingleQuotedStyle})
	}
	paths := [][]string{{"plain"}, {"double"}, {"single"}, {"literal"}, {"flow"}, {"list"}, {"null"}, {"number"}, {"new"},
		{"metadata", "name"}, {"metadata", "namespace"}, {"flow", "a"}, {"flow", "c"}, {"deep", "er", "field"},
		{"null", "field"}, {"plain", "field"}, {"list", "0", "field"}, {"list", "[name=a]", "field"}, {" spaced ", "field"}}
	for name, value := range values {
		for _, path := range paths {
			t.Run(name+" at "+strings.Join(path, "."), func(t *testing.T) {
				want, got := yaml.MustParse(fieldsDocument), yaml.MustParse(fieldsDocument)
				wantErr := want.PipeE(yaml.LookupCreate(yaml.MappingNode, path[:len(path)-1]...), yaml.SetField(path[len(path)-1], value()))
				err := setNode(got, value(), path...)
				if (err != nil) != (wantErr != nil) {
					t.Fatalf("setNode error %v, kyaml's %v", err, wantErr)
				}
				expectSameDocument(t, want, got)
			})
		}
	}
}

func TestObjectMetadataMatchesKyaml(t *testing.T) {
	labels := map[string]string{"b": "yes", "a": "123", "c": "plain", "d": "", "e": "multi\nline", "app.kubernetes.io/name": "on"}
	for _, asset := range []string{"deployment.yaml", "serviceaccount.yaml", "clusterrolebinding-kube-scheduler.yaml",
		"prometheusrule-load-watcher.yaml", "scheduler-config/binpacking.yaml"} {
		for _, name := range []string{"scheduler", "123", "yes", "null", "a: b"} {
			t.Run(asset+" "+name, func(t *testing.T) {
				want, err := parseAsset(asset)
				if err != nil {
					t.Fatal(err)
				}
				got, err := loadAsset(asset)
				if err != nil {
					t.Fatal(err)
				}
				if err := want.SetName(name); err != nil {
					t.Fatal(err)
				}
				if err := want.SetNamespace(name); err != nil {
					t.Fatal(err)
				}
				if err := want.SetLabels(labels); err != nil {
					t.Fatal(err)
				}
				if err := setName(got, name); err != nil {
					t.Fatal(err)
				}
				if err := setNamespace(got, name); err != nil {
					t.Fatal(err)
				}
				if err := setLabels(got, labels); err != nil {
					t.Fatal(err)
				}
				expectSameDocument(t, want, got)
			})
		}
	}
}

// TestRenderConcurrently renders from several goroutines at once, as the operator does,
// with the assets parsed once and shared (run it with -race): every rendering is the
// same, and the shared assets stay as parsed.
func TestRenderConcurrently(t *testing.T) {
	cr := secondaryScheduler("concurrent", nil)
	cr.Spec.NodeSelector = map[string]string{"node-role.kubernetes.io/infra": ""}
	facts := Facts{KubernetesMinor: 34, PlacementNodes: 3, MetricsToken: "token",
		MetricsIdentity: &MetricsIdentity{ClusterRole: DefaultMetricsClusterRole, Token: &BoundToken{Token: "token", ServiceAccountUID: "uid",
			ExpiresAt: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), RenewAt: time.Date(2026, 11, 23, 7, 12, 0, 0, time.UTC)}},
		TrustedCA:      &TrustedCA{ConfigMap: "ca", Key: "ca.crt", Hash: "3f2a"},
		RecordingRules: &RecordingRuleTarget{Namespace: "monitoring", Labels: map[string]string{"role": "rules"}}}
	want, err := Render(cr, facts)
	if err != nil {
		t.Fatal(err)
	}
	var renderings sync.WaitGroup
	results := make([]*Result, 16)
	errs := make([]error, len(results))
	for i := range results {
		renderings.Go(func() { results[i], errs[i] = Render(cr, facts) })
	}
	renderings.Wait()
	for i, got := range results {
		if errs[i] != nil {
			t.Fatalf("rendering %d: %v", i, errs[i])
		}
		if diff := cmp.Diff(want.Objects, got.Objects); diff != "" {
			t.Errorf("rendering %d differs (-first +concurrent):\n%s", i, diff)
		}
		if got.SchedulerConfig != want.SchedulerConfig || got.ConfigHash != want.ConfigHash {
			t.Errorf("rendering %d has another configuration", i)
		}
	}
	parsedAssets.Range(func(path, parsed any) bool {
		data, err := bindata.Asset(path.(string))
		if err != nil {
			t.Fatal(err)
		}
		fresh := yaml.MustParse(string(data))
		if diff := cmp.Diff(fresh.MustString(), parsed.(*yaml.RNode).MustString()); diff != "" {
			t.Errorf("rendering changed the shared asset %s (-parsed +shared):\n%s", path, diff)
		}
		return true
	})
}
