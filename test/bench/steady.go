package main

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

const (
	// steadyNamespace holds the schedulers that the idle and memory benchmarks measure an
	// operator at rest with.
	steadyNamespace = "bench-steady"
	steadyCount     = 100
)

// steadySchedulers makes sure that steadyCount BinPacking SecondarySchedulers exist in
// steadyNamespace, all Available, creating those that do not. They stay for the next
// benchmark that uses them, which is why those benchmarks come last: the cluster's
// deletion removes them.
func (e *env) steadySchedulers(ctx context.Context) error {
	if err := e.usePodrunner(ctx, true); err != nil {
		return err
	}
	names := make(chan string, steadyCount)
	for i := range steadyCount {
		names <- fmt.Sprintf("steady-%03d", i)
	}
	close(names)
	err := forEachParallel(ctx, 8, names, func(name string) error {
		if err := e.client.Create(ctx, binPacking(steadyNamespace, name)); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("create the steady schedulers: %w", err)
	}
	return e.waitAllAvailable(ctx, steadyNamespace, steadyCount, 5*time.Minute)
}
