package schedconfig

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
)

// largestProfile is a realistic, busy profile: in-tree and scheduler-plugins args, and
// extraResources extended resources in the NodeResourcesFit score.
func largestProfile(text *strings.Builder, index, extraResources int) {
	fmt.Fprintf(text, `- schedulerName: scheduler-%02d
  percentageOfNodesToScore: 50
  plugins:
    multiPoint:
      enabled:
      - name: TargetLoadPacking
        weight: 3
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
      enabled:
      - name: NodeResourcesFit
        weight: 2
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
          weight: 1
        - name: memory
          weight: 1
`, index)
	for i := range extraResources {
		fmt.Fprintf(text, "        - name: devices.example.com/accelerator-%03d\n          weight: %d\n", i, i%100+1)
	}
	text.WriteString(`  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - maxSkew: 1
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: ScheduleAnyway
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - key: node-role.kubernetes.io/worker
              operator: Exists
  - name: InterPodAffinity
    args:
      hardPodAffinityWeight: 1
  - name: TargetLoadPacking
    args:
      targetUtilization: 60
      defaultRequests:
        cpu: 1000m
      defaultRequestsMultiplier: "1.5"
      metricProvider:
        type: Prometheus
        address: https://prometheus.example.svc:9091
`)
}

// largestConfig is the largest realistic configuration Parse accepts: as many busy
// profiles as fit under MaxConfigBytes (at most MaxProfiles), then as many extended
// resources in each as still fit.
func largestConfig() string {
	build := func(profiles, extraResources int) string {
		var text strings.Builder
		text.WriteString("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nparallelism: 16\nprofiles:\n")
		for i := range profiles {
			largestProfile(&text, i, extraResources)
		}
		return text.String()
	}
	profiles := 1
	for profiles < MaxProfiles && len(build(profiles+1, 0)) <= MaxConfigBytes {
		profiles++
	}
	config := build(profiles, 0)
	for extra := 1; ; extra++ {
		larger := build(profiles, extra)
		if len(larger) > MaxConfigBytes {
			return config
		}
		config = larger
	}
}

// parseHeapBytes bounds the heap that parsing the largest configuration allocates. It
// takes about 8 MB (a 1 MiB configuration took about 140 MB before MaxConfigBytes and
// the single YAML pass); the bound leaves room for library changes and catches a return
// to decoding the text several times.
const parseHeapBytes = 24 << 20

func TestParseLargestConfig(t *testing.T) {
	config := []byte(largestConfig())
	if len(config) > MaxConfigBytes || len(config) < MaxConfigBytes-8<<10 {
		t.Fatalf("largest config is %d bytes, want just under %d", len(config), MaxConfigBytes)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	parsed, err := Parse(config, "scheduler-00", "test")
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("the largest config is refused: %v", err)
	}
	if names := ProfileNames(parsed); len(names) != strings.Count(string(config), "- schedulerName:") {
		t.Errorf("got %d profile names, want one per profile", len(names))
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > parseHeapBytes {
		t.Errorf("parsing %d bytes allocated %d bytes of heap, more than %d", len(config), allocated, parseHeapBytes)
	}
}

// TestOversizedConfigIsNotParsed checks that an oversized configuration is refused
// before any YAML is read: refusing it must cost no more than formatting the message.
func TestOversizedConfigIsNotParsed(t *testing.T) {
	config := []byte(laughs + strings.Repeat("# padding\n", MaxConfigBytes/10))
	var err error
	allocations := testing.AllocsPerRun(10, func() { _, err = Parse(config, "packer", "test") })
	if problem, ok := refusal.As(err); !ok || problem.Reason != "ConfigTooLarge" {
		t.Fatalf("want ConfigTooLarge, got %v", err)
	}
	if allocations > 10 {
		t.Errorf("refusing an oversized config took %v allocations; it should not parse it", allocations)
	}
}

func BenchmarkParseLargestConfig(b *testing.B) {
	config := []byte(largestConfig())
	b.SetBytes(int64(len(config)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(config, "scheduler-00", "bench"); err != nil {
			b.Fatal(err)
		}
	}
}
