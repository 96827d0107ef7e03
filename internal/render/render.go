// Package render turns a SecondaryScheduler and the facts the operator discovered about
// the cluster into the objects of its scheduler. It is pure: no client, no clock, no
// logging. Each field of the SecondaryScheduler is read in one place here, so this
// package is where a field of the resource becomes a setting of the scheduler:
//
//	spec.schedulerName, spec.profile, spec.schedulerConfig -> SchedulerConfig (config.yaml)
//	spec.schedulerImage                                     -> SchedulerImage, and the binary and user
//	                                                           it is started as (image.go)
//	spec.profile.metrics                                    -> metricProvider args (loadaware.go), token
//	                                                           identity and CA mount (metricsaccess.go),
//	                                                           PrometheusRule (recordingrules.go)
//	spec.nodePool                                           -> NodeAffinity addedAffinity of every
//	                                                           profile (nodepool.go)
//	spec.gang, spec.quota                                   -> Coscheduling and CapacityScheduling in every
//	                                                           profile of a typed configuration (addons.go)
//	the plugins the configuration enables                   -> the ClusterRoleBindings their reads need
//	                                                           (pluginroles.go, schedconfig's table)
//	the plugins that fetch load while they are built       -> the startup probe's allowance, in
//	                                                           deployment (schedconfig.StartupBound)
//	spec.extenders                                          -> the configuration's extenders, their TLS
//	                                                           mounts and containers (extenders.go)
//	spec.logLevel                                           -> the --v flag, in deployment
//	spec.topology, spec.resources, spec.nodeSelector,       -> replicas, spread, PodDisruptionBudget and
//	spec.tolerations, spec.affinity                            the pods' placement (placement.go)
//	the ports the rendered Deployments declare              -> their NetworkPolicies, which admit nothing
//	                                                           else (networkpolicy.go, podAudiences)
package render

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// Facts are what the operator found out about the cluster and the resource's references.
type Facts struct {
	// KubernetesMinor is the cluster's Kubernetes minor version (37 for 1.37), for the
	// default image and the version skew of any image; 0 when unknown.
	KubernetesMinor int
	// CustomConfig is the user's config.yaml for profile Custom, already checked with
	// schedconfig.Parse.
	CustomConfig []byte
	// ScoreByRequests renders a load-aware profile with its request-based stand-in while
	// its metrics are unavailable (profile.metrics.whenUnavailable: ScoreByRequests; the
	// operator decides, with hysteresis, and records it in status.metrics.scoring).
	ScoreByRequests bool
	// ServedConfigHash is the configuration hash of the scheduler last observed serving
	// (status.configHash while Available is True with reason SchedulerReady), empty when
	// none was: the descheduler is paused while the scheduler that will place the pods it
	// evicts is not the one rendered now (DeschedulerPause).
	ServedConfigHash string
	// PrometheusAddress is the Prometheus that discovery found, for a load-aware profile
	// reading Prometheus without an address of its own.
	PrometheusAddress string
	// MetricsToken is the bearer token from profile.metrics.tokenSecretRef. A configuration
	// holding one is rendered into a Secret.
	MetricsToken string
	// CustomConfigTokens are the metricProvider tokens that the Trimaran args of a Custom
	// configuration hold. Such a configuration is rendered into a Secret, and hashed with
	// MetricsTokenVersion in place of each token.
	CustomConfigTokens []string
	// MetricsTokenVersion identifies the token without revealing it (its Secret's UID and
	// resourceVersion, or a bound token's expiry): the configuration hash, which status
	// and the pod template show, is computed with it in place of the token, so that it
	// rolls the scheduler when the token changes yet is no oracle for guessing the token.
	MetricsTokenVersion string
	// MetricsIdentity is the ServiceAccount whose bound token the scheduler presents to
	// Prometheus, nil when it uses none. Its Token is nil until one has been requested:
	// the identity's objects are rendered all the same, so that the operator checks they
	// are its own before it creates any of them or asks for a token.
	MetricsIdentity *MetricsIdentity
	// TrustedCA is the CA bundle that verifies the metrics provider, nil for the system roots.
	TrustedCA *TrustedCA
	// RecordingRules is the Prometheus Operator's Prometheus to install the recording
	// rules of load-watcher's series for, nil for none.
	RecordingRules *RecordingRuleTarget
	// PlacementNodes is how many nodes the scheduler's own pods may run on: Ready,
	// schedulable, matching its nodeSelector and required node affinity, with every
	// NoSchedule and NoExecute taint tolerated. HighlyAvailable mode runs one replica per
	// such node, up to maxReplicas (see Replicas).
	PlacementNodes int32
	// PriorityClassName is the scheduler pods' PriorityClass: spec.priorityClassName, else
	// the shipped default when it exists, else "" (none).
	PriorityClassName string
	// ExtenderTLSVersion identifies the Secrets and ConfigMaps that the extenders' TLS
	// files are mounted from (their UIDs and resourceVersions), never their content: the
	// configuration hash includes it, so that a new certificate rolls the scheduler, which
	// reads the files once, at start.
	ExtenderTLSVersion string
	// NeverEvicted are the namespaces whose pods a descheduler (spec.descheduling) never
	// evicts: kube-system, the operator's, the schedulers'.
	NeverEvicted []string
	// OperatorNamespace is the operator's namespace, whose pods (OperatorPodLabels) alone
	// the NetworkPolicies admit to what only the operator reads; "" when the operator runs
	// outside the cluster.
	OperatorNamespace string
}

// Replicas is the number of scheduler pods to run: one per node they may run on, up to
// the topology's maximum, and never fewer than one, so that a cluster without such a node
// shows a Pending pod rather than nothing.
func Replicas(cr *v1.SecondaryScheduler, placementNodes int32) int32 {
	return max(1, min(placementNodes, cr.MaxReplicas()))
}

// Result is a rendered scheduler.
type Result struct {
	// Objects are the scheduler's objects in the order they are applied: identity and
	// permissions first, then configuration, then the Deployment that uses them.
	Objects []*unstructured.Unstructured
	// SchedulerConfig is the rendered config.yaml.
	SchedulerConfig string
	// ConfigHash identifies SchedulerConfig.
	ConfigHash string
	// Image is the scheduler image, where it comes from and how it is started.
	Image Image
	// Config is SchedulerConfig as kube-scheduler reads it.
	Config *schedulerconfigv1.KubeSchedulerConfiguration

	configInSecret    bool
	trustedCA         *TrustedCA
	replicas          int32
	priorityClassName string
	// pluginClusterRoles are the ClusterRoles the configuration's plugins need the
	// scheduler bound to (schedconfig.NeededClusterRoles).
	pluginClusterRoles []string
	// startupBound is how long the scheduler may take to start (schedconfig.StartupBound).
	startupBound time.Duration
	// deschedulerPolicy is the descheduler's policy (spec.descheduling), nil without one.
	deschedulerPolicy []byte
	// DeschedulerPause is why the descheduler is paused (its Deployment scaled to zero),
	// DeschedulerRuns while it runs or without spec.descheduling.
	DeschedulerPause DeschedulerPause
}

// Render renders every object of cr's scheduler.
func Render(cr *v1.SecondaryScheduler, facts Facts) (*Result, error) {
	facts.MetricsToken = metricsToken(facts)
	if identity := facts.MetricsIdentity; identity != nil && identity.Token != nil {
		facts.MetricsTokenVersion = identity.Token.ServiceAccountUID + "/" + identity.Token.ExpiresAt.UTC().Format(time.RFC3339)
	}
	config, err := SchedulerConfig(cr, facts)
	if err != nil {
		return nil, err
	}
	hash, err := configHash(cr, facts, config)
	if err != nil {
		return nil, err
	}
	// Read back as kube-scheduler reads it: the plugins it enables decide the bindings,
	// and the checks before rollout read it too.
	parsed, err := schedconfig.ReadRendered([]byte(config))
	if err != nil {
		return nil, fmt.Errorf("read back the rendered configuration: %w", err)
	}
	roles, err := schedconfig.NeededClusterRoles(parsed)
	if err != nil {
		return nil, err
	}
	startupBound, err := schedconfig.StartupBound(parsed)
	if err != nil {
		return nil, err
	}
	result := &Result{SchedulerConfig: config, ConfigHash: hash, Config: parsed, pluginClusterRoles: roles, startupBound: startupBound, trustedCA: facts.TrustedCA,
		configInSecret: facts.MetricsToken != "" || facts.MetricsIdentity != nil || len(facts.CustomConfigTokens) > 0,
		replicas:       Replicas(cr, facts.PlacementNodes), priorityClassName: facts.PriorityClassName}
	result.Image = SchedulerImage(cr, facts.KubernetesMinor)

	builders := []func(*v1.SecondaryScheduler, *Result) (*yaml.RNode, error){
		serviceAccount,
		clusterRoleBinding("clusterrolebinding-kube-scheduler.yaml", "kube-scheduler"),
		clusterRoleBinding("clusterrolebinding-volume-scheduler.yaml", "volume-scheduler"),
		authenticationReaderBinding,
		schedulerLeaseElection.lease,
		schedulerLeaseElection.role,
		schedulerLeaseElection.binding,
	}
	for _, role := range result.pluginClusterRoles {
		builders = append(builders, pluginBinding(role))
	}
	builders = append(builders, metricsIdentityBuilders(facts.MetricsIdentity)...)
	builders = append(builders, schedulerConfigObject, service)
	if isHighlyAvailable(cr) {
		builders = append(builders, podDisruptionBudget)
	}
	builders = append(builders, deployment)
	if cr.Spec.Descheduling != nil {
		if result.deschedulerPolicy, err = deschedulerPolicy(cr, facts); err != nil {
			return nil, err
		}
		result.DeschedulerPause = deschedulerPause(facts, result.ConfigHash)
		builders = append(builders, deschedulerBuilders(cr, facts)...)
	}
	for _, build := range builders {
		node, err := build(cr, result)
		if err != nil {
			return nil, fmt.Errorf("render scheduler of %s/%s: %w", cr.Namespace, cr.Name, err)
		}
		object, err := ownObject(cr, node)
		if err != nil {
			return nil, err
		}
		result.Objects = append(result.Objects, object)
	}
	policies, err := networkPolicies(cr, facts.OperatorNamespace, result.Objects)
	if err != nil {
		return nil, fmt.Errorf("render scheduler of %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	result.Objects = beforeDeployments(result.Objects, policies)
	if facts.RecordingRules != nil {
		rules, err := RecordingRules(cr, *facts.RecordingRules)
		if err != nil {
			return nil, err
		}
		result.Objects = append(result.Objects, rules)
	}
	return result, nil
}

// metricsToken is the token the configuration carries: the user's, or the bound token of
// the metrics identity once it has one.
func metricsToken(facts Facts) string {
	if identity := facts.MetricsIdentity; identity != nil && identity.Token != nil {
		return identity.Token.Token
	}
	return facts.MetricsToken
}

// configHash identifies the rendered configuration. A configuration holding a token is
// hashed as rendered with the token's version in place of the token.
func configHash(cr *v1.SecondaryScheduler, facts Facts, config string) (string, error) {
	for _, token := range facts.CustomConfigTokens {
		config = strings.ReplaceAll(config, token, "token-version:"+facts.MetricsTokenVersion)
	}
	if facts.MetricsToken != "" {
		facts.MetricsToken = "token-version:" + facts.MetricsTokenVersion
		redacted, err := SchedulerConfig(cr, facts)
		if err != nil {
			return "", err
		}
		config = redacted
	}
	if facts.ExtenderTLSVersion != "" {
		config += "\n# extender TLS: " + facts.ExtenderTLSVersion
	}
	return ConfigHash(config), nil
}

// newObject loads an asset and gives it its name and namespace (empty for cluster-scoped
// objects); ownObject marks it as cr's once it is converted.
func newObject(asset, name, namespace string) (*yaml.RNode, error) {
	node, err := loadAsset(asset)
	if err != nil {
		return nil, err
	}
	if err := setJSONValue(node, name, yaml.MetadataField, yaml.NameField); err != nil {
		return nil, err
	}
	if namespace != "" {
		if err := setJSONValue(node, namespace, yaml.MetadataField, yaml.NamespaceField); err != nil {
			return nil, err
		}
	}
	return node, nil
}

// ownObject converts an object of cr's scheduler and marks it as cr's: it carries cr's
// owner labels, and an object in cr's namespace is controlled by cr, for garbage
// collection. The marks are set on the converted object, which is what the API server
// receives, rather than on its nodes: no YAML text holds them, and setting them with kyaml
// (a YAML 1.1 check of each label) and sigs.k8s.io/yaml (the owner reference) made about
// half of a rendering's allocations.
func ownObject(cr *v1.SecondaryScheduler, node *yaml.RNode) (*unstructured.Unstructured, error) {
	object, err := toUnstructured(node)
	if err != nil {
		return nil, err
	}
	object.SetLabels(OwnerLabels(cr))
	if object.GetNamespace() == cr.Namespace {
		object.SetOwnerReferences([]metav1.OwnerReference{{
			APIVersion:         v1.GroupVersion.String(),
			Kind:               "SecondaryScheduler",
			Name:               cr.Name,
			UID:                cr.UID,
			Controller:         ptr.To(true),
			BlockOwnerDeletion: ptr.To(true),
		}})
	}
	return object, nil
}

// setSchedulerSubject makes the scheduler's ServiceAccount the subject of a binding.
func setSchedulerSubject(node *yaml.RNode, cr *v1.SecondaryScheduler) error {
	return setServiceAccountSubject(node, cr.Namespace, WorkloadName(cr))
}

// setServiceAccountSubject makes ServiceAccount namespace/name the subject of a binding.
func setServiceAccountSubject(node *yaml.RNode, namespace, name string) error {
	subject, err := lookup(node, "subjects", "[kind=ServiceAccount]")
	if err != nil {
		return err
	}
	if err := setJSONValue(subject, name, "name"); err != nil {
		return err
	}
	return setJSONValue(subject, namespace, "namespace")
}

func serviceAccount(cr *v1.SecondaryScheduler, _ *Result) (*yaml.RNode, error) {
	return newObject("serviceaccount.yaml", WorkloadName(cr), cr.Namespace)
}

func clusterRoleBinding(asset, role string) func(*v1.SecondaryScheduler, *Result) (*yaml.RNode, error) {
	return func(cr *v1.SecondaryScheduler, _ *Result) (*yaml.RNode, error) {
		node, err := newObject(asset, ClusterBindingName(cr, role), "")
		if err != nil {
			return nil, err
		}
		return node, setSchedulerSubject(node, cr)
	}
}

func authenticationReaderBinding(cr *v1.SecondaryScheduler, _ *Result) (*yaml.RNode, error) {
	node, err := newObject("rolebinding-authentication-reader.yaml",
		ClusterBindingName(cr, "authentication-reader"), AuthenticationReaderNamespace)
	if err != nil {
		return nil, err
	}
	return node, setSchedulerSubject(node, cr)
}

// builder renders one object of a SecondaryScheduler.
type builder = func(*v1.SecondaryScheduler, *Result) (*yaml.RNode, error)

// leaseElection are the builders of a Lease that a component elects its leader with, in
// the SecondaryScheduler's namespace, named by name: the Lease, created empty so that it is
// provably the operator's and the component needs no permission to create Leases, and the
// Role and RoleBinding that let the ServiceAccount setSubject names read and renew that one
// Lease alone. The scheduler's (schedulerLeaseElection) and the descheduler's.
type leaseElection struct {
	lease, role, binding builder
}

// newLeaseElection makes the builders of a leader election's Lease and permissions.
func newLeaseElection(name func(*v1.SecondaryScheduler) string, setSubject func(*yaml.RNode, *v1.SecondaryScheduler) error) leaseElection {
	return leaseElection{
		lease: func(cr *v1.SecondaryScheduler, _ *Result) (*yaml.RNode, error) {
			return newObject("lease.yaml", name(cr), cr.Namespace)
		},
		role: func(cr *v1.SecondaryScheduler, _ *Result) (*yaml.RNode, error) {
			node, err := newObject("role-lease.yaml", name(cr), cr.Namespace)
			if err != nil {
				return nil, err
			}
			rule, err := lookup(node, "rules", "0")
			if err != nil {
				return nil, err
			}
			return node, setJSONValue(rule, []string{name(cr)}, "resourceNames")
		},
		binding: func(cr *v1.SecondaryScheduler, _ *Result) (*yaml.RNode, error) {
			node, err := newObject("rolebinding-lease.yaml", name(cr), cr.Namespace)
			if err != nil {
				return nil, err
			}
			if err := setJSONValue(node, name(cr), "roleRef", "name"); err != nil {
				return nil, err
			}
			return node, setSubject(node, cr)
		},
	}
}

// schedulerLeaseElection is the scheduler's leader election.
var schedulerLeaseElection = newLeaseElection(LeaseName, setSchedulerSubject)

// schedulerConfigObject holds the rendered configuration: a ConfigMap, or a Secret when
// the configuration holds a token.
func schedulerConfigObject(cr *v1.SecondaryScheduler, result *Result) (*yaml.RNode, error) {
	if result.configInSecret {
		node, err := newObject("secret-scheduler-config.yaml", ConfigObjectName(cr), cr.Namespace)
		if err != nil {
			return nil, err
		}
		return node, setJSONValue(node, map[string][]byte{schedconfig.ConfigKey: []byte(result.SchedulerConfig)}, "data")
	}
	node, err := newObject("configmap-scheduler-config.yaml", ConfigObjectName(cr), cr.Namespace)
	if err != nil {
		return nil, err
	}
	return node, setJSONValue(node, result.SchedulerConfig, "data", schedconfig.ConfigKey)
}

func service(cr *v1.SecondaryScheduler, _ *Result) (*yaml.RNode, error) {
	node, err := newObject("service.yaml", WorkloadName(cr), cr.Namespace)
	if err != nil {
		return nil, err
	}
	return node, setJSONValue(node, PodSelector(cr), "spec", "selector")
}

// verbosityLoggingConfig is the klog verbosity from which kube-scheduler logs its whole
// configuration as it starts ("Using component config", LogOrWriteConfig in
// cmd/kube-scheduler/app/options of k8s.io/kubernetes), what scheduler-plugins' build runs
// too: a token the configuration holds would land in the scheduler's log.
const verbosityLoggingConfig = 2

// SchedulerVerbosity is the -v the scheduler of cr runs with: its logLevel's, but below
// verbosityLoggingConfig when its configuration holds a token (configInSecret), whatever
// logLevel asks, so that no token reaches a log.
func SchedulerVerbosity(cr *v1.SecondaryScheduler, configInSecret bool) int {
	verbosity := cr.Spec.LogLevel.Verbosity()
	if configInSecret {
		return min(verbosity, verbosityLoggingConfig-1)
	}
	return verbosity
}

// podDisruptionBudget lets a drain evict one HighlyAvailable replica at a time, so that
// another is running to take the lease (the asset says why it is built so).
func podDisruptionBudget(cr *v1.SecondaryScheduler, _ *Result) (*yaml.RNode, error) {
	node, err := newObject("poddisruptionbudget.yaml", WorkloadName(cr), cr.Namespace)
	if err != nil {
		return nil, err
	}
	return node, setJSONValue(node, PodSelector(cr), "spec", "selector", "matchLabels")
}

func deployment(cr *v1.SecondaryScheduler, result *Result) (*yaml.RNode, error) {
	node, err := newObject("deployment.yaml", WorkloadName(cr), cr.Namespace)
	if err != nil {
		return nil, err
	}
	// The selector is outside the pod template: JSON only.
	if err := setJSONValue(node, PodSelector(cr), "spec", "selector", "matchLabels"); err != nil {
		return nil, err
	}
	settings := []struct {
		path  []string
		value any
	}{
		{[]string{"spec", "replicas"}, result.replicas},
		{[]string{"spec", "template", "spec", "serviceAccountName"}, WorkloadName(cr)},
	}
	for _, setting := range settings {
		if err := setValue(node, setting.value, setting.path...); err != nil {
			return nil, err
		}
	}
	if err := setStrings(node, OwnerLabels(cr), "spec", "template", "metadata", "labels"); err != nil {
		return nil, err
	}
	if err := setStrings(node, map[string]string{ConfigHashAnnotation: result.ConfigHash}, "spec", "template", "metadata", "annotations"); err != nil {
		return nil, err
	}
	container, err := lookup(node, "spec", "template", "spec", "containers", "[name=kube-scheduler]")
	if err != nil {
		return nil, err
	}
	if err := setImage(container, result.Image); err != nil {
		return nil, err
	}
	if err := setStartupProbe(container, result.startupBound); err != nil {
		return nil, err
	}
	flags := []string{"--v=" + strconv.Itoa(SchedulerVerbosity(cr, result.configInSecret))}
	if GangPlugin(cr) == GangSchedulingPlugin {
		// GangScheduling runs only with the Workload API's gate on, off by default in 1.37.
		flags = append(flags, "--feature-gates="+GenericWorkloadGate+"=true")
	}
	for _, flag := range flags {
		if err := container.PipeE(yaml.Lookup("command"), yaml.Append(yaml.NewStringRNode(flag).YNode())); err != nil {
			return nil, fmt.Errorf("append %s: %w", flag, err)
		}
	}
	volume, err := lookup(node, "spec", "template", "spec", "volumes", "[name=scheduler-config]")
	if err != nil {
		return nil, err
	}
	if result.configInSecret {
		// The scheduler logs its configuration, token included: its last log lines must not
		// become the pod's termination message, which whoever may read the pod reads, and
		// which the operator quotes in status and Events.
		if err := setNode(container, yaml.NewStringRNode("File"), "terminationMessagePolicy"); err != nil {
			return nil, err
		}
		if err := volume.PipeE(yaml.Clear("configMap")); err != nil {
			return nil, fmt.Errorf("clear configMap volume: %w", err)
		}
		if err := setNode(volume, yaml.NewStringRNode(ConfigObjectName(cr)), "secret", "secretName"); err != nil {
			return nil, err
		}
	} else if err := setNode(volume, yaml.NewStringRNode(ConfigObjectName(cr)), "configMap", "name"); err != nil {
		return nil, err
	}
	if err := mountTrustedCA(node, result.trustedCA); err != nil {
		return nil, err
	}
	if err := mountExtenderTLS(node, cr); err != nil {
		return nil, err
	}
	if err := addExtenderContainers(node, cr); err != nil {
		return nil, err
	}
	if err := setPlacement(node, cr, result); err != nil {
		return nil, err
	}
	if err := askForPluginController(node, result); err != nil {
		return nil, err
	}
	return node, setPodTemplateHash(node)
}

// askForPluginController annotates the scheduler's Deployment with the controller image of
// its release (PluginControllerImageAnnotation) while its configuration enables a plugin
// whose resources' status scheduler-plugins' controller keeps. On the Deployment rather
// than its pods, so that a change of it never rolls the scheduler.
func askForPluginController(node *yaml.RNode, result *Result) error {
	if len(schedconfig.PluginsNeedingController(result.Config)) == 0 {
		return nil
	}
	image, _ := PluginControllerImage(result.Image)
	return setJSONValue(node, image, yaml.MetadataField, yaml.AnnotationsField, PluginControllerImageAnnotation)
}

// setImage sets the scheduler container's image, the path of its binary, and for an image
// whose own user is root, a user that is not: the pod runs with runAsNonRoot, and the
// kubelet refuses to start a container whose image would run as root without one.
func setImage(container *yaml.RNode, image Image) error {
	if err := setNode(container, yaml.NewStringRNode(image.Reference), "image"); err != nil {
		return err
	}
	command, err := lookup(container, "command", "0")
	if err != nil {
		return err
	}
	command.YNode().Value = image.Binary()
	if image.Kind != KubeSchedulerImage {
		return nil
	}
	if err := setValue(container, nonRootUser, "securityContext", "runAsUser"); err != nil {
		return err
	}
	return setValue(container, nonRootUser, "securityContext", "runAsGroup")
}

// startupProbePeriod is how often the kubelet probes a scheduler that has not yet served
// /livez: often, since neither the readiness nor the liveness probe runs before it passes,
// and kube-scheduler without load-aware plugins serves within a second or two.
const startupProbePeriod = 2 * time.Second

// setStartupProbe lets the scheduler container take bound to serve /livez before the
// kubelet restarts it.
func setStartupProbe(container *yaml.RNode, bound time.Duration) error {
	failures := int64((bound + startupProbePeriod - 1) / startupProbePeriod)
	if err := setValue(container, int64(startupProbePeriod/time.Second), "startupProbe", "periodSeconds"); err != nil {
		return err
	}
	return setValue(container, failures, "startupProbe", "failureThreshold")
}

// setPodTemplateHash sets, last, the hash of everything else in the pod template.
func setPodTemplateHash(deployment *yaml.RNode) error {
	template, err := lookup(deployment, "spec", "template")
	if err != nil {
		return err
	}
	text, err := template.String()
	if err != nil {
		return fmt.Errorf("serialize the pod template: %w", err)
	}
	return setNode(template, yaml.NewStringRNode(ConfigHash(text)), "metadata", "annotations", PodTemplateHashAnnotation)
}
