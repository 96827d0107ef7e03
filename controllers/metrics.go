package controllers

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/promdiscovery"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// DefaultMetricsProbeInterval is how often the metrics of a load-aware scheduler are
// probed again when nothing else changes.
const DefaultMetricsProbeInterval = 5 * time.Minute

// MetricsProber probes the metrics of load-aware schedulers, at most once per interval
// for one address and set of nodes, so that the many reconciles a rollout causes do not
// each query Prometheus.
type MetricsProber struct {
	// Dial opens connections to the endpoints; nil for net.Dialer's.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Timeout bounds each query.
	Timeout time.Duration
	// Interval is how long a probe result stands.
	Interval time.Duration

	mu         sync.Mutex
	last       map[types.NamespacedName]probeRecord
	discovered map[types.NamespacedName]discoveryRecord
}

type probeRecord struct {
	at         time.Time
	address    string
	accessHash [32]byte // of token and CA: the token itself is not kept
	nodes      int
	result     metricsprobe.Result
}

// prometheusEndpoint is the Prometheus cr's scheduler reads: the address it gives, or the
// one discovery finds (looked for again once per interval), or nil when there is none.
func (r *SecondarySchedulerReconciler) prometheusEndpoint(ctx context.Context, cr *v1.SecondaryScheduler) (*promdiscovery.Endpoint, error) {
	if address := cr.Spec.Profile.LoadMetrics().Address; address != "" {
		return &promdiscovery.Endpoint{URL: address, Source: "spec.profile.metrics.address"}, nil
	}
	key := client.ObjectKeyFromObject(cr)
	p := r.MetricsProber
	p.mu.Lock()
	last, ok := p.discovered[key]
	p.mu.Unlock()
	// A miss is not remembered: a Prometheus installed meanwhile is found at the next look.
	if ok && last.endpoint != nil && time.Since(last.at) < p.Interval {
		return last.endpoint, nil
	}
	endpoint, forbidden, err := promdiscovery.Find(ctx, r.APIReader, r.discoveryNamespaces())
	if err != nil {
		return nil, fmt.Errorf("discover Prometheus: %w", err)
	}
	if endpoint == nil && len(forbidden) > 0 {
		return nil, &forbiddenError{places: forbidden}
	}
	p.mu.Lock()
	if p.discovered == nil {
		p.discovered = map[types.NamespacedName]discoveryRecord{}
	}
	p.discovered[key] = discoveryRecord{at: time.Now(), endpoint: endpoint}
	p.mu.Unlock()
	return endpoint, nil
}

// forbiddenError says that discovery found nothing where the operator may look, and
// where it may not.
type forbiddenError struct{ places []string }

func (e *forbiddenError) Error() string {
	return "the operator may not read " + strings.Join(e.places, ", ")
}

type discoveryRecord struct {
	at       time.Time
	endpoint *promdiscovery.Endpoint
}

// probe returns the metrics probe result for cr, probing again when the last result is
// older than the interval or was about another address or number of nodes.
func (p *MetricsProber) probe(ctx context.Context, key types.NamespacedName, address string, access *metricsAccess, nodes []string) metricsprobe.Result {
	accessHash := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%t", access.bearerToken(), access.caPEM, access.insecureSkipVerify)))
	p.mu.Lock()
	if p.last == nil {
		p.last = map[types.NamespacedName]probeRecord{}
	}
	last, ok := p.last[key]
	p.mu.Unlock()
	if ok && last.address == address && last.accessHash == accessHash && last.nodes == len(nodes) && time.Since(last.at) < p.Interval {
		return last.result
	}
	result := metricsprobe.Probe(ctx, p.httpClient(access), address, access.bearerToken(), nodes)
	p.mu.Lock()
	p.last[key] = probeRecord{at: time.Now(), address: address, accessHash: accessHash, nodes: len(nodes), result: result}
	p.mu.Unlock()
	return result
}

// httpClient queries with the TLS settings the scheduler has: the CA bundle it trusts
// (else the system roots), or no verification when the user turned it off.
func (p *MetricsProber) httpClient(access *metricsAccess) *http.Client {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: access.insecureSkipVerify} //nolint:gosec // the user's explicit choice, as the scheduler makes it
	if access.caPEM != nil {
		tlsConfig.RootCAs = x509.NewCertPool()
		tlsConfig.RootCAs.AppendCertsFromPEM(access.caPEM)
	}
	dial := p.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	}
	// Probes are minutes apart: a connection kept open between them would only go stale.
	return &http.Client{Timeout: p.Timeout, Transport: &http.Transport{DialContext: dial, TLSClientConfig: tlsConfig, DisableKeepAlives: true}}
}

// refused reports whether the last probe for key was refused for its credentials.
func (p *MetricsProber) refused(key types.NamespacedName) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.last[key]
	return ok && last.result.Reason == v1.ReasonUnauthorized
}

func (p *MetricsProber) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
	delete(p.discovered, key)
}

// setMetricsConditions probes the metrics cr's scheduler reads and reports them; missing
// metrics degrade the scheduler, since it would score every node 0 without a word.
func (r *SecondarySchedulerReconciler) setMetricsConditions(ctx context.Context, cr *v1.SecondaryScheduler, desired *gathered,
	status *v1.SecondarySchedulerStatus, conditions *conditionSetter) error {
	endpoint := desired.prometheus
	if endpoint == nil {
		meta.RemoveStatusCondition(&status.Conditions, string(v1.ConditionMetricsAvailable))
		status.Metrics = nil
		r.MetricsProber.forget(client.ObjectKeyFromObject(cr))
		return nil
	}
	nodeList := &corev1.NodeList{}
	if err := r.List(ctx, nodeList); err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	nodes := make([]string, 0, len(nodeList.Items))
	for _, node := range nodeList.Items {
		nodes = append(nodes, node.Name)
	}
	result := r.MetricsProber.probe(ctx, client.ObjectKeyFromObject(cr), endpoint.URL, desired.access, nodes)
	status.Metrics = &v1.MetricsStatus{Address: metricsprobe.AddressForStatus(endpoint.URL), Source: endpoint.Source,
		NodesWithMetrics: int32(result.NodesWithMetrics), Nodes: int32(result.Nodes), Credentials: desired.access.credentials}
	if identity := desired.access.identity; identity != nil {
		status.Metrics.TokenRenewTime = &metav1.Time{Time: identity.Token.RenewAt.Truncate(time.Second)}
	}
	if ca := desired.access.trustedCA; ca != nil {
		status.Metrics.TrustedCA = fmt.Sprintf("ConfigMap %s/%s, key %s", cr.Namespace, ca.ConfigMap, ca.Key)
	}
	status.Metrics.RecordingRules = desired.recordingRules(cr)
	result = explainProbe(cr, desired, result)
	conditions.set(v1.ConditionMetricsAvailable, result.Available, result.Reason, result.Message)
	if !result.Available {
		conditions.set(v1.ConditionDegraded, true, result.Reason,
			"the load-aware scheduler runs but cannot see node load, so it scores every node 0: "+result.Message)
	}
	return nil
}

// explainProbe adds to a failed probe what the operator knows of its cause: recording
// rules it could not install or did install, and the identity whose token was refused.
func explainProbe(cr *v1.SecondaryScheduler, desired *gathered, result metricsprobe.Result) metricsprobe.Result {
	if result.Available {
		return result
	}
	switch {
	case desired.recordingRulesPlan.note != "" && (result.Reason == v1.ReasonRecordingRuleMissing || result.Reason == v1.ReasonNodeLabelMismatch):
		result.Reason, result.Message = v1.ReasonRecordingRulesNotInstalled, result.Message+" "+desired.recordingRulesPlan.note
	case result.Reason == v1.ReasonRecordingRuleMissing && desired.recordingRules(cr) != "":
		result.Message += fmt.Sprintf(" The operator installed PrometheusRule %s; the series appear once the Prometheus Operator "+
			"has loaded it into Prometheus and it has been evaluated, usually within a few minutes.", desired.recordingRules(cr))
	case result.Reason == v1.ReasonUnauthorized && desired.access.identity != nil:
		result.Message += fmt.Sprintf(" The token is a bound token of ServiceAccount %s/%s: check that ClusterRole %s lets it read the metrics "+
			"(the proxy in front of Prometheus authorizes it with a SubjectAccessReview). A token that is no longer valid is replaced at the next probe.",
			cr.Namespace, render.MetricsServiceAccountName(cr), desired.access.identity.ClusterRole)
	}
	return result
}
