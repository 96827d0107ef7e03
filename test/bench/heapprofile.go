package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/pprof/profile"
)

// liveHeap is what the operator's heap holds once garbage is collected.
type liveHeap struct {
	// bytes and objects are live after a forced collection.
	bytes, objects int64
	// path is the saved profile (go tool pprof -sample_index=inuse_space PATH).
	path string
}

// readLiveHeap fetches the operator's heap profile after a forced garbage collection
// (?gc=1) and saves it in the output directory under name. Heap in use as the runtime
// reports it also counts garbage not yet collected, so it rises with the rate of
// allocation; this is what the operator keeps.
func (e *env) readLiveHeap(ctx context.Context, name string) (liveHeap, error) {
	if e.pprofURL == "" {
		return liveHeap{}, fmt.Errorf("the operator binary %s serves no profiles", e.operatorBinary)
	}
	body, err := getOperator(ctx, e.pprofURL+"heap?gc=1", "the operator's heap profile")
	if err != nil {
		return liveHeap{}, err
	}
	heap := liveHeap{path: filepath.Join(e.outputDir, name+".heap.pb.gz")}
	if err := os.WriteFile(heap.path, body, 0o644); err != nil {
		return liveHeap{}, err
	}
	parsed, err := profile.ParseData(body)
	if err != nil {
		return liveHeap{}, fmt.Errorf("parse the operator's heap profile: %w", err)
	}
	heap.objects, heap.bytes, err = inUse(parsed)
	return heap, err
}

// liveHeapIfServed is readLiveHeap, or a zero liveHeap without a path for a baseline
// binary that serves no profiles.
func (e *env) liveHeapIfServed(ctx context.Context, name string) (liveHeap, error) {
	if e.pprofURL == "" {
		return liveHeap{}, nil
	}
	return e.readLiveHeap(ctx, name)
}

// inUse sums a heap profile's in-use objects and bytes.
func inUse(heap *profile.Profile) (objects, bytes int64, err error) {
	objectsIndex, bytesIndex := -1, -1
	for i, sampleType := range heap.SampleType {
		switch sampleType.Type {
		case "inuse_objects":
			objectsIndex = i
		case "inuse_space":
			bytesIndex = i
		}
	}
	if objectsIndex < 0 || bytesIndex < 0 {
		return 0, 0, fmt.Errorf("the heap profile has no inuse_objects and inuse_space")
	}
	for _, sample := range heap.Sample {
		objects += sample.Value[objectsIndex]
		bytes += sample.Value[bytesIndex]
	}
	return objects, bytes, nil
}
