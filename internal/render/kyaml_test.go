package render

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/bindata"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// lookalikeStrings are strings that YAML might read as another type, quote, fold or
// refuse.
var lookalikeStrings = []string{
	"plain", "true", "True", "yes", "Yes", "no", "on", "off", "y", "n", "null", "Null", "~", "", "123", "-5", "+5", "0", "-0", "010",
	"0x1F", "0o17", "0o-5", "0b101", "0b-101", "1_000", "1.5", ".5", "1e3", "1e400", ".inf", "-.inf", ".nan", "1:20", "1:20:30.5",
	"2001-12-14", "2001-12-14T21:59:43.10Z", "2001-12-14 21:59:43.10", "<<", "- item", "-item", "-", "---", "...", "--- x",
	"key: value", "key:value", "key:", ":x", "? x", "?x", "#comment", "a #comment", "a#b", "@at", "`tick", "'single'", `"double"`,
	"%percent", "!tag", "&anchor", "*alias", "|pipe", ">fold", "{}", "[a]", "a,b", " lead", "trail ", "  ", "multi\nline",
	"multi\nline\n", "trail\n\n", "\nlead", "sp \nbreak", "break\n space", "tab\there", "tab\n\tline", "back\\slash",
	"<script>&amp;", "registry.k8s.io/kube-scheduler:v1.35.1", "4f1f5a8e-0000-4000-8000-000000000001",
	strings.Repeat("word ", 30), strings.Repeat("x", 200), "é", "naïve", "日本", "\U0001F600", "nb\u00a0sp",
}

// fieldsDocument has fields of each style, for setting strings over them.
const fieldsDocument = `plain: x
double: "x"
single: 'x'
literal: |
  x
flow: {a: b}
`

// TestSetNodeQuotesWhatYAML11Misreads sets strings into fields of each style and new
// ones: a YAML 1.1 reader (sigs.k8s.io/yaml, as kube-scheduler reads its configuration)
// and kyaml both read each string back as set. A string that YAML 1.1 reads as a string
// is written as kyaml's field setter writes it.
func TestSetNodeQuotesWhatYAML11Misreads(t *testing.T) {
	paths := [][]string{{"plain"}, {"double"}, {"single"}, {"literal"}, {"new"}, {"flow", "a"}, {"flow", "c"}, {"deep", "new"}}
	for _, s := range lookalikeStrings {
		for _, path := range paths {
			t.Run(fmt.Sprintf("%q at %s", s, strings.Join(path, ".")), func(t *testing.T) {
				got := yaml.MustParse(fieldsDocument)
				if err := setNode(got, yaml.NewStringRNode(s), path...); err != nil {
					t.Fatal(err)
				}
				text := got.MustString()
				var yaml11 map[string]any
				if err := sigsyaml.Unmarshal([]byte(text), &yaml11); err != nil {
					t.Fatalf("a YAML 1.1 reader refuses the text: %v\n%s", err, text)
				}
				if read := fieldOf(yaml11, path); read != s {
					t.Errorf("a YAML 1.1 reader reads %#v, want %q, in:\n%s", read, s, text)
				}
				reparsed, err := yaml.Parse(text)
				if err != nil {
					t.Fatal(err)
				}
				content, err := reparsed.Map()
				if err != nil {
					t.Fatal(err)
				}
				if read := fieldOf(content, path); read != s {
					t.Errorf("kyaml reads %#v, want %q, in:\n%s", read, s, text)
				}
				if yaml.IsValueNonString(s) {
					return
				}
				want := yaml.MustParse(fieldsDocument)
				err = want.PipeE(yaml.LookupCreate(yaml.MappingNode, path[:len(path)-1]...), yaml.SetField(path[len(path)-1], yaml.NewStringRNode(s)))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want.MustString(), text); diff != "" {
					t.Errorf("text differs from kyaml's field setter's (-kyaml +setNode):\n%s", diff)
				}
			})
		}
	}
}

// TestYAML11AnswersAreKyamls asks each lookalike string twice, the second time from
// what isYAML11NonString remembers: both answers are kyaml's.
func TestYAML11AnswersAreKyamls(t *testing.T) {
	for _, s := range lookalikeStrings {
		want := yaml.IsValueNonString(s)
		for range 2 {
			if got := isYAML11NonString(yaml.NewStringRNode(s).YNode()); got != want {
				t.Errorf("isYAML11NonString(%q) = %v, kyaml says %v", s, got, want)
			}
		}
	}
}

// fieldOf is the value at path in a decoded document.
func fieldOf(document map[string]any, path []string) any {
	var value any = document
	for _, field := range path {
		mapping, ok := value.(map[string]any)
		if !ok {
			return nil
		}
		value = mapping[field]
	}
	return value
}

// TestValueNodeScalars checks that valueNode's own nodes of a number or a boolean are
// those of sigs.k8s.io/yaml's text.
func TestValueNodeScalars(t *testing.T) {
	for _, value := range []any{0, -7, int32(42), int64(1) << 40, true, false} {
		want, err := sigsyaml.Marshal(value)
		if err != nil {
			t.Fatal(err)
		}
		wantNode := yaml.MustParse(string(want)).YNode()
		node, err := valueNode(value)
		if err != nil {
			t.Fatal(err)
		}
		if got := node.YNode(); got.Tag != wantNode.Tag || got.Value != wantNode.Value || got.Style != wantNode.Style {
			t.Errorf("valueNode(%#v) = %s %q style %d, the text's %s %q style %d",
				value, got.Tag, got.Value, got.Style, wantNode.Tag, wantNode.Value, wantNode.Style)
		}
	}
}

// TestSetStringsWritesWhatSetValueWrites sets the operator's labels, with values that
// YAML might read as other types, into the pod template's mapping and into a new one:
// the text, which is hashed, is what setValue writes of the map.
func TestSetStringsWritesWhatSetValueWrites(t *testing.T) {
	for _, value := range []string{"packer", "on", "yes", "no", "y", "true", "null", "", "123", "010", "1e3", "0x1f", "1_000",
		"2001-12-14", "4f1f5a8e-0000-4000-8000-000000000001", "a.b_c-d"} {
		labels := OwnerLabels(secondaryScheduler(value, nil))
		labels[ConfigHashAnnotation] = value
		for _, path := range [][]string{{"spec", "template", "metadata", "labels"}, {"spec", "template", "metadata", "new"}} {
			t.Run(fmt.Sprintf("%q at %s", value, strings.Join(path, ".")), func(t *testing.T) {
				want, got := yaml.MustParse(deploymentHead), yaml.MustParse(deploymentHead)
				if err := setValue(want, labels, path...); err != nil {
					t.Fatal(err)
				}
				if err := setStrings(got, labels, path...); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want.MustString(), got.MustString()); diff != "" {
					t.Errorf("text differs from setValue's (-setValue +setStrings):\n%s", diff)
				}
			})
		}
	}
}

// deploymentHead is the start of the Deployment asset, with its empty flow mappings.
const deploymentHead = `apiVersion: apps/v1
kind: Deployment
spec:
  template:
    metadata:
      labels: {}
      annotations: {}
`

// dnsSubdomain is what the API server accepts as a schedulerName (the CRD's pattern).
var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// expectConfigReadsBack renders the configuration of a scheduler named name in namespace
// and reads it as kube-scheduler does (YAML 1.1): the names come back as strings.
func expectConfigReadsBack(t *testing.T, name, namespace string, custom bool) {
	t.Helper()
	cr := secondaryScheduler(name, func(cr *v1.SecondaryScheduler) { cr.Spec.SchedulerName = name })
	cr.Namespace = namespace
	facts := Facts{KubernetesMinor: 34}
	if custom {
		cr.Spec.Profile, cr.Spec.SchedulerConfig = nil, "cm"
		// The user's own configuration quotes the name: schedconfig.Parse checked it.
		facts.CustomConfig = []byte(strings.ReplaceAll(customConfig, "schedulerName: image-locality", "schedulerName: '"+name+"'") +
			"leaderElection:\n  resourceName: lease\n  resourceNamespace: kube-system\n")
	}
	config, err := SchedulerConfig(cr, facts)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := schedconfig.Parse([]byte(config), name, "rendered")
	if err != nil {
		t.Fatalf("kube-scheduler would not read the configuration: %v\n%s", err, config)
	}
	if got := parsed.LeaderElection.ResourceNamespace; got != namespace {
		t.Errorf("leaderElection.resourceNamespace reads %q, want %q:\n%s", got, namespace, config)
	}
}

// TestSchedulerConfigOfLookalikeNames renders the configuration of schedulers whose
// names a YAML 1.1 reader takes for other types where unquoted.
func TestSchedulerConfigOfLookalikeNames(t *testing.T) {
	for _, name := range []string{"on", "off", "yes", "no", "y", "n", "true", "null", "123", "010", "0x1f", "1e3", "1-2"} {
		for _, custom := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s custom %t", name, custom), func(t *testing.T) {
				expectConfigReadsBack(t, name, name, custom)
			})
		}
	}
}

// FuzzSchedulerConfigNames renders the configuration of a scheduler of any name and
// namespace the API server accepts: kube-scheduler reads them back as they are.
func FuzzSchedulerConfigNames(f *testing.F) {
	for _, name := range []string{"on", "yes", "123", "1e3", "0x1f", "2001-12-14", "packer"} {
		f.Add(name, name)
	}
	f.Fuzz(func(t *testing.T, name, namespace string) {
		if len(name) > 63 || len(namespace) > 63 || !dnsSubdomain.MatchString(name) || !dnsSubdomain.MatchString(namespace) ||
			strings.Contains(namespace, ".") || name == v1.DefaultSchedulerName {
			return
		}
		expectConfigReadsBack(t, name, namespace, false)
	})
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
