package refusal

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

func TestAsFindsARefusalThroughWrapping(t *testing.T) {
	refused := New(v1.ReasonInvalidSpec, "spec.%s is wrong", "nodePool")
	for name, err := range map[string]error{
		"bare":    refused,
		"wrapped": fmt.Errorf("gather: %w", refused),
		"joined":  errors.Join(errors.New("other"), refused),
	} {
		got, ok := As(err)
		if !ok || got != refused || !Is(err) {
			t.Errorf("%s: As(%v) = %v, %t; want the refusal", name, err, got, ok)
		}
	}
	for name, err := range map[string]error{"nil": nil, "transient": errors.New("connection refused")} {
		if _, ok := As(err); ok || Is(err) {
			t.Errorf("%s: %v is no refusal", name, err)
		}
	}
}

func TestNewBoundsTheMessage(t *testing.T) {
	long := New(v1.ReasonInvalidConfig, "%s", strings.Repeat("é", MaxMessageBytes))
	if len(long.Message) > MaxMessageBytes+len(" ... (truncated)") || !strings.HasSuffix(long.Message, "(truncated)") {
		t.Errorf("message of %d bytes not cut: %q...", len(long.Message), long.Message[:20])
	}
	if !strings.HasPrefix(long.Error(), "InvalidConfig: ") {
		t.Errorf("Error() = %q, want the reason first", long.Error()[:30])
	}
	if short := New(v1.ReasonInvalidSpec, "as %s", "is"); short.Message != "as is" {
		t.Errorf("short message changed: %q", short.Message)
	}
}
