package readonly_test

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/readonly"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/readonly/readonlytest"
)

// TestWrapHidesTheWriter checks that a client.Client, wrapped, cannot be asserted back
// into a writer.
func TestWrapHidesTheWriter(t *testing.T) {
	full := fake.NewClientBuilder().Build()
	if _, isWriter := client.Reader(full).(client.Writer); !isWriter {
		t.Fatal("the fake client should be a writer, for this test to mean anything")
	}
	if _, isWriter := readonly.Wrap(full).(client.Writer); isWriter {
		t.Error("the wrapped client is still a writer")
	}
	if readonly.Wrap(nil) != nil {
		t.Error("a nil reader wraps to a non-nil one")
	}
}

// TestThisPackageCannotWrite holds the wrapper to the proof it serves.
func TestThisPackageCannotWrite(t *testing.T) {
	readonlytest.AssertCannotWrite(t, "github.com/secondary-scheduler/secondary-scheduler-operator/internal/readonly")
}
