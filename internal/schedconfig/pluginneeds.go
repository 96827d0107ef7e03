package schedconfig

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
)

// SchedulerPluginsCommit is the scheduler-plugins commit whose plugins the operator knows:
// the pin of hack/build-scheduler-plugins.sh and of the generated table of extension
// points (zz_generated_pluginpoints_schedulerplugins.go), and the one the CRD manifests of
// CustomResource.InstallCommand come from.
const SchedulerPluginsCommit = "903da7df82cb8794dda8f2d510ba1156111662dd"

// CustomResource is a kind, served by a CustomResourceDefinition, that a plugin reads.
type CustomResource struct {
	schema.GroupVersionKind
	// Resource is the kind's plural resource name, as RBAC names it.
	Resource string
	// Manifest is the file of scheduler-plugins, at SchedulerPluginsCommit, that holds the
	// CustomResourceDefinition (its manifests/crds/ files are links to these).
	Manifest string
}

// CRDName is the name of the CustomResourceDefinition that serves the kind.
func (c CustomResource) CRDName() string { return c.Resource + "." + c.Group }

// InstallCommand is the command that installs the kind's CustomResourceDefinition from
// scheduler-plugins' own manifest at SchedulerPluginsCommit.
func (c CustomResource) InstallCommand() string {
	return "kubectl apply --server-side -f https://raw.githubusercontent.com/kubernetes-sigs/scheduler-plugins/" +
		SchedulerPluginsCommit + "/" + c.Manifest
}

// The kinds scheduler-plugins' plugins read (their Go types in scheduler-plugins' apis/ and
// in the modules its go.mod requires; the manifests under its manifests/). ElasticQuotas is
// exported for the watchdog, which reads them to tell why CapacityScheduling holds a pod.
var (
	podGroups = CustomResource{schema.GroupVersionKind{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Kind: "PodGroup"},
		"podgroups", "manifests/coscheduling/crd.yaml"}
	ElasticQuotas = CustomResource{schema.GroupVersionKind{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Kind: "ElasticQuota"},
		"elasticquotas", "manifests/capacityscheduling/crd.yaml"}
	nodeResourceTopologies = CustomResource{schema.GroupVersionKind{Group: "topology.node.k8s.io", Version: "v1alpha2", Kind: "NodeResourceTopology"},
		"noderesourcetopologies", "manifests/noderesourcetopology/crd.yaml"}
	seccompProfiles = CustomResource{schema.GroupVersionKind{Group: "security-profiles-operator.x-k8s.io", Version: "v1beta1", Kind: "SeccompProfile"},
		"seccompprofiles", "manifests/sysched/crd.yaml"}
	appGroups = CustomResource{schema.GroupVersionKind{Group: "appgroup.diktyo.x-k8s.io", Version: "v1alpha1", Kind: "AppGroup"},
		"appgroups", "manifests/appgroup/crd.yaml"}
	networkTopologies = CustomResource{schema.GroupVersionKind{Group: "networktopology.diktyo.x-k8s.io", Version: "v1alpha1", Kind: "NetworkTopology"},
		"networktopologies", "manifests/networktopology/crd.yaml"}
)

// Grant is what a plugin reads beyond what the ClusterRole system:kube-scheduler grants
// (Kubernetes 1.37's bootstrap policy): one API group's resources, read with verbs.
type Grant struct {
	Group     string
	Resources []string
	Verbs     []string
}

// readVerbs are what a plugin's informers and cached clients need: get, list and watch.
var readVerbs = []string{"get", "list", "watch"}

// PluginNeeds is what one out-of-tree plugin of scheduler-plugins needs from the cluster
// beyond what every scheduler has, as read in scheduler-plugins' sources at
// SchedulerPluginsCommit.
type PluginNeeds struct {
	// CRDs are the kinds the plugin reads, whose CustomResourceDefinitions the cluster must
	// serve: without one, kube-scheduler fails to create the plugin or waits forever for
	// its informer to sync.
	CRDs []CustomResource
	// ClusterRole is the ClusterRole, shipped in config/rbac, that grants Grants; a
	// scheduler's ServiceAccount is bound to it while its configuration enables the plugin.
	// Empty when the plugin needs nothing beyond system:kube-scheduler.
	ClusterRole string
	// Grants are what ClusterRole grants: read access to each of CRDs, and what else the
	// plugin reads. config/rbac's copy of the role is tested against them.
	Grants []Grant
	// Controller says that scheduler-plugins' controller keeps the status of the plugin's
	// resources (a PodGroup's phase, an ElasticQuota's used): no plugin reads that status,
	// but kubectl and users do.
	Controller bool
	// Source is where in scheduler-plugins, at SchedulerPluginsCommit, this was read.
	Source string
}

// PluginClusterRolePrefix begins the name of each ClusterRole a plugin is bound to.
const PluginClusterRolePrefix = "secondary-scheduler-plugin-"

// MetricsReaderClusterRole is the ClusterRole, shipped in config/rbac, that lets a
// scheduler read node use from metrics.k8s.io: the Trimaran plugins' built-in
// load-watcher does, with provider KubernetesMetricsServer.
const MetricsReaderClusterRole = "secondary-scheduler-metrics-reader"

// crdGrants are the read grants of crds, one per group.
func crdGrants(crds ...CustomResource) []Grant {
	var grants []Grant
	for _, crd := range crds {
		i := slices.IndexFunc(grants, func(grant Grant) bool { return grant.Group == crd.Group })
		if i < 0 {
			grants = append(grants, Grant{Group: crd.Group, Verbs: readVerbs})
			i = len(grants) - 1
		}
		grants[i].Resources = append(grants[i].Resources, crd.Resource)
	}
	return grants
}

// withCRDs are the needs of a plugin that reads crds and nothing else beyond
// system:kube-scheduler, bound to the ClusterRole PluginClusterRolePrefix+role.
func withCRDs(role, source string, crds ...CustomResource) PluginNeeds {
	return PluginNeeds{CRDs: crds, ClusterRole: PluginClusterRolePrefix + role, Grants: crdGrants(crds...), Source: source}
}

// metricsServerReader are the needs of a Trimaran plugin: read at its construction,
// load-watcher's KubernetesMetricsServer provider reads nodes.metrics.k8s.io (get, list)
// with the scheduler's credentials; with watcherAddress or another provider it needs
// nothing more (PluginClusterRoles decides from the args).
func metricsServerReader(source string) PluginNeeds {
	return PluginNeeds{ClusterRole: MetricsReaderClusterRole, Source: source,
		Grants: []Grant{{Group: "metrics.k8s.io", Resources: []string{"nodes"}, Verbs: []string{"get", "list"}}}}
}

// pluginNeeds is, for each plugin scheduler-plugins' kube-scheduler registers beside the
// in-tree ones (cmd/scheduler/main.go at SchedulerPluginsCommit), what it needs. The one
// place that says it: the bindings the operator renders, the ClusterRoles config/rbac
// ships, the operator's bind permission and the check that the CRDs are served all read
// it. TestPluginNeedsKnowsEveryPlugin fails when the pinned version registers a plugin
// this table does not name.
var pluginNeeds = map[string]PluginNeeds{
	// New makes a controller-runtime cache of PodGroups (cluster-wide list and watch,
	// reads through it); it reads only their spec, never the status the controller keeps.
	"Coscheduling": func() PluginNeeds {
		needs := withCRDs("coscheduling", "pkg/coscheduling/coscheduling.go New, pkg/util/client_util.go", podGroups)
		needs.Controller = true
		return needs
	}(),
	// New takes an informer of ElasticQuotas from a controller-runtime cache and fails
	// without the kind; it works out use from pods itself, never from status.used.
	"CapacityScheduling": func() PluginNeeds {
		needs := withCRDs("capacityscheduling", "pkg/capacityscheduling/capacity_scheduling.go New", ElasticQuotas)
		needs.Controller = true
		return needs
	}(),
	// An uncached client: get per node, list at start and watch (the default resync scope
	// All) of the cluster-scoped NodeResourceTopologies, which a node agent (such as
	// the NFD topology-updater) writes.
	"NodeResourceTopologyMatch": withCRDs("noderesourcetopologymatch",
		"pkg/noderesourcetopology/pluginhelpers.go initNodeTopologyInformer, cache/overreserve.go, cache/attr_watch.go", nodeResourceTopologies),
	// The Security Profiles Operator's SeccompProfiles, through a cached client.
	"SySched": withCRDs("sysched", "pkg/sysched/sysched.go New", seccompProfiles),
	// AppGroups and NetworkTopologies, which diktyo's own controllers write.
	"NetworkOverhead": withCRDs("networkoverhead", "pkg/networkaware/networkoverhead/networkoverhead.go New", appGroups, networkTopologies),
	// AppGroups' status.topologyOrder, which diktyo's AppGroup controller writes.
	"TopologicalSort": withCRDs("topologicalsort", "pkg/networkaware/topologicalsort/topologicalsort.go New", appGroups),
	// PriorityClasses through the scheduler's shared informer, which system:kube-scheduler
	// does not grant.
	"PreemptionToleration": {ClusterRole: PluginClusterRolePrefix + "preemptiontoleration",
		Grants: []Grant{{Group: "scheduling.k8s.io", Resources: []string{"priorityclasses"}, Verbs: readVerbs}},
		Source: "pkg/preemptiontoleration/preemption_toleration.go New (SharedInformerFactory().Scheduling().V1().PriorityClasses())"},
	"TargetLoadPacking":          metricsServerReader("pkg/trimaran/targetloadpacking, pkg/trimaran/collector.go NewCollector"),
	"LoadVariationRiskBalancing": metricsServerReader("pkg/trimaran/loadvariationriskbalancing, pkg/trimaran/collector.go NewCollector"),
	"LowRiskOverCommitment":      metricsServerReader("pkg/trimaran/lowriskovercommitment, pkg/trimaran/collector.go NewCollector"),
	// Peaks requires a load-watcher service (watcherAddress): it reads no API of its own.
	peaksPlugin: {Source: "pkg/trimaran/peaks/peaks.go New"},
	// Score or queue-sort plugins that read only the scheduler's snapshot of nodes and pods.
	"NodeResourcesAllocatable": {Source: "pkg/noderesources/allocatable.go"},
	"NodeMetadata":             {Source: "pkg/nodemetadata/node_metadata.go"},
	"PodState":                 {Source: "pkg/podstate/pod_state.go"},
	"QOSSort":                  {Source: "pkg/qos/queue_sort.go"},
}

// PluginNeedsOf is what plugin needs, and whether the operator knows it: an in-tree plugin,
// or one it does not know, needs nothing it can tell.
func PluginNeedsOf(plugin string) (PluginNeeds, bool) {
	needs, ok := pluginNeeds[plugin]
	return needs, ok
}

// PluginClusterRoles are every ClusterRole a plugin may be bound to, sorted: those
// config/rbac ships and the operator may bind.
func PluginClusterRoles() []string {
	var roles []string
	for _, needs := range pluginNeeds {
		if needs.ClusterRole != "" {
			roles = append(roles, needs.ClusterRole)
		}
	}
	slices.Sort(roles)
	return slices.Compact(roles)
}

// PluginGrants are what ClusterRole grants, from the plugins bound to it; nil for a role
// no plugin is bound to.
func PluginGrants(clusterRole string) []Grant {
	for _, needs := range pluginNeeds {
		if needs.ClusterRole == clusterRole {
			return needs.Grants
		}
	}
	return nil
}

// EnabledPlugins lists the plugins a configuration's profiles enable, at any extension
// point, sorted and without duplicates: kube-scheduler creates an instance of each.
func EnabledPlugins(config *schedulerconfigv1.KubeSchedulerConfiguration) []string {
	var enabled []string
	if config == nil {
		return nil
	}
	for _, profile := range config.Profiles {
		if profile.Plugins == nil {
			continue
		}
		for _, point := range pointSets(profile.Plugins) {
			for _, plugin := range point.set.Enabled {
				enabled = append(enabled, plugin.Name)
			}
		}
	}
	slices.Sort(enabled)
	return slices.Compact(enabled)
}

// NeededClusterRoles are the ClusterRoles that the plugins config enables need its
// scheduler bound to, sorted: a Trimaran plugin's only while its built-in load-watcher
// reads KubernetesMetricsServer (no watcherAddress), the others' whenever they are enabled.
// config has passed MetricSources' checks of the Trimaran args.
func NeededClusterRoles(config *schedulerconfigv1.KubeSchedulerConfiguration) ([]string, error) {
	var roles []string
	for _, plugin := range EnabledPlugins(config) {
		needs, ok := pluginNeeds[plugin]
		if !ok || needs.ClusterRole == "" {
			continue
		}
		if slices.Contains(TrimaranPlugins, plugin) {
			reads, err := readsMetricsServer(config, plugin)
			if err != nil {
				return nil, err
			}
			if !reads {
				continue
			}
		}
		roles = append(roles, needs.ClusterRole)
	}
	slices.Sort(roles)
	return slices.Compact(roles), nil
}

// readsMetricsServer reports whether a profile of config enables the Trimaran plugin with
// its built-in load-watcher reading KubernetesMetricsServer.
func readsMetricsServer(config *schedulerconfigv1.KubeSchedulerConfiguration, plugin string) (bool, error) {
	for _, profile := range config.Profiles {
		if !enables(profile.Plugins, plugin) {
			continue
		}
		args, err := pluginArgs(profile, plugin)
		if err != nil {
			return false, err
		}
		source, err := decodeMetricSource(ptr.Deref(profile.SchedulerName, ""), plugin, args)
		if err != nil {
			return false, err
		}
		if source.WatcherAddress == "" && source.Provider == defaultMetricProvider {
			return true, nil
		}
	}
	return false, nil
}

// PluginsNeedingController are the plugins config enables whose resources' status
// scheduler-plugins' controller keeps (PluginNeeds.Controller), sorted: while any
// scheduler enables one, the operator runs the controller.
func PluginsNeedingController(config *schedulerconfigv1.KubeSchedulerConfiguration) []string {
	var plugins []string
	for _, plugin := range EnabledPlugins(config) {
		if pluginNeeds[plugin].Controller {
			plugins = append(plugins, plugin)
		}
	}
	return plugins
}

// PluginControllerCRDs are the kinds scheduler-plugins' controller keeps the status of,
// sorted by CRD name: those of the plugins it serves (PluginNeeds.Controller). It watches
// all of them whatever the schedulers enable (cmd/controller/app/server.go Run starts a
// reconciler for each), and its manager fails to start while one is not served.
func PluginControllerCRDs() []CustomResource {
	var crds []CustomResource
	for _, needs := range pluginNeeds {
		if needs.Controller {
			crds = append(crds, needs.CRDs...)
		}
	}
	slices.SortFunc(crds, func(a, b CustomResource) int { return strings.Compare(a.CRDName(), b.CRDName()) })
	return slices.Compact(crds)
}

// NeededCRDs are the kinds that the plugins config enables read, in the order of the
// plugins' names, each once.
func NeededCRDs(config *schedulerconfigv1.KubeSchedulerConfiguration) []CustomResource {
	var crds []CustomResource
	for _, plugin := range EnabledPlugins(config) {
		for _, crd := range pluginNeeds[plugin].CRDs {
			if !slices.Contains(crds, crd) {
				crds = append(crds, crd)
			}
		}
	}
	return crds
}

// PluginsReading are the plugins config enables that read crd, sorted.
func PluginsReading(config *schedulerconfigv1.KubeSchedulerConfiguration, crd CustomResource) []string {
	var plugins []string
	for _, plugin := range EnabledPlugins(config) {
		if slices.Contains(pluginNeeds[plugin].CRDs, crd) {
			plugins = append(plugins, plugin)
		}
	}
	return plugins
}

// PluginCRDs are every kind a plugin of the table reads, each once, sorted by CRD name.
func PluginCRDs() []CustomResource {
	var crds []CustomResource
	for _, needs := range pluginNeeds {
		for _, crd := range needs.CRDs {
			if !slices.Contains(crds, crd) {
				crds = append(crds, crd)
			}
		}
	}
	slices.SortFunc(crds, func(a, b CustomResource) int { return strings.Compare(a.CRDName(), b.CRDName()) })
	return crds
}
