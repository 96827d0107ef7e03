package drift

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// deployment is the shape of a rendered Deployment, as far as the tests need it.
const deployment = `{"metadata":{"name":"d","labels":{"app.kubernetes.io/name":"secondary-scheduler","app":"x"}},` +
	`"spec":{"replicas":1,"template":{"spec":{` +
	`"containers":[{"name":"kube-scheduler","image":"sched:v1","command":["/bin/kube-scheduler","--v=2"],` +
	`"ports":[{"name":"https","containerPort":10259}],"resources":{"requests":{"cpu":"100m"}}},` +
	`{"name":"extender-a","image":"ext:v1"}],` +
	`"volumes":[{"name":"config","configMap":{"name":"c"}},{"name":"tmp","emptyDir":{}}]}}}}`

// edited is deployment with edit applied to it.
func edited(t *testing.T, edit func(o map[string]any)) map[string]any {
	o := object(t, deployment)
	edit(o)
	return o
}

func podSpec(o map[string]any) map[string]any {
	return o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
}

func container(o map[string]any, i int) map[string]any {
	return podSpec(o)["containers"].([]any)[i].(map[string]any)
}

func TestChanges(t *testing.T) {
	tests := []struct {
		name string
		edit func(o map[string]any)
		want []string // path: live <- desired
	}{
		{"untouched", func(map[string]any) {}, nil},
		{"defaults and status added", func(o map[string]any) {
			o["status"] = map[string]any{"replicas": 1}
			podSpec(o)["dnsPolicy"] = "ClusterFirst"
			container(o, 0)["terminationMessagePath"] = "/dev/termination-log"
		}, nil},
		{"scaled", func(o map[string]any) { o["spec"].(map[string]any)["replicas"] = int64(3) },
			[]string{"spec.replicas: 3 <- 1"}},
		{"an image of a named container", func(o map[string]any) { container(o, 0)["image"] = "other:v9" },
			[]string{`spec.template.spec.containers[name=kube-scheduler].image: "other:v9" <- "sched:v1"`}},
		{"a label with dots changed, another removed", func(o map[string]any) {
			labels := o["metadata"].(map[string]any)["labels"].(map[string]any)
			labels["app.kubernetes.io/name"] = "mine"
			delete(labels, "app")
		}, []string{`metadata.labels.app: (none) <- "x"`, `metadata.labels["app.kubernetes.io/name"]: "mine" <- "secondary-scheduler"`}},
		{"an argument of a list without names, by index", func(o map[string]any) { container(o, 0)["command"].([]any)[1] = "--v=8" },
			[]string{`spec.template.spec.containers[name=kube-scheduler].command[1]: "--v=8" <- "--v=2"`}},
		{"an argument added", func(o map[string]any) {
			container(o, 0)["command"] = append(container(o, 0)["command"].([]any), "--x")
		}, []string{`spec.template.spec.containers[name=kube-scheduler].command: (3 items) <- (2 items)`}},
		{"a container added and one removed, by name", func(o map[string]any) {
			podSpec(o)["containers"] = []any{container(o, 0), map[string]any{"name": "sidecar", "image": "s:1"}}
		}, []string{`spec.template.spec.containers[name=extender-a]: (none) <- (2 fields)`,
			`spec.template.spec.containers[name=sidecar]: (2 fields) <- (none)`}},
		{"named items reordered", func(o map[string]any) {
			volumes := podSpec(o)["volumes"].([]any)
			volumes[0], volumes[1] = volumes[1], volumes[0]
		}, []string{`spec.template.spec.volumes: [tmp config] <- [config tmp]`}},
		{"a field of a named volume", func(o map[string]any) {
			podSpec(o)["volumes"].([]any)[0].(map[string]any)["configMap"] = map[string]any{"name": "mine"}
		}, []string{`spec.template.spec.volumes[name=config].configMap.name: "mine" <- "c"`}},
		{"a map replaced by a string", func(o map[string]any) { container(o, 0)["resources"] = "none" },
			[]string{`spec.template.spec.containers[name=kube-scheduler].resources: "none" <- (1 fields)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live, desired := edited(t, tt.edit), object(t, deployment)
			changes, more := Changes(live, desired, 10)
			var got []string
			for _, change := range changes {
				got = append(got, fmt.Sprintf("%s: %s <- %s", change.Path, Short(change.Live), Short(change.Desired)))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" || more != 0 {
				t.Errorf("Changes (-want +got), %d more:\n%s", more, diff)
			}
			if holds := Holds(live, desired); holds != (len(changes) == 0) {
				t.Errorf("Holds = %t with %d changes", holds, len(changes))
			}
		})
	}
}

// TestChangesAgreeWithHolds: every case of TestHolds that Holds fails has a change.
func TestChangesAgreeWithHolds(t *testing.T) {
	desired := object(t, `{"spec":{"a":{"b":[{"name":"x","v":1}],"c":"s"},"n":[1,2],"m":{}}}`)
	for _, live := range []string{
		`{"spec":{"a":{"b":[{"name":"x","v":2}],"c":"s"},"n":[1,2]}}`,
		`{"spec":{"a":{"b":[{"v":1}],"c":"s"},"n":[1,2]}}`,
		`{"spec":{"a":{"b":[],"c":"s"},"n":[2,1]}}`,
		`{"spec":{"a":"x","n":[1,2]}}`,
		`{"spec":{"a":{"b":[{"name":"x","v":1}],"c":"s"},"n":[1,2],"m":"x"}}`,
		`{}`,
	} {
		changes, _ := Changes(object(t, live), desired, 10)
		if len(changes) == 0 || Holds(object(t, live), desired) {
			t.Errorf("%s: %d changes, Holds %t", live, len(changes), Holds(object(t, live), desired))
		}
	}
}

func TestChangesAreBounded(t *testing.T) {
	live := edited(t, func(o map[string]any) {
		o["spec"].(map[string]any)["replicas"] = int64(3)
		container(o, 0)["image"] = "a"
		container(o, 1)["image"] = "b"
		delete(o["metadata"].(map[string]any), "labels")
	})
	first, more := Changes(live, object(t, deployment), 2)
	if len(first) != 2 || more != 2 {
		t.Fatalf("got %d changes and %d more, want 2 and 2", len(first), more)
	}
	if first[0].Path.String() != "metadata.labels" || first[1].Path.String() != "spec.replicas" {
		t.Errorf("not the first in the object's order: %s, %s", first[0].Path, first[1].Path)
	}
}

func TestShort(t *testing.T) {
	tests := []struct {
		value any
		want  string
	}{
		{nil, "(none)"},
		{int64(3), "3"},
		{float64(0.5), "0.5"},
		{true, "true"},
		{"sched:v1", `"sched:v1"`},
		{strings.Repeat("x", 100), `"` + strings.Repeat("x", maxValueLength) + `"…`},
		{"profiles:\n- a\n- b\n", "(a text of 3 lines)"},
		{map[string]any{"a": 1}, "(1 fields)"},
		{[]any{"a", "b"}, "(2 items)"},
		{[]any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}, "[a b]"},
	}
	for _, tt := range tests {
		if got := Short(tt.value); got != tt.want {
			t.Errorf("Short(%v) = %s, want %s", tt.value, got, tt.want)
		}
	}
}

// managedFields are entries as the API server keeps them.
func managedFields(t *testing.T, entries ...string) []metav1.ManagedFieldsEntry {
	t.Helper()
	out := make([]metav1.ManagedFieldsEntry, 0, len(entries))
	for i, entry := range entries {
		manager, fields, _ := strings.Cut(entry, " ")
		at := metav1.NewTime(time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC))
		out = append(out, metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &at,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)})
	}
	return out
}

func TestUndoneEdits(t *testing.T) {
	desired := object(t, deployment)
	hash, err := Hash(desired)
	if err != nil {
		t.Fatal(err)
	}
	desired["metadata"].(map[string]any)["annotations"] = map[string]any{AppliedHashAnnotation: hash}
	withHash := func(value string, edit func(o map[string]any)) map[string]any {
		return edited(t, func(o map[string]any) {
			if value != "" {
				o["metadata"].(map[string]any)["annotations"] = map[string]any{AppliedHashAnnotation: value}
			}
			edit(o)
		})
	}
	scale := func(o map[string]any) { o["spec"].(map[string]any)["replicas"] = int64(3) }
	ours := `secondary-scheduler-operator {"f:metadata":{"f:annotations":{"f:` + AppliedHashAnnotation + `":{}}},"f:spec":{"f:replicas":{}}}`
	scaler := `kubectl-scale {"f:spec":{"f:replicas":{}}}`
	editorOfImage := `kubectl-edit {"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"kube-scheduler\"}":{"f:image":{}}}}}}}`
	annotator := `kubectl-annotate {"f:metadata":{"f:annotations":{"f:` + AppliedHashAnnotation + `":{}}}}`
	tests := []struct {
		name   string
		live   map[string]any
		fields []metav1.ManagedFieldsEntry
		want   []string // path by editor
	}{
		{"untouched", withHash(hash, func(map[string]any) {}), managedFields(t, ours), nil},
		{"scaled", withHash(hash, scale), managedFields(t, ours, scaler), []string{"spec.replicas by kubectl-scale"}},
		{"an image edited", withHash(hash, func(o map[string]any) { container(o, 0)["image"] = "x" }), managedFields(t, ours, scaler, editorOfImage),
			[]string{"spec.template.spec.containers[name=kube-scheduler].image by kubectl-edit"}},
		{"a label removed: no one sets it now", withHash(hash, func(o map[string]any) {
			delete(o["metadata"].(map[string]any)["labels"].(map[string]any), "app")
		}), managedFields(t, ours), []string{"metadata.labels.app by "}},
		{"the operator's own change: another hash, its own", withHash("0123", scale), managedFields(t, ours), nil},
		{"the hash changed by someone else", withHash("0123", func(map[string]any) {}), managedFields(t, ours, annotator),
			[]string{`metadata.annotations["` + AppliedHashAnnotation + `"] by kubectl-annotate`}},
		{"the hash removed", withHash("", scale), managedFields(t, scaler),
			[]string{`metadata.annotations by `, "spec.replicas by kubectl-scale"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes, more := UndoneEdits(tt.live, desired, tt.fields, "secondary-scheduler-operator", 5)
			var got []string
			for _, change := range changes {
				got = append(got, change.Path.String()+" by "+change.Editor)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" || more != 0 {
				t.Errorf("UndoneEdits (-want +got), %d more:\n%s", more, diff)
			}
		})
	}
}

// TestTheLatestEditorIsNamed: of two managers that set a field in turn, the later owns it
// (the API server moves a field to whoever changes it); of a field owned with others,
// the latest writer is named.
func TestTheLatestEditorIsNamed(t *testing.T) {
	replicas := Path(nil).key("spec").key("replicas")
	fields := managedFields(t, `kubectl-edit {"f:spec":{"f:replicas":{}}}`, `kubectl-scale {"f:spec":{"f:replicas":{}}}`)
	if got := editorsOf(fields, "op").of(replicas); got != "kubectl-scale" {
		t.Errorf("editor = %q, want kubectl-scale", got)
	}
	if got := editorsOf(fields, "kubectl-scale").of(replicas); got != "kubectl-edit" {
		t.Errorf("editor without the field owner = %q, want kubectl-edit", got)
	}
	atomic := managedFields(t, `kubectl-edit {"f:spec":{"f:command":{}}}`)
	if got := editorsOf(atomic, "op").of(Path(nil).key("spec").key("command").index(1)); got != "kubectl-edit" {
		t.Errorf("editor of an item of an atomic list = %q, want kubectl-edit", got)
	}
}

// Only an object that carries the operator's current hash, or none, is read again to say
// who edited it: one that carries another hash changed with the operator's own content,
// and costs no request.
func TestEditedBySomeoneElse(t *testing.T) {
	withHash := func(hash string) map[string]any {
		object := map[string]any{"spec": map[string]any{"replicas": int64(1)}}
		if hash != "" {
			object["metadata"] = map[string]any{"annotations": map[string]any{AppliedHashAnnotation: hash}}
		}
		return object
	}
	tests := []struct {
		name         string
		cached, want string
		edited       bool
	}{
		{"the operator's hash, a field changed", "h1", "h1", true},
		{"no hash", "", "h1", true},
		{"the operator's content changed", "h0", "h1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EditedBySomeoneElse(withHash(tt.cached), withHash(tt.want)); got != tt.edited {
				t.Errorf("EditedBySomeoneElse = %v, want %v", got, tt.edited)
			}
		})
	}
}
