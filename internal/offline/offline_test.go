package offline

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestRender runs the command as a user would, and compares what it prints, and its exit
// code, with testdata/NAME.golden (go test ./internal/offline -update rewrites them).
func TestRender(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// absent must not appear in what is printed.
		absent []string
	}{
		{name: "bin-packing", args: []string{"-f", "testdata/bin-packing.yaml"}},
		{name: "bin-packing-kubernetes-1.33", args: []string{"-f", "testdata/bin-packing.yaml", "--kubernetes-version", "v1.33.4"}},
		{name: "target-load-packing-discovered", args: []string{"-f", "testdata/target-load-packing.yaml", "--prometheus-url", "http://prometheus-k8s.monitoring.svc:9090"}},
		{name: "target-load-packing-service", args: []string{"-f", "testdata/target-load-packing.yaml", "-f", "testdata/prometheus-service.yaml", "--prometheus-namespaces", "monitoring"}},
		{name: "target-load-packing-no-prometheus", args: []string{"-f", "testdata/target-load-packing.yaml"}},
		{name: "custom", args: []string{"-f", "testdata/custom.yaml", "--config-map", "testdata/custom-config.yaml"}},
		{name: "custom-config-missing", args: []string{"-f", "testdata/custom.yaml"}},
		{name: "custom-misspelt-plugin", args: []string{"-f", "testdata/custom.yaml", "--config-map", "testdata/custom-misspelt-plugin.yaml"}},
		{name: "token", args: []string{"-f", "testdata/token.yaml"}, absent: []string{"not-a-real-token-5f2a9c", "bm90LWEtcmVhbC10b2tlbi01ZjJhOWM"}},
		{name: "typo-in-profile-type", args: []string{"-f", "testdata/typo-in-profile-type.yaml"}},
		{name: "unknown-field", args: []string{"-f", "testdata/unknown-field.yaml"}},
		{name: "namespace-not-allowed", args: []string{"-f", "testdata/bin-packing.yaml", "--scheduler-namespaces", "platform-schedulers"}},
		{name: "routing", args: []string{"-f", "testdata/routing.yaml", "--kubernetes-version", "1.37"}},
		{name: "routing-unsupported", args: []string{"-f", "testdata/routing.yaml", "--kubernetes-version", "1.35"}},
		{name: "no-file", args: nil},
		{name: "unknown-flag", args: []string{"-f", "testdata/bin-packing.yaml", "--replicas", "3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), tc.args, &stdout, &stderr)
			got := fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", code, stdout.String(), stderr.String())
			for _, secret := range tc.absent {
				if strings.Contains(got, secret) {
					t.Errorf("the output shows %q", secret)
				}
			}
			golden := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./internal/offline -update writes it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("render %s (-want +got):\n%s", strings.Join(tc.args, " "), diff)
			}
		})
	}
}

// TestCRDCopyIsCurrent: the CRD the renderer validates with is the one the cluster gets.
func TestCRDCopyIsCurrent(t *testing.T) {
	embedded, err := os.ReadFile(filepath.Join("..", "..", "bindata", "assets", CRDAsset))
	if err != nil {
		t.Fatal(err)
	}
	generated, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "operator.secondary-scheduler.io_secondaryschedulers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(embedded, generated) {
		t.Errorf("bindata/assets/%s differs from config/crd/bases: run make manifests", CRDAsset)
	}
}

// TestEverySampleIsRead: each of config/samples is read strictly, and rendered or
// refused for a reason, never unreadable.
func TestEverySampleIsRead(t *testing.T) {
	samples, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "operator_v1_*.yaml"))
	if err != nil || len(samples) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, sample := range samples {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), []string{"-f", sample, "--prometheus-url", "http://prometheus:9090"}, &stdout, &stderr); code == ExitUsage {
			t.Errorf("%s: exit %d: %s", filepath.Base(sample), code, stderr.String())
		}
	}
}
