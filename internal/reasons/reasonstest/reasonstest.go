// Package reasonstest checks the findings of the stages in tests.
package reasonstest

import (
	"strings"
	"testing"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons"
)

// ExpectFinding checks that finding has reason (none when reason is empty) and that its
// message says each of says; it reports whether there is a finding to check further.
func ExpectFinding(t *testing.T, finding *reasons.Finding, reason v1.ConditionReason, says []string) bool {
	t.Helper()
	if reason == "" {
		if finding != nil {
			t.Fatalf("want no problem, got %s: %s", finding.Reason, finding.Message)
		}
		return false
	}
	if finding == nil || finding.Reason != reason {
		t.Fatalf("want %s, got %+v", reason, finding)
	}
	for _, part := range says {
		if !strings.Contains(finding.Message, part) {
			t.Errorf("message %q does not say %q", finding.Message, part)
		}
	}
	return true
}
