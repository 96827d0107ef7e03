package ownership

import (
	"testing"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/readonly/readonlytest"
)

// TestOwnershipCheckCannotWrite proves, over the package's own types and code, that the
// ownership check can reach no writer (internal/readonly/readonlytest): it runs before
// the operator has proven that any object is its own.
func TestOwnershipCheckCannotWrite(t *testing.T) {
	readonlytest.AssertCannotWrite(t, ".")
}
