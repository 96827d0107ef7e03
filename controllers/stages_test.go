package controllers

import (
	"maps"
	"slices"
	"testing"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/readonly/readonlytest"
)

// TestReadStagesGetNoWriter proves, by type, that the read stages of a reconcile are given
// no writer: neither what holds them (readStages) nor what makes them (newReadStages, whose
// parameters are all they are made from) reaches one; each stage's package proves the same
// of itself (TestGatheringCannotWrite, TestOwnershipCheckCannotWrite,
// TestObservingCannotWrite). And the reconciler holds a client that can write only in its
// writer and its status stage: a new field that reaches a writer fails here until it is
// named below, with the reason it may.
func TestReadStagesGetNoWriter(t *testing.T) {
	readonlytest.AssertDeclarationsCannotWrite(t, ".", "readStages", "newReadStages")

	mayWrite := map[string]string{
		"write":      "every write to a scheduler's objects, its credentials and the finalizer (writer.go)",
		"status":     "the last stage, which writes status (internal/statusapply)",
		"recorder":   "Events",
		"references": "internal/refwatch's REST client, with which it only watches",
		"admission":  "admission.Policies.Ensure, which AdmissionParametersReconciler calls with a writer of its own",
		"routing":    "RoutingFacts.Policy, an admission.Policies: likewise",
	}
	writing := readonlytest.WritingFields(t, ".", "SecondarySchedulerReconciler")
	for field, path := range writing {
		if _, named := mayWrite[field]; !named {
			t.Errorf("field %s of the reconciler reaches a writer (%s): only its writer may write a scheduler's objects", field, path)
		}
	}
	for _, field := range slices.Sorted(maps.Keys(mayWrite)) {
		if _, found := writing[field]; !found {
			t.Errorf("field %s of the reconciler reaches no writer any more: drop it from mayWrite", field)
		}
	}
}
