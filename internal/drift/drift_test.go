package drift

import (
	"encoding/json"
	"testing"
)

func object(t *testing.T, text string) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHolds(t *testing.T) {
	desired := `{"metadata":{"name":"a","labels":{"x":"1"}},"spec":{"replicas":2,"args":["--v=2","--config=/c"],"ports":[{"port":10259,"name":"https"}]}}`
	tests := []struct {
		name string
		live string
		want bool
	}{
		{"same", desired, true},
		{"defaults and status added",
			`{"metadata":{"name":"a","uid":"u","labels":{"x":"1","other":"y"}},"spec":{"replicas":2,"paused":false,"args":["--v=2","--config=/c"],` +
				`"ports":[{"port":10259,"name":"https","protocol":"TCP"}]},"status":{"readyReplicas":2}}`, true},
		{"a label changed", `{"metadata":{"name":"a","labels":{"x":"2"}},"spec":{"replicas":2,"args":["--v=2","--config=/c"],"ports":[{"port":10259,"name":"https"}]}}`, false},
		{"a label removed", `{"metadata":{"name":"a"},"spec":{"replicas":2,"args":["--v=2","--config=/c"],"ports":[{"port":10259,"name":"https"}]}}`, false},
		{"a number changed", `{"metadata":{"name":"a","labels":{"x":"1"}},"spec":{"replicas":3,"args":["--v=2","--config=/c"],"ports":[{"port":10259,"name":"https"}]}}`, false},
		{"a list item more", `{"metadata":{"name":"a","labels":{"x":"1"}},"spec":{"replicas":2,"args":["--v=2","--config=/c","--x"],"ports":[{"port":10259,"name":"https"}]}}`, false},
		{"list items swapped", `{"metadata":{"name":"a","labels":{"x":"1"}},"spec":{"replicas":2,"args":["--config=/c","--v=2"],"ports":[{"port":10259,"name":"https"}]}}`, false},
		{"a field of a list item changed", `{"metadata":{"name":"a","labels":{"x":"1"}},"spec":{"replicas":2,"args":["--v=2","--config=/c"],"ports":[{"port":10260,"name":"https"}]}}`, false},
		{"a map where a string was", `{"metadata":{"name":"a","labels":{"x":{"y":"1"}}},"spec":{"replicas":2,"args":["--v=2","--config=/c"],"ports":[{"port":10259,"name":"https"}]}}`, false},
		{"missing spec", `{"metadata":{"name":"a","labels":{"x":"1"}}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Holds(object(t, tt.live), object(t, desired)); got != tt.want {
				t.Errorf("Holds = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestHoldsEmptyAndNull(t *testing.T) {
	tests := []struct {
		name, live, desired string
		want                bool
	}{
		{"empty map matches a missing field", `{"spec":{}}`, `{"spec":{"selector":{}}}`, true},
		{"empty list matches a missing field", `{"spec":{}}`, `{"spec":{"items":[]}}`, true},
		{"null matches a value", `{"metadata":{"creationTimestamp":"2026-01-01T00:00:00Z"}}`, `{"metadata":{"creationTimestamp":null}}`, true},
		{"empty map does not match a string", `{"spec":{"selector":"x"}}`, `{"spec":{"selector":{}}}`, false},
		{"int64 and float64 of one value", `{"spec":{"n":3}}`, `{"spec":{"n":3.0}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Holds(object(t, tt.live), object(t, tt.desired)); got != tt.want {
				t.Errorf("Holds = %t, want %t", got, tt.want)
			}
		})
	}
	// Typed numbers, as runtime.DefaultUnstructuredConverter makes them.
	if !Holds(map[string]any{"n": int64(3)}, map[string]any{"n": float64(3)}) {
		t.Error("int64 3 does not hold float64 3")
	}
}

func TestUnchanged(t *testing.T) {
	desired := object(t, `{"metadata":{"name":"a","annotations":{"keep":"1"}},"data":{"k":"v"}}`)
	hash, err := Hash(desired)
	if err != nil {
		t.Fatal(err)
	}
	withHash := object(t, `{"metadata":{"name":"a","annotations":{"keep":"1","`+AppliedHashAnnotation+`":"`+hash+`"}},"data":{"k":"v"}}`)
	if again, _ := Hash(withHash); again != hash {
		t.Fatalf("the hash changes once the object carries it: %s, then %s", hash, again)
	}
	tests := []struct {
		name string
		live string
		want bool
	}{
		{"applied and untouched", `{"metadata":{"name":"a","annotations":{"keep":"1","` + AppliedHashAnnotation + `":"` + hash + `"}},"data":{"k":"v"}}`, true},
		// A field the operator stopped setting is still in the cluster: only the hash tells.
		{"applied from other content", `{"metadata":{"name":"a","annotations":{"keep":"1","` + AppliedHashAnnotation + `":"0123"}},"data":{"k":"v","old":"x"}}`, false},
		{"never applied with a hash", `{"metadata":{"name":"a","annotations":{"keep":"1"}},"data":{"k":"v"}}`, false},
		{"edited by someone else", `{"metadata":{"name":"a","annotations":{"keep":"1","` + AppliedHashAnnotation + `":"` + hash + `"}},"data":{"k":"edited"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Unchanged(object(t, tt.live), withHash); got != tt.want {
				t.Errorf("Unchanged = %t, want %t", got, tt.want)
			}
		})
	}
	if Unchanged(withHash, desired) {
		t.Error("content without a hash counts as unchanged")
	}
}

func TestHashDiffers(t *testing.T) {
	a, _ := Hash(object(t, `{"data":{"k":"v"}}`))
	b, _ := Hash(object(t, `{"data":{"k":"w"}}`))
	if a == b {
		t.Error("different content, same hash")
	}
}

// TestHashLeavesOutTheResourceVersion: a token Secret is applied with the resourceVersion
// it was read at as a precondition; were it hashed, every apply would change the hash,
// and each apply's watch event wake a reconcile that applies again.
func TestHashLeavesOutTheResourceVersion(t *testing.T) {
	a, _ := Hash(object(t, `{"metadata":{"name":"a","resourceVersion":"41"},"data":{"k":"v"}}`))
	b, _ := Hash(object(t, `{"metadata":{"name":"a","resourceVersion":"42"},"data":{"k":"v"}}`))
	if a != b {
		t.Error("the hash changes with the resourceVersion")
	}
	desired := object(t, `{"metadata":{"name":"a","resourceVersion":"42"},"data":{"k":"v"}}`)
	hash, _ := Hash(desired)
	desired["metadata"].(map[string]any)["annotations"] = map[string]any{AppliedHashAnnotation: hash}
	live := object(t, `{"metadata":{"name":"a","resourceVersion":"42","annotations":{"`+AppliedHashAnnotation+`":"`+hash+`"}},"data":{"k":"v"}}`)
	if !Unchanged(live, desired) {
		t.Error("a Secret applied at its own resourceVersion counts as changed")
	}
}
