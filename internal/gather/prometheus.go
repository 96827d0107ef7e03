package gather

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/promdiscovery"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
)

// prometheus is the Prometheus cr's scheduler reads: the address it gives, or the one
// discovery finds (looked for again once per interval, after a miss within
// discoveryMissTTL). A miss is a refusal.
func (g *Gatherer) prometheus(ctx context.Context, cr *v1.SecondaryScheduler) (*promdiscovery.Endpoint, error) {
	if address := cr.Spec.Profile.LoadMetrics().Address; address != "" {
		return &promdiscovery.Endpoint{URL: address, Source: "spec.profile.metrics.address"}, nil
	}
	endpoint, err := g.discovered.remember(discoveryKey{object: client.ObjectKeyFromObject(cr)}, g.discoveryInterval, func() (*promdiscovery.Endpoint, error) {
		endpoint, forbidden, err := g.discover(ctx, g.api, g.discoveryNamespaces())
		if err != nil {
			return nil, fmt.Errorf("discover Prometheus: %w", err)
		}
		if endpoint == nil && len(forbidden) > 0 {
			return nil, &forbiddenError{places: forbidden}
		}
		return endpoint, nil
	})
	var forbidden *forbiddenError
	if errors.As(err, &forbidden) {
		return nil, refusal.New(v1.ReasonPrometheusNotFound,
			"profile.metrics gives no Prometheus address and none was found (searched: %s), but %v; "+
				"set spec.profile.metrics.address, or grant the operator get and list on them", g.searched(), forbidden)
	}
	if err != nil {
		return nil, err
	}
	if endpoint == nil && !g.discoversAnywhere() {
		return nil, refusal.New(v1.ReasonPrometheusNotFound,
			"profile.metrics gives no Prometheus address, and no namespace is configured for Prometheus discovery; "+
				"set spec.profile.metrics.address, or list the namespaces where Prometheus runs in the operator's --prometheus-namespaces")
	}
	if endpoint == nil {
		return nil, refusal.New(v1.ReasonPrometheusNotFound,
			"profile.metrics gives no Prometheus address and none was found (searched: %s); set spec.profile.metrics.address", g.searched())
	}
	return endpoint, nil
}

// discoveryNamespaces are the namespaces where Prometheus is discovered: those configured,
// and none when none is. There is no fallback here: whether openshift-monitoring may be
// searched depends on whether the cluster is OpenShift, which whoever configures the
// Gatherer finds out (the operator passes promdiscovery.Defaults when the admin names
// none); searched elsewhere, it would trust whoever created that namespace with a token.
func (g *Gatherer) discoveryNamespaces() []string {
	return g.prometheusNamespaces
}

// discoversAnywhere is whether a namespace is configured for discovery (the empty name
// is none: discovery never takes it for every namespace).
func (g *Gatherer) discoversAnywhere() bool {
	return slices.ContainsFunc(g.discoveryNamespaces(), func(namespace string) bool { return namespace != "" })
}

// searched says, for a message, where Prometheus discovery looks.
func (g *Gatherer) searched() string {
	return promdiscovery.SearchedIn(g.discoveryNamespaces())
}

// forbiddenError says that discovery found nothing where the operator may look, and
// where it may not.
type forbiddenError struct{ places []string }

func (e *forbiddenError) Error() string {
	return "the operator may not read " + strings.Join(e.places, ", ")
}

// discoveryMissTTL is how long discovery that found nothing is not repeated: each
// discovery lists Services and Prometheus objects in every namespace searched, which a
// reconcile per Deployment status change would repeat for nothing; a Prometheus
// installed meanwhile is found within it, or within the probe interval when shorter.
const discoveryMissTTL = 30 * time.Second

// discoveryKey names what was discovered for a SecondaryScheduler: the Prometheus it
// reads, or the Prometheus Operator's Prometheus its recording rules are for.
type discoveryKey struct {
	object   types.NamespacedName
	operated bool
}

type discoveryRecord struct {
	at       time.Time
	endpoint *promdiscovery.Endpoint
}

// discoveryMemory remembers what discovery found, as an informer remembers what it
// listed: reads kept, never a write.
type discoveryMemory struct {
	mu      sync.Mutex
	records map[discoveryKey]discoveryRecord
}

// remember returns what find finds for key, remembered for ttl, and a miss for
// discoveryMissTTL at most. Errors are not remembered.
func (m *discoveryMemory) remember(key discoveryKey, ttl time.Duration, find func() (*promdiscovery.Endpoint, error)) (*promdiscovery.Endpoint, error) {
	m.mu.Lock()
	last, ok := m.records[key]
	m.mu.Unlock()
	if ok && last.endpoint == nil {
		ttl = min(ttl, discoveryMissTTL)
	}
	if ok && time.Since(last.at) < ttl {
		return last.endpoint, nil
	}
	endpoint, err := find()
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.records == nil {
		m.records = map[discoveryKey]discoveryRecord{}
	}
	m.records[key] = discoveryRecord{at: time.Now(), endpoint: endpoint}
	m.mu.Unlock()
	return endpoint, nil
}

func (m *discoveryMemory) forget(object types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.records, discoveryKey{object: object})
	delete(m.records, discoveryKey{object: object, operated: true})
}
