package refusal

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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

func TestJoin(t *testing.T) {
	caMissing := New(v1.ReasonCABundleNotFound, "ConfigMap ca is missing.")
	roleRefused := New(v1.ReasonClusterRoleNotAllowed, "ClusterRole r is not allowed.")
	unpunctuated := New(v1.ReasonTokenKeyMissing, "Secret s has no key token; put it there")
	classMissing := New(v1.ReasonPriorityClassNotFound, "PriorityClass p is missing.")
	transient := errors.New("connection refused")
	tests := []struct {
		name        string
		errs        []error
		wantErr     error // when the result is not a refusal
		wantReasons []v1.ConditionReason
		wantMessage string
	}{
		{name: "nothing", errs: []error{nil, nil}},
		{name: "one refusal is itself", errs: []error{nil, caMissing},
			wantReasons: []v1.ConditionReason{v1.ReasonCABundleNotFound}, wantMessage: "ConfigMap ca is missing."},
		{name: "a transient error wins, so that it is retried", errs: []error{caMissing, transient, roleRefused}, wantErr: transient},
		{name: "two refusals: the first's reason, both messages", errs: []error{caMissing, fmt.Errorf("token: %w", roleRefused)},
			wantReasons: []v1.ConditionReason{v1.ReasonCABundleNotFound, v1.ReasonClusterRoleNotAllowed},
			wantMessage: "ConfigMap ca is missing. Also to fix: (1) ClusterRoleNotAllowed: ClusterRole r is not allowed."},
		{name: "a message without a full stop gets one before the others", errs: []error{unpunctuated, roleRefused},
			wantReasons: []v1.ConditionReason{v1.ReasonTokenKeyMissing, v1.ReasonClusterRoleNotAllowed},
			wantMessage: "Secret s has no key token; put it there. Also to fix: (1) ClusterRoleNotAllowed: ClusterRole r is not allowed."},
		{name: "a joined refusal joined again names each once", errs: []error{Join(caMissing, roleRefused), classMissing},
			wantReasons: []v1.ConditionReason{v1.ReasonCABundleNotFound, v1.ReasonClusterRoleNotAllowed, v1.ReasonPriorityClassNotFound},
			wantMessage: "ConfigMap ca is missing. Also to fix, 2 more: (1) ClusterRoleNotAllowed: ClusterRole r is not allowed. " +
				"(2) PriorityClassNotFound: PriorityClass p is missing."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Join(tt.errs...)
			if tt.wantErr != nil || tt.wantReasons == nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Join = %v, want %v", err, tt.wantErr)
				}
				return
			}
			refused, ok := As(err)
			if !ok {
				t.Fatalf("Join = %v, want a refusal", err)
			}
			if diff := cmp.Diff(tt.wantReasons, Reasons(err)); diff != "" {
				t.Errorf("Reasons (-want +got):\n%s", diff)
			}
			if refused.Message != tt.wantMessage {
				t.Errorf("message\n got %q\nwant %q", refused.Message, tt.wantMessage)
			}
		})
	}
}
