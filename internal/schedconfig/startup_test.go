package schedconfig

import (
	"testing"
	"time"
)

func TestStartupBound(t *testing.T) {
	// What load-watcher v0.2.4 may wait for while one plugin instance is built: 3 windows
	// of 34 Prometheus queries of 10 s each, of 4 SignalFx requests of 55 s each, of 2
	// metrics API requests the API server ends after a minute; or one request of 55 s to
	// a load-watcher service.
	const (
		base          = 240 * time.Second
		prometheus    = 1020 * time.Second
		signalFx      = 660 * time.Second
		metricsServer = 360 * time.Second
		service       = 55 * time.Second
	)
	prometheusArgs := "metricProvider:\n  type: Prometheus\n  address: http://prometheus.monitoring.svc:9090\n"
	serviceArgs := "watcherAddress: http://load-watcher.load-watcher.svc:2020\n"
	tests := []struct {
		name   string
		config string
		want   time.Duration
	}{
		{"no plugins section", withProfiles("- schedulerName: packer\n"), base},
		{"in-tree plugins only", withProfiles(scoringProfile("packer", "NodeResourcesFit", "")), base},
		{"Prometheus", tlpAtScore(prometheusArgs), base + prometheus},
		{"SignalFx", tlpAtScore("metricProvider:\n  type: SignalFx\n"), base + signalFx},
		{"the metrics API, upstream's default provider", tlpAtScore(""), base + metricsServer},
		{"a load-watcher service", tlpAtScore(serviceArgs), base + service},
		// kube-scheduler builds a plugin enabled at any extension point, even one that
		// runs it nowhere.
		{"enabled by multiPoint, disabled at score", withProfiles(tlpByMultiPointDisabledAtScore("TargetLoadPacking") +
			"  pluginConfig:\n  - name: TargetLoadPacking\n    args:\n" + asArgs(prometheusArgs)), base + prometheus},
		{"args of a plugin no extension point enables", withProfiles(`- schedulerName: packer
  pluginConfig:
  - name: TargetLoadPacking
    args:
` + asArgs(prometheusArgs)), base},
		{"one instance per profile, each with its own wait", withProfiles(
			scoringProfile("packer", "TargetLoadPacking", prometheusArgs, "Peaks", serviceArgs) +
				scoringProfile("balancer", "LoadVariationRiskBalancing", serviceArgs, "LowRiskOverCommitment", serviceArgs)),
			base + prometheus + 3*service},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config, err := Parse([]byte(tt.config), "", "test")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if _, err := MetricSources(config); err != nil {
				t.Fatalf("MetricSources: %v", err)
			}
			got, err := StartupBound(config)
			if err != nil {
				t.Fatalf("StartupBound: %v", err)
			}
			if got != tt.want {
				t.Errorf("StartupBound = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStartupBoundWithoutConfig(t *testing.T) {
	if got, err := StartupBound(nil); got != schedulerStartAllowance || err != nil {
		t.Errorf("StartupBound(nil) = %v, %v; want %v", got, err, schedulerStartAllowance)
	}
}
