package controllers

import (
	"context"
	"time"

	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/ownership"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/tenancy"
)

// writer is the write side of a reconcile: but for status (internal/statusapply, the last
// stage) and Events, the reconciler changes the cluster through its methods alone, each a
// named step:
//
//   - apply (apply.go): the scheduler's objects, then the pruning of those it no longer has;
//   - credentials and keepToken (credentials.go): the metrics token, requested and kept;
//   - stopScheduler and deleteChildren (stop.go, children.go): a scheduler's objects
//     deleted, only those provably its own;
//   - pruneRecordingRules (prunerules.go): its PrometheusRules no longer wanted;
//   - addFinalizer and removeFinalizer (finalizer.go): the SecondaryScheduler's finalizer.
//
// The read stages are made from readers alone and never see it (readStages,
// TestReadStagesGetNoWriter). It is a type of this package rather than a package of its
// own because the kinds of children (children.go) are shared with the cache's scope, the
// watches and the OrphanSweeper.
type writer struct {
	// Client writes, and reads the scheduler's objects from the cache.
	client.Client
	// APIReader reads what the cache does not hold, or may not hold yet: objects outside
	// a SecondaryScheduler's namespace, the metrics token's Secret and ServiceAccount, the
	// managed fields of an object someone else edited.
	APIReader client.Reader
	// Recorder tells in Events what an apply wrote back of someone else's edits.
	Recorder events.EventRecorder
	// Tenancy says in which namespaces the operator may read (deleteChildren).
	Tenancy tenancy.Policy
	// owned proves, when a create answers AlreadyExists, whose the object is: the
	// ownership check's reading half (internal/ownership, readers only).
	owned *ownership.Checker
	// now is the reconciler's time, for metrics tokens.
	now func() time.Time
}

// addFinalizer adds the operator's finalizer to cr (finalizer.go).
func (r *writer) addFinalizer(ctx context.Context, cr *v1.SecondaryScheduler) error {
	return addFinalizer(ctx, r.Client, cr, Finalizer)
}

// removeFinalizer removes the operator's finalizer from cr (finalizer.go).
func (r *writer) removeFinalizer(ctx context.Context, cr *v1.SecondaryScheduler) error {
	return removeFinalizer(ctx, r.Client, cr, Finalizer)
}
