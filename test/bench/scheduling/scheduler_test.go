package scheduling

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func TestSchedulerConfig(t *testing.T) {
	tests := []struct {
		config    Config
		wantLease string
		// want are fields of the configuration, by path.
		want map[string]any
	}{
		{
			config:    Ours,
			wantLease: "bin-packing-scheduler-lease",
			want: map[string]any{
				"clientConnection.kubeconfig":         "/k/kubeconfig",
				"clientConnection.qps":                float64(500),
				"leaderElection.resourceName":         "bin-packing-scheduler-lease",
				"leaderElection.resourceNamespace":    benchNamespace,
				"profiles.0.schedulerName":            schedulerName,
				"profiles.0.percentageOfNodesToScore": float64(100),
				// Left to kube-scheduler's default, protobuf, as the report says.
				"clientConnection.contentType": nil,
			},
		},
		{
			config:    Upstream,
			wantLease: "upstream-defaults-scheduler-lease",
			want: map[string]any{
				"clientConnection": map[string]any{"kubeconfig": "/k/kubeconfig"},
				"leaderElection": map[string]any{"leaderElect": true, "resourceLock": "leases",
					"resourceName": "upstream-defaults-scheduler-lease", "resourceNamespace": benchNamespace},
				"profiles": []any{map[string]any{"schedulerName": schedulerName}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(string(tt.config), func(t *testing.T) {
			content, lease, err := schedulerConfig(tt.config, "/k/kubeconfig")
			if err != nil {
				t.Fatal(err)
			}
			if lease != tt.wantLease {
				t.Errorf("lease = %q, want %q", lease, tt.wantLease)
			}
			var config map[string]any
			if err := yaml.Unmarshal(content, &config); err != nil {
				t.Fatalf("the configuration is no YAML: %v\n%s", err, content)
			}
			for path, want := range tt.want {
				if diff := cmp.Diff(want, lookupPath(config, path)); diff != "" {
					t.Errorf("%s (-want +got):\n%s", path, diff)
				}
			}
		})
	}
}

func TestLoggedContentType(t *testing.T) {
	// As kube-scheduler v1.37.0 logs it, at -v=2.
	const logged = `I1122 20:30:14.541986   16334 configfile.go:94] "Using component config" config=<
	apiVersion: kubescheduler.config.k8s.io/v1
	clientConnection:
	  acceptContentTypes: ""
	  burst: 1000
	  contentType: application/vnd.kubernetes.protobuf
	  kubeconfig: /k/kubeconfig
	  qps: 500
	kind: KubeSchedulerConfiguration
 >
I1122 20:30:14.544129   16334 server.go:187] "Starting Kubernetes Scheduler" version="v1.37.0"
`
	tests := []struct {
		name, log, want string
	}{
		{name: "protobuf", log: logged, want: "application/vnd.kubernetes.protobuf"},
		{name: "json", log: strings.Replace(logged, "application/vnd.kubernetes.protobuf", "application/json", 1), want: "application/json"},
		{name: "no contentType in the configuration", log: strings.Replace(logged, "contentType:", "x:", 1)},
		{name: "a later line's contentType is not the configuration's",
			log: strings.Replace(logged, "contentType:", "x:", 1) + "I1122 x.go:1] contentType: application/json\n"},
		{name: "no configuration logged (a lower verbosity)", log: "I1122 server.go:187] \"Starting Kubernetes Scheduler\"\n"},
		{name: "empty", log: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := loggedContentType([]byte(tt.log)); got != tt.want {
				t.Errorf("loggedContentType = %q, want %q", got, tt.want)
			}
		})
	}
}

// lookupPath reads a dotted path of map keys and list indexes.
func lookupPath(value any, path string) any {
	for _, key := range strings.Split(path, ".") {
		switch node := value.(type) {
		case map[string]any:
			value = node[key]
		case []any:
			index, err := strconv.Atoi(key)
			if err != nil || index >= len(node) {
				return nil
			}
			value = node[index]
		default:
			return nil
		}
	}
	return value
}
