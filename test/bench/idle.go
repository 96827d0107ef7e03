package main

import (
	"context"
	"fmt"
	"time"
)

// idleWindow is how long nothing changes while the operator's requests are counted.
const idleWindow = time.Minute

// runIdle runs schedulers that nobody changes and counts what the operator asks of the
// API server meanwhile.
func runIdle(ctx context.Context, e *env) (*section, error) {
	s := &section{
		name:  "idle",
		title: fmt.Sprintf("%d schedulers, %v without change", steadyCount, idleWindow),
		what: fmt.Sprintf("Runs %d BinPacking SecondarySchedulers (pods Ready without a process, podrunner --fake-ready), waits until all "+
			"are Available and the operator is at rest (nothing queued, no reconcile for %v), then changes nothing for %v.",
			steadyCount, quietFor, idleWindow),
		how: "The operator's requests in that minute: its client metrics (rest_client_requests_total) scraped before and after, " +
			"and its requests in the API server's audit log, which tells reads (get, list) from watches. A watch counts when it starts: " +
			"client-go ends each watch after 5 to 10 minutes and starts another, and the operator keeps a watch per kind and allowed namespace, " +
			"so watches start even when nothing changes.",
	}
	if err := e.steadySchedulers(ctx); err != nil {
		return s, err
	}
	if err := e.waitQuiet(ctx, 5*time.Minute); err != nil {
		return s, err
	}
	before, err := e.sampleOperator(ctx)
	if err != nil {
		return s, err
	}
	if err := sleep(ctx, idleWindow); err != nil {
		return s, err
	}
	after, err := e.sampleOperator(ctx)
	if err != nil {
		return s, err
	}
	idle, err := e.activityBetween(before, after)
	if err != nil {
		return s, err
	}
	perMinute := func(count float64) float64 { return count / idle.duration.Minutes() }
	s.rows = []row{
		{figure: "writes per minute (POST, PUT, PATCH, DELETE)", values: []float64{perMinute(idle.writes())}, unit: unitCount, target: zero(), before: "0"},
		{figure: "reads per minute besides watches (get, list; audit log)", values: []float64{perMinute(float64(idle.auditedReads()))}, unit: unitCount, target: zero()},
		{figure: "requests per minute, all (watches included)", values: []float64{perMinute(total(idle.requests))}, unit: unitCount, before: "0"},
		{figure: "reconciles per minute", values: []float64{perMinute(total(idle.reconciles))}, unit: unitCount},
		{figure: "operator CPU per minute", values: []float64{perMinute(idle.cpuSeconds)}, unit: unitCPUSeconds},
	}
	s.details = idle.requestDetails("Idle minute")
	return s, nil
}

// sleep waits for d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
