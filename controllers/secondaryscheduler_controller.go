// Package controllers holds the reconciler of SecondarySchedulers. It gathers facts
// (cluster version, the user's configuration), hands them to internal/render, applies
// what comes back, and reports what it observes in status.
package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/promdiscovery"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refwatch"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/tenancy"
)

// FieldOwner is the server-side apply field manager of every object the operator writes.
const FieldOwner = "secondary-scheduler-operator"

// Finalizer lets the operator delete the objects that an owner reference cannot reach:
// the ClusterRoleBindings and the RoleBinding in kube-system.
const Finalizer = "operator.secondary-scheduler.io/cleanup"

// SecondarySchedulerReconciler keeps each SecondaryScheduler's scheduler in its desired state.
type SecondarySchedulerReconciler struct {
	client.Client
	// APIReader reads the ConfigMaps users reference, which the scoped cache does not hold.
	APIReader client.Reader
	// Version tells the cluster's Kubernetes version, for the default image.
	Version discovery.ServerVersionInterface
	// Recorder emits Events on SecondarySchedulers.
	Recorder events.EventRecorder
	// ConfigMapWatches watches the ConfigMaps named by spec.schedulerConfig.
	ConfigMapWatches *refwatch.Watches
	// SecretWatches watches the Secrets named by spec.profile.metrics.tokenSecretRef.
	SecretWatches *refwatch.Watches
	// CABundleWatches watches the ConfigMaps holding the metrics provider's CA bundle.
	CABundleWatches *refwatch.Watches
	// MetricsProber probes the metrics of load-aware schedulers.
	MetricsProber *MetricsProber
	// Clock tells when metrics tokens are due for renewal; nil for the real clock.
	Clock clock.PassiveClock
	// Tenancy says in which namespaces schedulers may run.
	Tenancy tenancy.Policy
	// PrometheusNamespaces are the only namespaces where Prometheus is discovered (and so
	// the only ones a discovered endpoint, which may receive a token, can come from).
	PrometheusNamespaces []string
	// MetricsTokenClusterRoles are the ClusterRoles a metrics token's ServiceAccount may be
	// bound to (the admin's allow-list; the operator also needs bind on each).
	MetricsTokenClusterRoles []string
}

// now is the reconciler's time, for metrics tokens.
func (r *SecondarySchedulerReconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// Reconcile brings one SecondaryScheduler's scheduler to its desired state and writes status once.
func (r *SecondarySchedulerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cr := &v1.SecondaryScheduler{}
	if err := r.Get(ctx, req.NamespacedName, cr); err != nil {
		if apierrors.IsNotFound(err) {
			r.forgetReferences(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log := withOperatorLogLevel(logf.FromContext(ctx), cr.Spec.OperatorLogLevel)
	ctx = logf.IntoContext(ctx, log)

	if !cr.DeletionTimestamp.IsZero() {
		return requeueIfWaiting(r.finalize(ctx, cr))
	}
	if !controllerutil.ContainsFinalizer(cr, Finalizer) {
		patch := client.MergeFrom(cr.DeepCopy())
		controllerutil.AddFinalizer(cr, Finalizer)
		if err := r.Patch(ctx, cr, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
	}

	status, reconcileErr := r.reconcile(ctx, cr)
	if err := r.writeStatus(ctx, cr, status); err != nil {
		if apierrors.IsConflict(err) {
			// The resource changed since it was read; reconcile its newest version.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, err
	}
	if reconcileErr == nil && cr.Spec.Profile.ReadsPrometheus() {
		// Metrics come and go without an event: probe them again in a while, and renew
		// the metrics token when it is due.
		return ctrl.Result{RequeueAfter: nextMetricsCheck(status, r.MetricsProber.Interval, r.now())}, nil
	}
	return requeueIfWaiting(reconcileErr)
}

// reconcile acts on cr according to its management state and returns its new status.
// An error means a transient failure worth a retry; problems only the user can fix are
// reported in the returned status instead.
func (r *SecondarySchedulerReconciler) reconcile(ctx context.Context, cr *v1.SecondaryScheduler) (*v1.SecondarySchedulerStatus, error) {
	status := cr.Status.DeepCopy()
	status.ObservedGeneration = cr.Generation
	status.SchedulerName = cr.EffectiveSchedulerName()
	status.Profile = cr.EffectiveProfile()
	conditions := newConditionSetter(cr, status)

	switch cr.EffectiveManagementState() {
	case v1.Removed:
		r.forgetReferences(client.ObjectKeyFromObject(cr))
		status.ReadyReplicas = 0
		conditions.setAll(v1.ReasonRemoved, "managementState is Removed: the scheduler and its objects were deleted; set managementState to Managed to run it again")
		if err := r.stopScheduler(ctx, cr); err != nil {
			return status, err
		}
		if err := r.pruneRecordingRules(ctx, cr, nil); err != nil {
			return status, err
		}
		return status, deleteChildren(ctx, r.Client, cr, allChildKinds)
	case v1.Unmanaged:
		_, err := r.observeDeployment(ctx, cr, status, conditions)
		conditions.set(v1.ConditionProgressing, false, v1.ReasonUnmanaged, "managementState is Unmanaged: the operator leaves the scheduler's objects as they are")
		conditions.set(v1.ConditionDegraded, false, v1.ReasonUnmanaged, "managementState is Unmanaged: the operator leaves the scheduler's objects as they are")
		return status, err
	}

	desired, problem, err := r.desiredScheduler(ctx, cr)
	if err == nil && problem == nil {
		problem, err = r.takenName(ctx, cr, desired.rendered.Objects)
	}
	if err != nil {
		return status, err
	}
	if problem != nil {
		// Nothing is applied: the scheduler keeps running with its last good configuration.
		logf.FromContext(ctx).V(1).Info("desired scheduler cannot be rendered", "reason", problem.Reason, "message", problem.Message)
		conditions.set(v1.ConditionDegraded, true, problem.Reason, problem.Message+runningNote(status))
		deployment, err := r.observeDeployment(ctx, cr, status, conditions)
		setProgressing(conditions, deployment)
		if err == nil && problem.Reason == v1.ReasonObjectNameTaken {
			err = errWaiting // no event tells when someone else's object goes away
		}
		if metricsProblems[problem.Reason] {
			conditions.set(v1.ConditionMetricsAvailable, false, problem.Reason, problem.Message)
			if problem.Reason == v1.ReasonPrometheusNotFound {
				status.Metrics = nil
			}
		}
		return status, err
	}
	for _, object := range desired.rendered.Objects {
		if err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(object), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			if apierrors.IsConflict(err) {
				// A precondition failed (the kept metrics token changed since it was read):
				// nothing is wrong, the next reconcile reads it anew.
				return status, fmt.Errorf("apply %s %s: changed meanwhile: %w", object.GetKind(), client.ObjectKeyFromObject(object), err)
			}
			conditions.set(v1.ConditionDegraded, true, v1.ReasonApplyFailed,
				fmt.Sprintf("applying %s %s failed: %v", object.GetKind(), client.ObjectKeyFromObject(object), err))
			return status, fmt.Errorf("apply %s %s: %w", object.GetKind(), client.ObjectKeyFromObject(object), err)
		}
	}
	if err := pruneChildren(ctx, r.Client, cr, desired.rendered.Objects); err != nil {
		return status, err
	}
	if desired.installsRecordingRules() || status.Metrics != nil && status.Metrics.RecordingRules != "" {
		if err := r.pruneRecordingRules(ctx, cr, desired.rendered.Objects); err != nil {
			return status, err
		}
	}
	rendered := desired.rendered
	status.Image, status.ImageSource, status.ConfigHash = rendered.Image, rendered.ImageSource, rendered.ConfigHash
	deployment, err := r.observeDeployment(ctx, cr, status, conditions)
	if err != nil {
		return status, err
	}
	setProgressing(conditions, deployment)
	setDegradedFromRollout(conditions, deployment)
	return status, r.setMetricsConditions(ctx, cr, desired, status, conditions)
}

// nextMetricsCheck is how long until the metrics are probed again or the metrics token
// is renewed, whichever comes first.
func nextMetricsCheck(status *v1.SecondarySchedulerStatus, probeInterval time.Duration, now time.Time) time.Duration {
	if status.Metrics == nil || status.Metrics.TokenRenewTime == nil {
		return probeInterval
	}
	// A second late, so that the token is due when the reconcile reads it.
	untilRenewal := status.Metrics.TokenRenewTime.Sub(now) + time.Second
	return max(min(untilRenewal, probeInterval), time.Second)
}

// metricsProblems are the problems that keep a load-aware scheduler from reading its
// metrics, which MetricsAvailable reports as well as Degraded.
var metricsProblems = map[v1.ConditionReason]bool{
	v1.ReasonPrometheusNotFound: true, v1.ReasonTokenSecretNotFound: true, v1.ReasonTokenKeyMissing: true,
	v1.ReasonTokenRequestFailed: true, v1.ReasonCABundleNotFound: true, v1.ReasonCABundleInvalid: true,
	v1.ReasonRecordingRulesNotInstalled: true,
}

// runningNote tells, after a problem, that the last good scheduler still runs.
func runningNote(status *v1.SecondarySchedulerStatus) string {
	if status.ConfigHash == "" {
		return ""
	}
	return fmt.Sprintf(" The scheduler keeps running with its last good configuration (hash %s) until this is fixed.", status.ConfigHash)
}

// desiredState is a rendered scheduler and the facts about its metrics source that
// status reports, gathered once per reconcile.
type desiredState struct {
	rendered *render.Result
	// prometheus is the endpoint a load-aware scheduler reads, nil when it reads none.
	prometheus *promdiscovery.Endpoint
	// access is how the scheduler reaches its metrics provider.
	access *metricsAccess
	// recordingRulesPlan is what becomes of the recording rules the resource asks for.
	recordingRulesPlan recordingRulesPlan
}

// installsRecordingRules reports whether the desired objects include a PrometheusRule.
func (d *desiredState) installsRecordingRules() bool {
	return slices.ContainsFunc(d.rendered.Objects, func(object *unstructured.Unstructured) bool {
		return object.GroupVersionKind() == prometheusRuleGVK
	})
}

// recordingRules is the namespace/name of the PrometheusRule that defines the scheduler's
// series, its own or the one it shares, empty for none.
func (d *desiredState) recordingRules() string {
	for _, object := range d.rendered.Objects {
		if object.GroupVersionKind() == prometheusRuleGVK {
			return object.GetNamespace() + "/" + object.GetName()
		}
	}
	return d.recordingRulesPlan.shared
}

// desiredScheduler gathers the facts cr's scheduler depends on and renders it. A
// problem is returned for what only the user can fix.
func (r *SecondarySchedulerReconciler) desiredScheduler(ctx context.Context, cr *v1.SecondaryScheduler) (*desiredState, *schedconfig.Problem, error) {
	if problem, err := r.schedulerNameConflict(ctx, cr); problem != nil || err != nil {
		return nil, problem, err
	}
	customConfig, problem, err := r.customConfig(ctx, cr)
	if problem != nil || err != nil {
		return nil, problem, err
	}
	desired := &desiredState{}
	facts := render.Facts{CustomConfig: customConfig}
	if cr.Spec.Profile.ReadsPrometheus() {
		desired.prometheus, err = r.prometheusEndpoint(ctx, cr)
		var forbidden *forbiddenError
		if errors.As(err, &forbidden) {
			return nil, &schedconfig.Problem{Reason: v1.ReasonPrometheusNotFound, Message: fmt.Sprintf(
				"profile.metrics gives no Prometheus address and none was found (searched: %s), but %v; "+
					"set spec.profile.metrics.address, or grant the operator get and list on them", promdiscovery.Searched, forbidden)}, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if desired.prometheus == nil {
			return nil, &schedconfig.Problem{Reason: v1.ReasonPrometheusNotFound, Message: fmt.Sprintf(
				"profile.metrics gives no Prometheus address and none was found (searched: %s); set spec.profile.metrics.address", promdiscovery.Searched)}, nil
		}
		facts.PrometheusAddress = desired.prometheus.URL
		if desired.recordingRulesPlan, err = r.planRecordingRules(ctx, cr, desired.prometheus); err != nil {
			return nil, nil, err
		}
		facts.RecordingRules = desired.recordingRulesPlan.target
	}
	if desired.access, problem, err = r.metricsAccess(ctx, cr, desired.prometheus); problem != nil || err != nil {
		return nil, problem, err
	}
	facts.MetricsToken, facts.MetricsIdentity, facts.TrustedCA = desired.access.token, desired.access.identity, desired.access.trustedCA
	if cr.Spec.SchedulerImage == "" {
		if facts.KubernetesMinor, err = r.kubernetesMinor(); err != nil {
			return nil, &schedconfig.Problem{Reason: v1.ReasonDiscoveryFailed, Message: fmt.Sprintf(
				"reading the cluster's Kubernetes version, to choose the default scheduler image, failed: %v; set spec.schedulerImage to skip this", err)}, nil
		}
	}
	if desired.rendered, err = render.Render(cr, facts); err != nil {
		return nil, nil, err
	}
	return desired, nil, nil
}

// customConfig reads and checks the user's configuration of profile Custom.
func (r *SecondarySchedulerReconciler) customConfig(ctx context.Context, cr *v1.SecondaryScheduler) ([]byte, *schedconfig.Problem, error) {
	if cr.EffectiveProfile() != v1.CustomProfile {
		r.ConfigMapWatches.Reference(client.ObjectKeyFromObject(cr), nil)
		return nil, nil, nil
	}
	key := types.NamespacedName{Namespace: cr.Namespace, Name: cr.Spec.SchedulerConfig}
	r.ConfigMapWatches.Reference(client.ObjectKeyFromObject(cr), &key)
	configMap := &corev1.ConfigMap{}
	source := "ConfigMap " + key.String()
	if err := r.APIReader.Get(ctx, key, configMap); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &schedconfig.Problem{Reason: v1.ReasonConfigMapNotFound, Message: fmt.Sprintf(
				"%s, named by spec.schedulerConfig, does not exist; create it with key %s holding a KubeSchedulerConfiguration, or correct spec.schedulerConfig.",
				source, schedconfig.ConfigKey)}, nil
		}
		return nil, nil, fmt.Errorf("read %s: %w", source, err)
	}
	data, ok := configMap.Data[schedconfig.ConfigKey]
	if !ok {
		return nil, &schedconfig.Problem{Reason: v1.ReasonConfigKeyMissing, Message: fmt.Sprintf(
			"%s has no key %s (its keys: %s); put the KubeSchedulerConfiguration under %s.",
			source, schedconfig.ConfigKey, keysOf(configMap), schedconfig.ConfigKey)}, nil
	}
	if _, err := schedconfig.Parse([]byte(data), cr.EffectiveSchedulerName(), source); err != nil {
		if problem, ok := schedconfig.AsProblem(err); ok {
			return nil, problem, nil
		}
		return nil, nil, err
	}
	return []byte(data), nil, nil
}

func keysOf(configMap *corev1.ConfigMap) string {
	keys := make([]string, 0, len(configMap.Data)+len(configMap.BinaryData))
	for key := range configMap.Data {
		keys = append(keys, key)
	}
	for key := range configMap.BinaryData {
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}

// kubernetesMinor reads the cluster's minor version ("37" or "37+" for 1.37).
func (r *SecondarySchedulerReconciler) kubernetesMinor() (int, error) {
	info, err := r.Version.ServerVersion()
	if err != nil {
		return 0, err
	}
	minor, err := strconv.Atoi(strings.TrimRight(info.Minor, "+"))
	if err != nil {
		return 0, fmt.Errorf("parse minor version %q: %w", info.Minor, err)
	}
	return minor, nil
}

// observeDeployment reads the scheduler's Deployment and sets readyReplicas and Available.
func (r *SecondarySchedulerReconciler) observeDeployment(ctx context.Context, cr *v1.SecondaryScheduler,
	status *v1.SecondarySchedulerStatus, conditions *conditionSetter) (*appsv1.Deployment, error) {
	deployment := &appsv1.Deployment{}
	key := types.NamespacedName{Namespace: cr.Namespace, Name: render.SchedulerName(cr)}
	if err := r.Get(ctx, key, deployment); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("read Deployment %s: %w", key, err)
		}
		status.ReadyReplicas = 0
		conditions.set(v1.ConditionAvailable, false, v1.ReasonSchedulerNotDeployed, "the scheduler's Deployment "+key.String()+" does not exist")
		return nil, nil
	}
	status.ReadyReplicas = deployment.Status.ReadyReplicas
	if deployment.Status.ReadyReplicas > 0 {
		conditions.set(v1.ConditionAvailable, true, v1.ReasonSchedulerReady, fmt.Sprintf(
			"%d of %d scheduler pods ready; pods with spec.schedulerName: %s are scheduled by it",
			deployment.Status.ReadyReplicas, ptrValue(deployment.Spec.Replicas), cr.EffectiveSchedulerName()))
	} else {
		conditions.set(v1.ConditionAvailable, false, v1.ReasonNoReadyScheduler, fmt.Sprintf(
			"no scheduler pod is ready; pods with spec.schedulerName: %s stay Pending until one is; see kubectl -n %s get pods -l %s=%s",
			cr.EffectiveSchedulerName(), cr.Namespace, render.LabelInstance, cr.Name))
	}
	return deployment, nil
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// writeStatus writes status when it changed, and emits an Event for each condition that
// changed, with the condition's reason.
func (r *SecondarySchedulerReconciler) writeStatus(ctx context.Context, cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus) error {
	if equality.Semantic.DeepEqual(cr.Status, *status) {
		return nil
	}
	changed := changedConditions(cr.Status.Conditions, status.Conditions)
	updated := cr.DeepCopy()
	updated.Status = *status
	if err := r.Status().Update(ctx, updated); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	for _, condition := range changed {
		eventType := corev1.EventTypeNormal
		if isBad(condition) {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(updated, nil, eventType, condition.Reason, condition.Type, "%s=%s: %s", condition.Type, condition.Status, condition.Message)
	}
	return nil
}

// finalize deletes what owner references cannot, then lets the SecondaryScheduler go.
func (r *SecondarySchedulerReconciler) finalize(ctx context.Context, cr *v1.SecondaryScheduler) error {
	r.forgetReferences(client.ObjectKeyFromObject(cr))
	if !controllerutil.ContainsFinalizer(cr, Finalizer) {
		return nil
	}
	if err := r.stopScheduler(ctx, cr); err != nil {
		return err
	}
	if err := deleteChildren(ctx, r.Client, cr, unownedChildKinds); err != nil {
		return err
	}
	if err := r.pruneRecordingRules(ctx, cr, nil); err != nil {
		return err
	}
	patch := client.MergeFrom(cr.DeepCopy())
	controllerutil.RemoveFinalizer(cr, Finalizer)
	if err := r.Patch(ctx, cr, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	logf.FromContext(ctx).V(1).Info("deleted the scheduler's cluster-scoped objects")
	return nil
}

// forgetReferences stops watching what a SecondaryScheduler referenced.
func (r *SecondarySchedulerReconciler) forgetReferences(key types.NamespacedName) {
	r.ConfigMapWatches.Reference(key, nil)
	r.SecretWatches.Reference(key, nil)
	r.CABundleWatches.Reference(key, nil)
	r.MetricsProber.forget(key)
}
