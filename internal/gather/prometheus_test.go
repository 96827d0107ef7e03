package gather

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/promdiscovery"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
)

// TestDiscoverySearchesOnlyTheConfiguredNamespaces checks that Prometheus is discovered
// in the namespaces configured and nowhere else: with none configured, a load-aware
// scheduler that gives no address is refused, saying so, and openshift-monitoring, which
// off OpenShift anyone who may create namespaces could create, is never searched unless
// it is listed.
func TestDiscoverySearchesOnlyTheConfiguredNamespaces(t *testing.T) {
	// A Prometheus in each of these namespaces, found only where discovery searches.
	prometheuses := map[string]*promdiscovery.Endpoint{
		"openshift-monitoring": {URL: "https://thanos-querier.openshift-monitoring.svc:9091", Source: "Service openshift-monitoring/thanos-querier"},
		"monitoring":           {URL: "http://prometheus-k8s.monitoring.svc:9090", Source: "Service monitoring/prometheus-k8s"},
	}
	for _, tc := range []struct {
		name       string
		configured []string
		address    string
		// wantSearched are the namespaces discovery searches.
		wantSearched []string
		wantURL      string
		// wantRefusal are the words a PrometheusNotFound refusal says; nil for none.
		wantRefusal []string
	}{
		{name: "none configured: refused", configured: nil,
			wantRefusal: []string{"no namespace is configured for Prometheus discovery", "spec.profile.metrics.address", "--prometheus-namespaces"}},
		{name: "only the empty name: refused", configured: []string{""},
			wantRefusal: []string{"no namespace is configured for Prometheus discovery"}},
		{name: "none configured, an address given", configured: nil, address: "https://prometheus.example:9091",
			wantURL: "https://prometheus.example:9091"},
		{name: "configured: searched there only", configured: []string{"monitoring"},
			wantSearched: []string{"monitoring"}, wantURL: prometheuses["monitoring"].URL},
		{name: "configured, nothing there: refused, saying where it searched", configured: []string{"observability"},
			wantSearched: []string{"observability"}, wantRefusal: []string{"none was found", "in namespaces observability"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, cluster := newGatherer(t)
			var searched []string
			gatherer := New(Config{Cache: cluster, API: cluster, Mapper: cluster.RESTMapper(), Version: fixedVersion{},
				PrometheusNamespaces: tc.configured,
				Discover: func(_ context.Context, _ client.Reader, namespaces []string) (*promdiscovery.Endpoint, []string, error) {
					for _, namespace := range namespaces {
						if namespace == "" {
							continue
						}
						searched = append(searched, namespace)
						if endpoint := prometheuses[namespace]; endpoint != nil {
							return endpoint, nil, nil
						}
					}
					return nil, nil, nil
				}})
			cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "load", UID: "u1"},
				Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile, Metrics: &v1.LoadMetrics{Address: tc.address}}}}
			endpoint, err := gatherer.prometheus(context.Background(), cr)
			if !slices.Equal(searched, tc.wantSearched) {
				t.Errorf("discovery searched %q, want %q", searched, tc.wantSearched)
			}
			if tc.wantRefusal != nil {
				refused, ok := refusal.As(err)
				if !ok || refused.Reason != v1.ReasonPrometheusNotFound {
					t.Fatalf("prometheus = %v, %v; want a PrometheusNotFound refusal", endpoint, err)
				}
				for _, words := range tc.wantRefusal {
					if !strings.Contains(refused.Message, words) {
						t.Errorf("the refusal %q does not say %q", refused.Message, words)
					}
				}
				return
			}
			if err != nil || endpoint == nil || endpoint.URL != tc.wantURL {
				t.Errorf("prometheus = %+v, %v; want %s", endpoint, err, tc.wantURL)
			}
		})
	}
}
