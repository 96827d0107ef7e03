package render

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestRenewTimeIsAtFourFifthsOfTheLifetime(t *testing.T) {
	issued := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		lifetime time.Duration
		want     time.Duration
	}{
		{"one day", 24 * time.Hour, 19*time.Hour + 12*time.Minute},
		{"ten minutes, the shortest the API grants", 10 * time.Minute, 8 * time.Minute},
		{"an hour capped by the API server", time.Hour, 48 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RenewTime(issued, issued.Add(tt.lifetime)).Sub(issued); got != tt.want {
				t.Errorf("renewal %v after issue, want %v", got, tt.want)
			}
		})
	}
}

// The token Secret the renderer writes is the one the operator reads back to decide
// whether the token is still good.
func TestBoundTokenSurvivesTheSecret(t *testing.T) {
	token := BoundToken{Token: "abc.def.ghi", ServiceAccountUID: "uid-1",
		ExpiresAt: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), RenewAt: time.Date(2026, 11, 22, 19, 12, 0, 0, time.UTC)}
	node, err := metricsTokenSecret(secondaryScheduler("tokened", nil), token)
	if err != nil {
		t.Fatal(err)
	}
	object, err := toUnstructured(node)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, secret); err != nil {
		t.Fatal(err)
	}
	got, ok := ParseBoundToken(secret)
	if !ok {
		t.Fatalf("ParseBoundToken refused the rendered Secret %v", secret.Annotations)
	}
	if diff := cmp.Diff(&token, got); diff != "" {
		t.Errorf("token read back differs (-rendered +read):\n%s", diff)
	}

	for name, mutate := range map[string]func(*corev1.Secret){
		"no token":             func(s *corev1.Secret) { delete(s.Data, "token") },
		"no ServiceAccount":    func(s *corev1.Secret) { delete(s.Annotations, TokenServiceAccountUIDAnnotation) },
		"unreadable renewal":   func(s *corev1.Secret) { s.Annotations[TokenRenewAtAnnotation] = "tomorrow" },
		"no expiry":            func(s *corev1.Secret) { delete(s.Annotations, TokenExpiresAtAnnotation) },
		"someone else's empty": func(s *corev1.Secret) { *s = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x"}} },
	} {
		t.Run(name, func(t *testing.T) {
			broken := secret.DeepCopy()
			mutate(broken)
			if _, ok := ParseBoundToken(broken); ok {
				t.Errorf("ParseBoundToken accepted a Secret with %s", name)
			}
		})
	}
}

// A token read back from its Secret is applied with the Secret's resourceVersion as a
// precondition; a new token is not.
func TestKeptTokenIsAppliedWithPrecondition(t *testing.T) {
	for _, tt := range []struct{ name, resourceVersion string }{{"kept", "4711"}, {"new", ""}} {
		t.Run(tt.name, func(t *testing.T) {
			node, err := metricsTokenSecret(secondaryScheduler("tokened", nil), BoundToken{Token: "t", ResourceVersion: tt.resourceVersion})
			if err != nil {
				t.Fatal(err)
			}
			object, err := toUnstructured(node)
			if err != nil {
				t.Fatal(err)
			}
			if got := object.GetResourceVersion(); got != tt.resourceVersion {
				t.Errorf("resourceVersion %q, want %q", got, tt.resourceVersion)
			}
		})
	}
}
