package observe

import (
	"testing"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/readonly/readonlytest"
)

// TestObservingCannotWrite proves, over the package's own types and code, that observing
// can reach no writer (internal/readonly/readonlytest).
func TestObservingCannotWrite(t *testing.T) {
	readonlytest.AssertCannotWrite(t, ".")
}
