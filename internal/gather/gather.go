// Package gather is the first stage of a reconcile: it reads everything a
// SecondaryScheduler's scheduler depends on (the user's configuration and the names it
// claims, the nodes, the PriorityClass, the Prometheus to read and how to reach it, the
// cluster's version) and returns it as Facts. It cannot write: a Gatherer holds only
// readers (internal/readonly wrappers of the clients it is given, which expose Get and
// List and nothing else; TestGatheringCannotWrite proves the rest), and the watches its reads call for are returned as References for the
// controller to keep, not registered here. What only the user can fix is returned as an
// internal/refusal error.
package gather

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/imageref"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/promdiscovery"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/readonly"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/tenancy"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// Config is what a Gatherer reads with, and the admin's choices it applies.
type Config struct {
	// Cache reads the operator's cached objects: nodes, its own objects, SecondarySchedulers.
	Cache client.Reader
	// API reads from the API server what no cache holds (the objects users reference).
	API client.Reader
	// Mapper tells whether the cluster has the Prometheus Operator's PrometheusRule kind.
	Mapper meta.RESTMapper
	// Version tells the cluster's Kubernetes version, for the default image.
	Version discovery.ServerVersionInterface
	// Kinds tells which kinds the API server serves, for the CRDs the configuration's
	// plugins read (DiscoveredKinds); nil for none served.
	Kinds ServedKinds
	// Tenancy says in which namespaces schedulers may run (a resource elsewhere claims
	// no scheduler name).
	Tenancy tenancy.Policy
	// PrometheusNamespaces are the only namespaces where Prometheus is discovered; empty
	// for none (the operator passes promdiscovery.Defaults when none are configured).
	PrometheusNamespaces []string
	// MetricsTokenClusterRoles are the ClusterRoles a metrics token's ServiceAccount may be
	// bound to; empty for render.DefaultMetricsClusterRole alone.
	MetricsTokenClusterRoles []string
	// DiscoveryInterval is how long a discovered Prometheus is remembered.
	DiscoveryInterval time.Duration
	// Now is the time, for metrics tokens due for renewal; nil for time.Now.
	Now func() time.Time
	// Discover finds the Prometheus of a load-aware profile that gives no address; nil
	// for promdiscovery.Find. The offline renderer gives the address its user names.
	Discover DiscoverFunc
	// OperatorNamespace is the operator's namespace, "" when it runs outside the cluster
	// (render.Facts.OperatorNamespace). No descheduler evicts its pods, nor those of the
	// namespaces Tenancy allows schedulers in (those routing never routes either).
	OperatorNamespace string
}

// DiscoverFunc finds Prometheus in namespaces through reader, as promdiscovery.Find does:
// the endpoint (nil for none), and where it was not allowed to look.
type DiscoverFunc func(ctx context.Context, reader client.Reader, namespaces []string) (*promdiscovery.Endpoint, []string, error)

// Gatherer gathers the facts of SecondarySchedulers. It is safe for concurrent use.
type Gatherer struct {
	cache, api               client.Reader
	mapper                   meta.RESTMapper
	version                  discovery.ServerVersionInterface
	kinds                    ServedKinds
	tenancy                  tenancy.Policy
	neverEvicted             []string
	operatorNamespace        string
	prometheusNamespaces     []string
	metricsTokenClusterRoles []string
	discoveryInterval        time.Duration
	now                      func() time.Time
	discover                 DiscoverFunc

	// discovered remembers what discovery found, per SecondaryScheduler.
	discovered discoveryMemory
	// serverVersion keeps the cluster's Kubernetes version between reconciles.
	serverVersion versionCache
}

// New is a Gatherer reading with config's readers, each wrapped (internal/readonly) so
// that only its Get and List can be reached, whatever else the value given can do.
func New(config Config) *Gatherer {
	now := config.Now
	if now == nil {
		now = time.Now
	}
	discover := config.Discover
	if discover == nil {
		discover = promdiscovery.Find
	}
	return &Gatherer{
		cache: readonly.Wrap(config.Cache), api: readonly.Wrap(config.API),
		mapper: config.Mapper, version: config.Version, kinds: cmp.Or[ServedKinds](config.Kinds, noKinds{}), tenancy: config.Tenancy,
		neverEvicted:         neverEvicted(config),
		prometheusNamespaces: config.PrometheusNamespaces, metricsTokenClusterRoles: config.MetricsTokenClusterRoles,
		discoveryInterval: config.DiscoveryInterval, now: now, discover: discover, operatorNamespace: config.OperatorNamespace,
	}
}

// neverEvicted are the namespaces whose pods no descheduler evicts: the control plane's,
// the schedulers' and the operator's.
func neverEvicted(config Config) []string {
	namespaces := append([]string{metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}, config.Tenancy.Namespaces...)
	if config.OperatorNamespace != "" {
		namespaces = append(namespaces, config.OperatorNamespace)
	}
	return namespaces
}

// Facts are what gathering found out: the facts render needs, and what status reports.
type Facts struct {
	// Render are the facts rendering needs.
	Render render.Facts
	// SchedulerNames are the scheduler names the configuration serves, each a claim.
	SchedulerNames []string
	// CustomConfigSource names the user's configuration of profile Custom, for messages;
	// empty for the other profiles.
	CustomConfigSource string
	// Prometheus is the endpoint a load-aware scheduler reads, nil when it reads none.
	Prometheus *promdiscovery.Endpoint
	// Access is how the scheduler reaches its metrics provider.
	Access *MetricsAccess
	// RecordingRules is what becomes of the recording rules the resource asks for.
	RecordingRules RecordingRulesPlan
	// Placement is what the nodes offer the scheduler, for status.
	Placement Placement
	// NodeNames are the names of the nodes the scheduler places pods on, whose load a
	// load-aware scheduler's metrics must cover: its node pool's, or every node of the
	// cluster.
	NodeNames []string
	// Extenders are the extenders the scheduler will call, checked, with the TLS the
	// scheduler uses with each.
	Extenders []Extender
	// Kinds tells which kinds the API server serves, for the CRDs the configuration's
	// plugins read; it looks a kind up only when asked.
	Kinds ServedKinds
}

// Reference is an object of a kind the spec may name, to be watched: Known says that
// gathering got as far as that kind, and Key is the object named, nil for none. A kind
// not Known leaves its watch as it was (gathering stopped before it, at a refusal).
type Reference struct {
	Known bool
	Key   *types.NamespacedName
}

// References are the objects of the spec that gathering read and the controller watches,
// so that their change brings a reconcile: the configuration ConfigMap, the metrics token
// Secret and the CA bundle ConfigMap.
type References struct {
	Config, TokenSecret, CABundle Reference
	// ExtenderSecrets and ExtenderConfigMaps are the objects that the extenders' CA
	// bundles and client certificates are mounted from.
	ExtenderSecrets, ExtenderConfigMaps ReferenceSet
}

// ReferenceSet is the objects of one kind the spec names, like Reference for several.
type ReferenceSet struct {
	Known bool
	Keys  []types.NamespacedName
}

func known(key *types.NamespacedName) Reference { return Reference{Known: true, Key: key} }

func knownAll(keys []types.NamespacedName) ReferenceSet { return ReferenceSet{Known: true, Keys: keys} }

// Gather reads everything cr's scheduler depends on. A refusal is returned for what only
// the user (or a cluster admin) can fix; any other error is worth a retry. The references
// are returned in both cases, for the kinds gathering reached. cr is in a namespace where
// schedulers may run (reconcile refuses the others before anything is read).
func (g *Gatherer) Gather(ctx context.Context, cr *v1.SecondaryScheduler) (*Facts, References, error) {
	var references References
	// Refusals of independent facts are gathered together, so that status names every
	// problem at once; a transient error returns at once, to be retried.
	var refusals []error
	refused := func(err error) bool {
		if err == nil {
			return true
		}
		if !refusal.Is(err) {
			return false
		}
		refusals = append(refusals, err)
		return true
	}
	if cr.Spec.SchedulerImage != "" {
		if err := imageref.Validate(cr.Spec.SchedulerImage); err != nil {
			refusals = append(refusals, refusal.New(v1.ReasonInvalidImage,
				"spec.schedulerImage %q is not an image reference: %v; give one like registry.k8s.io/scheduler-plugins/kube-scheduler:v0.35.7, or leave it empty for the default",
				usertext.Cut(cr.Spec.SchedulerImage, 80), err))
		}
	}
	found := &Facts{SchedulerNames: []string{cr.EffectiveSchedulerName()}, Kinds: OneLookPerGroupVersion(g.kinds)}
	custom, err := g.customConfig(ctx, cr, &references)
	if !refused(err) {
		return nil, references, err
	}
	// What the Custom configuration says of metrics, extenders and scheduler names is
	// checked only once the configuration itself is usable.
	if custom != nil {
		found.Render.CustomConfig, found.SchedulerNames = custom.data, schedconfig.ProfileNames(custom.config)
		found.CustomConfigSource = custom.source
		if err := customMetrics(custom, found); !refused(err) {
			return nil, references, err
		}
	}
	if err == nil {
		if err := g.gatherExtenders(ctx, cr, custom, found, &references); !refused(err) {
			return nil, references, err
		}
		if err := g.checkSchedulerNames(ctx, cr, found.SchedulerNames); !refused(err) {
			return nil, references, err
		}
	}
	if found.Placement, found.NodeNames, err = g.placement(ctx, cr); !refused(err) {
		return nil, references, err
	}
	found.Render.PlacementNodes = found.Placement.Matching + found.Placement.Hosting
	found.Render.NeverEvicted = g.neverEvicted
	found.Render.OperatorNamespace = g.operatorNamespace
	if found.Render.PriorityClassName, err = g.priorityClassName(ctx, cr); !refused(err) {
		return nil, references, err
	}
	if err := g.metrics(ctx, cr, found, &references); !refused(err) {
		return nil, references, err
	}
	// The version chooses the default image, and tells whether any image is outside the
	// version-skew policy: without spec.schedulerImage it is needed, with one it only
	// informs.
	if found.Render.KubernetesMinor, err = g.serverVersion.minor(g.version, g.now()); err != nil {
		if cr.Spec.SchedulerImage == "" {
			refusals = append(refusals, refusal.New(v1.ReasonDiscoveryFailed,
				"reading the cluster's Kubernetes version, to choose the default scheduler image, failed: %v; set spec.schedulerImage to skip this", err))
		} else {
			logf.FromContext(ctx).V(1).Info("the cluster's Kubernetes version is unknown: the version skew of spec.schedulerImage is not checked", "error", err.Error())
		}
	}
	if err := refusal.Join(refusals...); err != nil {
		return nil, references, err
	}
	return found, references, nil
}

// Forget drops what was remembered of the SecondaryScheduler key (what discovery found).
func (g *Gatherer) Forget(key types.NamespacedName) {
	g.discovered.forget(key)
}

// versionTTL is how long the cluster's version is kept: it changes only with an upgrade
// of the control plane, and reading it at every reconcile was a request each time.
const versionTTL = 10 * time.Minute

// versionCache keeps the cluster's Kubernetes minor version for versionTTL. Failures
// are not kept.
type versionCache struct {
	mu        sync.Mutex
	readAt    time.Time
	readMinor int
}

// minor returns the cluster's minor version ("37" or "37+" for 1.37), read from server
// when the kept one is older than versionTTL.
func (c *versionCache) minor(server discovery.ServerVersionInterface, now time.Time) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.readAt.IsZero() && now.Sub(c.readAt) < versionTTL {
		return c.readMinor, nil
	}
	info, err := server.ServerVersion()
	if err != nil {
		return 0, err
	}
	minor, err := strconv.Atoi(strings.TrimRight(info.Minor, "+"))
	if err != nil {
		return 0, fmt.Errorf("parse minor version %q: %w", info.Minor, err)
	}
	c.readAt, c.readMinor = now, minor
	return minor, nil
}
