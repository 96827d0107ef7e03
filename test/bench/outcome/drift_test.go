package outcome

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The drift run places the outcome's workload: the same pods, some of them drifting, drawn
// from the seed alone.
func TestWithDriftKeepsTheWorkload(t *testing.T) {
	base := Generate(24, DefaultShape)
	drifted, again := WithDrift(base, 24, DefaultDrift), WithDrift(base, 24, DefaultDrift)
	if diff := cmp.Diff(drifted, again); diff != "" {
		t.Fatalf("the same seed drew another drift (-first +again):\n%s", diff)
	}
	count := 0
	for i, pod := range drifted {
		withoutDrift := pod
		withoutDrift.DriftAfter, withoutDrift.DriftFactor = 0, 0
		if diff := cmp.Diff(base[i], withoutDrift); diff != "" {
			t.Fatalf("pod %s changed beyond its drift (-base +drifted):\n%s", pod.Name, diff)
		}
		if pod.DriftAfter > 0 {
			count++
			if pod.DriftAfter != DefaultDrift.After || pod.DriftFactor != DefaultDrift.Factor {
				t.Errorf("pod %s drifts by %v after %v, want %v after %v", pod.Name, pod.DriftFactor, pod.DriftAfter, DefaultDrift.Factor, DefaultDrift.After)
			}
		}
	}
	if share := float64(count) / float64(len(drifted)); math.Abs(share-DefaultDrift.Fraction) > 0.07 {
		t.Errorf("%d of %d pods drift (%.2f), want about %.2f", count, len(drifted), share, DefaultDrift.Fraction)
	}
}

// A drifting pod uses its own CPU until DriftAfter past its arrival, then Factor times it,
// bursts included; the ideal counts its use at the end.
func TestDriftRaisesUseAfterPlacement(t *testing.T) {
	pod := Pod{Name: "a", Arrival: time.Minute, CPUUseMillis: 300, DriftAfter: 2 * time.Minute, DriftFactor: 4}
	for _, tt := range []struct {
		at   time.Duration
		want int64
	}{{at: time.Minute, want: 300}, {at: 3*time.Minute - time.Second, want: 300}, {at: 3 * time.Minute, want: 1200}, {at: time.Hour, want: 1200}} {
		if got := pod.CPUAt(tt.at); got != tt.want {
			t.Errorf("CPUAt(%v) = %d, want %d", tt.at, got, tt.want)
		}
	}
	bursty := Pod{Class: Bursty, CPUUseMillis: 100, BurstCPUMillis: 500, BurstPeriod: 4 * time.Minute, BurstLength: time.Minute, BurstPhase: 3*time.Minute + 30*time.Second, DriftAfter: time.Minute, DriftFactor: 2}
	if got := bursty.CPUAt(time.Minute); got != 1000 {
		t.Errorf("a drifted bursty pod in its burst uses %d, want 1000", got)
	}
	if got := IdealNodes([]Pod{pod}, time.Hour, NodeSize{CPUMillis: 1000}, 0.4); got != 3 {
		t.Errorf("the ideal counts the drifted use: %d nodes for 1200m at 40 %% of 1000m, want 3", got)
	}
}

// A ReplicaSet's replacement may be bound before the pod it replaces is gone: the load
// counts each pod object once, and the workload's pod's use on each node it runs on.
func TestLoadCountsPodObjects(t *testing.T) {
	load := NewLoad([]Pod{{Name: "a", CPUUseMillis: 1000}}, map[string][]string{"one": {"n1", "n2"}}, NodeSize{CPUMillis: 10000})
	load.Bind("one", "a-x1", "a", "n1")
	load.Bind("one", "a-x2", "a", "n2")
	load.Unbind("one", "a-x1")
	usage, pods := load.Usage("one", 0)
	if usage["n1"].CPU != 0 || usage["n2"].CPU != 0.1 || pods["n2"] != 1 || pods["n1"] != 0 {
		t.Errorf("usage %v, pods %v: want the replacement alone on n2", usage, pods)
	}
	// A node is at most fully used, however much its pods want.
	load = NewLoad([]Pod{{Name: "a", CPUUseMillis: 3000, MemoryUseBytes: 3 << 30}}, map[string][]string{"one": {"n1"}}, NodeSize{CPUMillis: 2000, MemoryBytes: 2 << 30})
	load.Bind("one", "a", "a", "n1")
	if usage, _ := load.Usage("one", 0); usage["n1"] != (Usage{CPU: 1, Memory: 1}) {
		t.Errorf("a node whose pods want 150 %% of it uses %+v, want all of it", usage["n1"])
	}
}

// An eviction is counted once per pod object, from the condition the API server sets, and
// no other deletion is.
func TestEvictionsAreCountedOnce(t *testing.T) {
	arm := Arm{Key: "one"}
	state := newRunState([]Arm{arm}, NewLoad([]Pod{{Name: "a"}}, map[string][]string{"one": {"n1"}}, DefaultNodeSize), true)
	state.setStart(time.Now().Add(-20 * time.Minute))
	pod := func(name string, evicted bool, deleting bool) *corev1.Pod {
		object := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: arm.Namespace(), Name: name, Labels: map[string]string{podLabel: "a"}},
			Spec: corev1.PodSpec{NodeName: "n1"}}
		if evicted {
			object.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: evictionReason}}
		}
		if deleting {
			object.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		}
		return object
	}
	state.observe(pod("a-x1", false, false), false)
	state.observe(pod("a-x1", true, false), false)
	state.observe(pod("a-x1", true, true), false)
	state.observe(pod("a-x1", true, true), true)
	state.observe(pod("a-x2", false, false), false)
	state.observe(pod("a-x2", false, true), true)
	record := state.records["one"]
	if got := len(record.Evicted["a"]); got != 1 {
		t.Fatalf("%d evictions of pod a, want 1: %v", got, record.Evicted)
	}
	if eviction := record.Evicted["a"][0]; eviction.Node != "n1" || eviction.At < 20*time.Minute {
		t.Errorf("eviction %+v, want from n1 at the run's minute 20", eviction)
	}
}

func TestMostWithin(t *testing.T) {
	at := func(minutes ...float64) []Eviction {
		evictions := make([]Eviction, len(minutes))
		for i, minute := range minutes {
			evictions[i] = Eviction{At: time.Duration(minute * float64(time.Minute))}
		}
		return evictions
	}
	for _, tt := range []struct {
		name      string
		evictions []Eviction
		want      int
	}{
		{name: "none", want: 0},
		{name: "one", evictions: at(15), want: 1},
		{name: "a cycle apart", evictions: at(30, 15), want: 1},
		{name: "within ten minutes", evictions: at(15, 24.9), want: 2},
		{name: "three, two close", evictions: at(1, 15, 16), want: 2},
	} {
		if got := mostWithin(tt.evictions, targetEvictionWindow); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}
