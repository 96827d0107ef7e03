package desired

import (
	"errors"
	"testing"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
)

// TestDeschedulerReachesPrometheus checks which HTTPS Prometheus the descheduler's client
// can verify, as the real v0.36.0 binary showed, and that the rest is refused with its reason.
func TestDeschedulerReachesPrometheus(t *testing.T) {
	tests := []struct {
		name     string
		address  string
		caBundle bool
		refused  bool
	}{
		{"plain HTTP", "http://prometheus.monitoring.svc:9090", false, false},
		{"a CA, on 443", "https://prometheus-k8s.monitoring.svc", true, false},
		{"a port", "https://prometheus-k8s.monitoring.svc:9091", true, true},
		{"no CA: the descheduler, which always presents a token, then trusts none", "https://prometheus.example", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkDeschedulerReachesPrometheus(tt.address, tt.caBundle)
			var refused *refusal.Error
			if got := errors.As(err, &refused) && refused.Reason == v1.ReasonDeschedulerCannotReadPrometheus; got != tt.refused || (!tt.refused && err != nil) {
				t.Fatalf("checkDeschedulerReachesPrometheus(%s, caBundle %t) = %v; want refused %t", tt.address, tt.caBundle, err, tt.refused)
			}
		})
	}
}
