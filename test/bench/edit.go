package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

const (
	editNamespace = "bench-edit"
	editCount     = 50
)

// runEdit edits a running scheduler's configuration again and again and measures from
// each edit to the new pod template on its Deployment.
func runEdit(ctx context.Context, e *env) (*section, error) {
	if err := e.usePodrunner(ctx, true); err != nil {
		return nil, err
	}
	s := &section{
		name:  "edit",
		title: fmt.Sprintf("%d configuration edits", editCount),
		what: fmt.Sprintf("Edits a running BinPacking scheduler's spec.profile.binPacking.resourceWeights %d times, each edit once the one before "+
			"has rolled out (Available again with the new generation observed). Its pods are Ready without a process (podrunner --fake-ready), "+
			"so a rollout takes as long as the operator and the Deployment controller take.", editCount),
		how: "From just before each update request to the watch event in which the Deployment's pod template carried a new " +
			"configuration hash (annotation operator.secondary-scheduler.io/config-hash), and to the watch event in which " +
			"the SecondaryScheduler was Available again for its new generation.",
	}
	key := ownerKey{editNamespace, "edited"}
	if err := e.client.Create(ctx, binPacking(key.namespace, key.name)); err != nil {
		return s, err
	}
	cleaned := false
	defer func() {
		if !cleaned {
			// A failed run leaves nothing behind for the next.
			_ = e.clean(ctx, editNamespace)
		}
	}()
	availableForGeneration := func(owners map[ownerKey]*ownerState) bool {
		state, ok := owners[key]
		return ok && state.current && state.configHash != ""
	}
	if err := e.tracker.waitFor(ctx, 2*time.Minute, key.String()+" Available", availableForGeneration); err != nil {
		return s, err
	}
	var toTemplate, toAvailable []time.Duration
	for i := range editCount {
		before := e.tracker.state(key)
		cr := &v1.SecondaryScheduler{}
		if err := e.client.Get(ctx, client.ObjectKey{Namespace: key.namespace, Name: key.name}, cr); err != nil {
			return s, err
		}
		// A merge patch of the spec, without the resource version: the operator writes
		// status while a rollout goes on, and an update of the whole object could lose to
		// any number of those in a row.
		unedited := cr.DeepCopy()
		// Weights 2..51 for cpu: each edit a configuration not seen before.
		cr.Spec.Profile.BinPacking.ResourceWeights = map[corev1.ResourceName]int64{corev1.ResourceCPU: int64(i + 2), corev1.ResourceMemory: 1}
		started := time.Now()
		if err := e.client.Patch(ctx, cr, client.MergeFrom(unedited)); err != nil {
			return s, fmt.Errorf("edit %d: %w", i, err)
		}
		generation := cr.Generation
		if err := e.tracker.waitFor(ctx, time.Minute, fmt.Sprintf("edit %d applied", i), func(owners map[ownerKey]*ownerState) bool {
			state, ok := owners[key]
			return ok && state.configHash != before.configHash
		}); err != nil {
			return s, err
		}
		templateAt := e.tracker.state(key).configHashAt
		if err := e.tracker.waitFor(ctx, 2*time.Minute, fmt.Sprintf("edit %d rolled out", i), func(owners map[ownerKey]*ownerState) bool {
			return availableForGeneration(owners) && owners[key].observed >= generation
		}); err != nil {
			return s, err
		}
		toTemplate = append(toTemplate, templateAt.Sub(started))
		toAvailable = append(toAvailable, e.tracker.state(key).currentAt.Sub(started))
	}
	template, available := milliseconds(toTemplate), milliseconds(toAvailable)
	s.rows = []row{
		{figure: "edit → new pod template, p50", values: []float64{percentile(template, 50)}, unit: unitMilliseconds, before: "149 ms"},
		{figure: "edit → new pod template, p99", values: []float64{percentile(template, 99)}, unit: unitMilliseconds, target: below(1000), before: "419 ms"},
		{figure: "edit → Available again, p50", values: []float64{percentile(available, 50)}, unit: unitMilliseconds},
		{figure: "edit → Available again, p99", values: []float64{percentile(available, 99)}, unit: unitMilliseconds},
	}
	cleaned = true
	return s, e.clean(ctx, editNamespace)
}
