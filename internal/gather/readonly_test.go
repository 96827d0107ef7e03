package gather

import (
	"testing"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/readonly/readonlytest"
)

// TestGatheringCannotWrite proves, over the package's own types and code, that the
// gather stage can reach no writer (internal/readonly/readonlytest).
func TestGatheringCannotWrite(t *testing.T) {
	readonlytest.AssertCannotWrite(t, ".")
}
