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
		name            string
		address         string
		token, caBundle bool
		refused         bool
	}{
		{"plain HTTP", "http://prometheus.monitoring.svc:9090", true, false, false},
		{"a token and a CA, on 443", "https://prometheus-k8s.monitoring.svc", true, true, false},
		{"a token and a port", "https://prometheus-k8s.monitoring.svc:9091", true, true, true},
		{"a token and no CA", "https://prometheus-k8s.monitoring.svc", true, false, true},
		{"no token, public roots", "https://prometheus.example", false, false, false},
		{"no token, a private CA", "https://prometheus.example", false, true, true},
		{"no token, a port, public roots", "https://prometheus.example:9443", false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkDeschedulerReachesPrometheus(tt.address, tt.token, tt.caBundle)
			var refused *refusal.Error
			if got := errors.As(err, &refused) && refused.Reason == v1.ReasonDeschedulerCannotReadPrometheus; got != tt.refused || (!tt.refused && err != nil) {
				t.Fatalf("checkDeschedulerReachesPrometheus(%s, token %t, caBundle %t) = %v; want refused %t", tt.address, tt.token, tt.caBundle, err, tt.refused)
			}
		})
	}
}
