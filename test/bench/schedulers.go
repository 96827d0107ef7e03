package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// binPacking is the SecondaryScheduler every benchmark creates: the README's example.
func binPacking(namespace, name string) *v1.SecondaryScheduler {
	return &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{
			Type:       v1.BinPackingProfile,
			BinPacking: &v1.BinPackingArgs{ResourceWeights: map[corev1.ResourceName]int64{corev1.ResourceCPU: 1, corev1.ResourceMemory: 1}},
		}},
	}
}

// createSchedulers creates SecondarySchedulers named prefix-0..count-1 in namespace, with
// parallel requests in flight, and returns when the first request was sent.
func (e *env) createSchedulers(ctx context.Context, namespace, prefix string, count, parallel int) (time.Time, error) {
	names := make(chan string, count)
	for i := range count {
		names <- fmt.Sprintf("%s-%03d", prefix, i)
	}
	close(names)
	started := time.Now()
	return started, forEachParallel(ctx, parallel, names, func(name string) error {
		return e.client.Create(ctx, binPacking(namespace, name))
	})
}

// forEachParallel calls do for each item, parallel at a time, and returns the first error.
func forEachParallel[T any](ctx context.Context, parallel int, items <-chan T, do func(T) error) error {
	var (
		wait     sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range parallel {
		wait.Go(func() {
			for item := range items {
				if ctx.Err() != nil {
					continue
				}
				if err := do(item); err != nil {
					mu.Lock()
					firstErr = firstError(firstErr, err)
					mu.Unlock()
				}
			}
		})
	}
	wait.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return firstErr
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// waitAllAvailable waits until every SecondaryScheduler of namespace (count of them) is
// Available with its current generation observed.
func (e *env) waitAllAvailable(ctx context.Context, namespace string, count int, timeout time.Duration) error {
	return e.tracker.waitFor(ctx, timeout, fmt.Sprintf("%d SecondarySchedulers of %s Available", count, namespace),
		func(owners map[ownerKey]*ownerState) bool {
			available := 0
			for key, state := range owners {
				if key.namespace == namespace && state.exists && state.current {
					available++
				}
			}
			return available >= count
		})
}

// waitNamespaceGone waits until no SecondaryScheduler of namespace, and no object
// labelled as one's, exists.
func (e *env) waitNamespaceGone(ctx context.Context, namespace string, timeout time.Duration) error {
	return e.tracker.waitFor(ctx, timeout, "every SecondaryScheduler of "+namespace+" and its objects gone",
		func(owners map[ownerKey]*ownerState) bool {
			for key, state := range owners {
				if key.namespace == namespace && !state.gone() {
					return false
				}
			}
			return true
		})
}

// clean deletes every SecondaryScheduler of namespace and waits until they and their
// objects are gone, so that the next benchmark starts from an empty namespace; after
// the last run, it leaves them to the cluster's deletion.
func (e *env) clean(ctx context.Context, namespace string) error {
	if e.lastRun {
		return nil
	}
	return e.deleteSchedulers(ctx, namespace)
}

// deleteSchedulers deletes every SecondaryScheduler of namespace and waits until they
// and their objects are gone.
func (e *env) deleteSchedulers(ctx context.Context, namespace string) error {
	err := e.client.DeleteAllOf(ctx, &v1.SecondaryScheduler{}, client.InNamespace(namespace))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the SecondarySchedulers of %s: %w", namespace, err)
	}
	if err := e.waitNamespaceGone(ctx, namespace, 10*time.Minute); err != nil {
		return err
	}
	e.tracker.forget(namespace)
	return nil
}
