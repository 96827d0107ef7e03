// Package controllers holds the reconciler of SecondarySchedulers, which
// NewSecondarySchedulerReconciler makes whole. A reconcile runs the stages in order,
// each a package or a type whose types say what it may do: the admission check
// (admissionpolicy.go, which also keeps the policy in place); internal/gather, which
// reads every fact and holds readers only; internal/render, pure; internal/ownership,
// which proves no object of the names needed is someone else's and reads only; the
// credentials stage (credentials.go, a metrics token) and the failsafe's verdict on the
// metrics (prober.go), after which the scheduler is rendered anew if they changed it; the
// apply stage (apply.go); internal/observe, which reads what runs. The credentials, the
// apply, the deletes and the finalizer are the writer's (writer.go): but for status and
// Events, the reconciler writes through it alone. Status is derived from what they found
// (internal/report) and written once (internal/statusapply, server-side apply), only for
// a generation applied or refused. A stage that finds what only the user can fix returns
// an internal/refusal error, which stops the stages after it and becomes the Degraded
// condition; every reason the conditions give is declared, with its precedence, in
// internal/reasons. Gathering, the ownership check and observing are proven unable to
// write by internal/readonly/readonlytest, and to be given no writer by
// TestReadStagesGetNoWriter.
package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/desired"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/pendingpods"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/report"
)

// FieldOwner is the server-side apply field manager of every object the operator writes.
const FieldOwner = "secondary-scheduler-operator"

// EventReporter is the reporting controller the operator's Events name.
const EventReporter = "secondary-scheduler-operator"

// Finalizer lets the operator delete the objects that an owner reference cannot reach:
// the ClusterRoleBindings and the RoleBinding in kube-system.
const Finalizer = "operator.secondary-scheduler.io/cleanup"

// Reconcile brings one SecondaryScheduler's scheduler to its desired state and writes
// status once. A transient failure writes no status: the status keeps describing the
// last generation that was applied or refused, and the reconcile is retried.
func (r *SecondarySchedulerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cr := &v1.SecondaryScheduler{}
	if err := r.cache.Get(ctx, req.NamespacedName, cr); err != nil {
		if apierrors.IsNotFound(err) {
			r.forgetReferences(req.NamespacedName)
			r.status.Forget(req.NamespacedName)
			r.finalized.Delete(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The status this reconcile starts from is the newest: the one last written, when the
	// cache does not have it yet.
	r.status.Newest(cr)
	log := withOperatorLogLevel(logf.FromContext(ctx), cr.Spec.OperatorLogLevel)
	ctx = logf.IntoContext(ctx, log)

	if !cr.DeletionTimestamp.IsZero() {
		return requeueOnConflict(r.finalize(ctx, cr))
	}
	status, outcome, err := r.reconcile(ctx, cr)
	if err != nil {
		if !isSecondarySchedulerConflict(err) {
			r.reconcileErrors.Transient(err)
		}
		return requeueOnConflict(err)
	}
	if err := r.writeStatus(ctx, cr, status); err != nil {
		r.reconcileErrors.Transient(err)
		return ctrl.Result{}, err
	}
	r.warnOfImageSkew(cr, status, outcome)
	r.announceScoring(cr, status)
	return ctrl.Result{RequeueAfter: outcome.requeueAfter}, nil
}

// requeueOnConflict returns err, but for a conflict on the SecondaryScheduler (a
// finalizer patch refused because the resource changed since it was read), which is no
// failure: its newest version is reconciled in a second.
func requeueOnConflict(err error) (ctrl.Result, error) {
	if isSecondarySchedulerConflict(err) {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	return ctrl.Result{}, err
}

// imageSkewPointer ends the Available message of a scheduler whose image is outside
// Kubernetes' version-skew policy for the cluster.
const imageSkewPointer = "Its image is outside Kubernetes' version-skew policy for this cluster: status.imageSource says why and which image to use"

// outcome is what a reconcile that wrote status asks for next.
type outcome struct {
	// requeueAfter is when to look again for what no watch reports (metrics, a Lease,
	// pods terminating or failing to start, someone else's object going away); zero for
	// never.
	requeueAfter time.Duration
	// imageSkew says that the applied image is outside Kubernetes' version-skew policy,
	// empty when it is not.
	imageSkew string
}

// warnOfImageSkew emits a Warning Event when the image that status now shows is outside
// the version-skew policy and status showed another imageSource before: once per change
// of that sentence (it names the image's and the cluster's versions), not on every
// reconcile. cr holds the status as it was read.
func (r *SecondarySchedulerReconciler) warnOfImageSkew(cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus, next outcome) {
	if next.imageSkew == "" || cr.Status.ImageSource == status.ImageSource {
		return
	}
	r.recorder.Eventf(cr, nil, corev1.EventTypeWarning, string(v1.ReasonImageVersionSkew), "Image", "image %s: %s", status.Image, next.imageSkew)
}

// reconcile acts on cr according to its management state and returns its new status.
// An error means a transient failure worth a retry, and no status is written; problems
// only the user can fix are reported in the returned status instead.
func (r *SecondarySchedulerReconciler) reconcile(ctx context.Context, cr *v1.SecondaryScheduler) (*v1.SecondarySchedulerStatus, outcome, error) {
	status := cr.Status.DeepCopy()
	status.Profile = cr.EffectiveProfile()
	if status.SchedulerName == "" {
		status.SchedulerName = cr.EffectiveSchedulerName()
	}
	conditions := report.NewConditions(cr, status)
	var next outcome
	var err error
	switch {
	case !r.tenancy.Allows(cr.Namespace):
		err = r.refuse(ctx, cr, status, conditions, &refusal.Error{Reason: v1.ReasonNamespaceNotAllowed, Message: r.tenancy.Refusal(cr.Namespace)})
	case cr.EffectiveManagementState() == v1.Removed:
		next, err = r.reconcileRemoved(ctx, cr, status, conditions)
	case cr.EffectiveManagementState() == v1.Unmanaged:
		err = r.reconcileUnmanaged(ctx, cr, status, conditions)
	default:
		next, err = r.reconcileManaged(ctx, cr, status, conditions)
	}
	if err != nil {
		return nil, outcome{}, err
	}
	due, err := r.reportPendingPods(ctx, cr, status, conditions)
	if err != nil {
		return nil, outcome{}, err
	}
	next.requeueAfter = report.Sooner(next.requeueAfter, due)
	if due, err = r.reportRouting(ctx, cr, status, conditions); err != nil {
		return nil, outcome{}, err
	}
	next.requeueAfter = report.Sooner(next.requeueAfter, due)
	// Only now: the generation was applied, or refused with a reason.
	status.ObservedGeneration = cr.Generation
	report.ReconcilingAndStalled(conditions, status)
	return status, next, nil
}

// reportPendingPods reports the pods stuck waiting for cr's scheduler, once the other
// conditions are set (they tell why), and returns when a pod waiting now reaches the
// threshold, zero for none. For a scheduler that holds namespaces to ElasticQuotas, it
// reads whether a quota holds the oldest (two requests, made only while one waits).
func (r *SecondarySchedulerReconciler) reportPendingPods(ctx context.Context, cr *v1.SecondaryScheduler,
	status *v1.SecondarySchedulerStatus, conditions *report.Conditions) (time.Duration, error) {
	if r.pendingPods == nil {
		return 0, nil
	}
	pending, err := r.pendingPods.Find(report.ServedNames(status), cr.EffectivePendingPodThreshold(), r.now())
	if err != nil {
		return 0, err
	}
	var quota *pendingpods.QuotaRefusal
	if pending.Count > 0 && report.HoldsToQuotas(status) {
		if quota, err = r.read.gather.QuotaRefusal(ctx, pending.Oldest); err != nil {
			return 0, err
		}
	}
	report.PendingPods(cr, status, conditions, pending, quota)
	return pending.NextDue, nil
}

// reconcileRemoved deletes the scheduler and every object of it, keeping the resource.
func (r *SecondarySchedulerReconciler) reconcileRemoved(ctx context.Context, cr *v1.SecondaryScheduler,
	status *v1.SecondarySchedulerStatus, conditions *report.Conditions) (outcome, error) {
	r.forgetReferences(client.ObjectKeyFromObject(cr))
	report.Removed(conditions, status, "managementState is Removed: the scheduler and its objects were deleted; set managementState to Managed to run it again")
	if err := r.write.stopScheduler(ctx, cr); errors.Is(err, errWaiting) {
		stopping := "managementState is Removed: the scheduler's Deployment is deleted and its pods are stopping"
		conditions.Set(v1.ConditionProgressing, true, v1.ReasonRemoved, stopping+"; waiting for them to stop")
		conditions.Set(v1.ConditionAvailable, false, v1.ReasonRemoved, stopping+": a leader among them places pods until it stops")
		return outcome{requeueAfter: 3 * time.Second}, nil
	} else if err != nil {
		return outcome{}, err
	}
	if err := r.write.pruneRecordingRules(ctx, cr, nil); err != nil {
		return outcome{}, err
	}
	return outcome{}, r.write.deleteChildren(ctx, cr, allChildKinds)
}

// reconcileUnmanaged only reports what runs.
func (r *SecondarySchedulerReconciler) reconcileUnmanaged(ctx context.Context, cr *v1.SecondaryScheduler,
	status *v1.SecondarySchedulerStatus, conditions *report.Conditions) error {
	if _, err := r.observeScheduler(ctx, cr, status, conditions, nil); err != nil {
		return err
	}
	message := "managementState is Unmanaged: the operator leaves the scheduler's objects as they are"
	report.NotChecked(conditions, status, message+", and checks nothing of the configuration they run")
	conditions.Set(v1.ConditionProgressing, false, v1.ReasonUnmanaged, message)
	conditions.Set(v1.ConditionDegraded, false, v1.ReasonUnmanaged, message)
	return nil
}

// reconcileManaged applies the desired scheduler (applyDesired), or reports why it
// cannot (a refusal, internal/refusal), then observes what runs and derives the
// conditions from it: Degraded from the foremost problem found, as internal/reasons
// ranks them.
func (r *SecondarySchedulerReconciler) reconcileManaged(ctx context.Context, cr *v1.SecondaryScheduler,
	status *v1.SecondarySchedulerStatus, conditions *report.Conditions) (outcome, error) {
	done, err := r.applyDesired(ctx, cr)
	if refused, ok := refusal.As(err); ok {
		return r.retryAfterRefusal(status, refused), r.refuse(ctx, cr, status, conditions, refused)
	}
	if err != nil {
		return outcome{}, err
	}
	found, rendered := done.found, done.rendered
	status.SchedulerName, status.SchedulerNames = schedulerNameOf(cr, found.SchedulerNames), found.SchedulerNames
	status.Image, status.ImageSource, status.ConfigHash = rendered.Image.Reference, rendered.Image.Source, rendered.ConfigHash
	status.Replicas, status.NodePool = render.Replicas(cr, found.Render.PlacementNodes), found.Placement.Pool
	observed, err := r.observeScheduler(ctx, cr, status, conditions, done.deployment)
	if err != nil {
		return outcome{}, err
	}
	if err := r.reportPluginController(ctx, status, rendered); err != nil {
		return outcome{}, err
	}
	if err := r.reportDescheduling(ctx, cr, found, rendered, status, conditions); err != nil {
		return outcome{}, err
	}
	report.Gang(status, rendered.Config)
	if rendered.Image.Skew != "" {
		// Pointed to, not repeated: status.imageSource and the ImageVersionSkew Event
		// carry the whole sentence, and Available must stay readable.
		conditions.AppendToMessage(v1.ConditionAvailable, imageSkewPointer)
	}
	report.Progressing(conditions, observed)
	metricsProblem, metricsRecheck := reportMetrics(cr, found, done.metrics, status, conditions)
	extenderProblem, extenderRecheck, err := r.reportExtenders(ctx, cr, found, observed.Leader, status, conditions)
	if err != nil {
		return outcome{}, err
	}
	report.Degraded(conditions, report.PlacementProblem(cr, found.Placement), extenderProblem, metricsProblem, observed.PodProblem,
		report.RolloutStalled(observed.Deployment))
	next := outcome{requeueAfter: observed.RequeueAfter, imageSkew: rendered.Image.Skew}
	if rendered.DeschedulerPause == render.PausedSchedulerRollingOut && servedConfigHash(&v1.SecondaryScheduler{Status: *status}) == rendered.ConfigHash {
		// The scheduler rendered now serves, as this reconcile saw: the next one resumes
		// the descheduler, and nothing else may bring it soon.
		next.requeueAfter = report.Sooner(next.requeueAfter, time.Second)
	}
	if extenderRecheck > 0 {
		// Extenders come and go without an event: probe them again in a while.
		next.requeueAfter = report.Sooner(next.requeueAfter, extenderRecheck)
	}
	if metricsRecheck > 0 {
		// Metrics come and go without an event: probe them again in a while, and renew
		// the metrics token when it is due.
		next.requeueAfter = report.Sooner(next.requeueAfter, nextMetricsCheck(status, metricsRecheck, r.now()))
	}
	return next, nil
}

// applied is what applyDesired found and applied.
type applied struct {
	// found are the facts the applied scheduler was rendered from.
	found *gather.Facts
	// rendered is the scheduler applied.
	rendered *render.Result
	// deployment is the scheduler's Deployment as applied.
	deployment *appsv1.Deployment
	// metrics is the failsafe's verdict on the metrics the scheduler reads, nil when it
	// reads none.
	metrics *metricsJudgement
}

// applyDesired runs the stages that end with the desired scheduler applied: admission
// check and gather (read only) -> render (pure) -> ownership check, while the finalizer
// starts being added -> credentials (a new metrics token) and the failsafe's verdict on
// the metrics, and a render with them when they change it -> apply, whose objects that
// only the finalizer deletes wait for it (needsFinalizer). A refusal from any stage
// stops the others: nothing in the cluster but cr's finalizer changes before the
// ownership check has passed over what the cache holds, and nothing at all unless the
// admission policy checked who created or changed cr. Every write then carries its own
// proof (applyIfChanged): an object the cache does not hold is created, so that a name
// someone else took is refused, not taken over.
func (r *SecondarySchedulerReconciler) applyDesired(ctx context.Context, cr *v1.SecondaryScheduler) (result *applied, err error) {
	if err := cr.Spec.Undecodable(); err != nil {
		return nil, refusal.New(v1.ReasonInvalidSpec, "the operator did not read this spec: %v; correct that field "+
			"(this resource was stored before the API refused such values)", err)
	}
	if err := r.checkAdmission(ctx, cr); err != nil {
		return nil, err
	}
	found, err := r.gatherFacts(ctx, cr)
	if err != nil {
		return nil, err
	}
	found = found.WithServedConfigHash(servedConfigHash(cr))
	rendered, err := desired.Scheduler(cr, found)
	if err != nil {
		return nil, err
	}
	live, finalizer, err := r.checkOwnershipAndAddFinalizer(ctx, cr, rendered.Objects)
	if err != nil {
		return nil, err
	}
	// Whatever happens next, cr takes the finalizer patch's result before status is
	// written from it; an error of the patch outweighs the rest's success.
	defer func() {
		if finalizerErr := finalizer.wait(cr); finalizerErr != nil && (err == nil || refusal.Is(err)) {
			result, err = nil, finalizerErr
		}
	}()
	token, err := r.write.credentials(ctx, cr, found.Access, rendered, live, finalizer)
	if err != nil {
		return nil, err
	}
	final := found
	if token != nil && token != found.Access.Identity.Token {
		final = found.WithBoundToken(token)
	}
	judged := r.judgeMetrics(cr, final)
	if judged != nil {
		final = final.WithScoreByRequests(judged.verdict.ScoresByRequests(cr.Spec.Profile.LoadMetrics()))
	}
	if final != found {
		// A new token, or the failsafe switched scoring: the scheduler is rendered anew.
		if rendered, err = desired.Scheduler(cr, final); err != nil {
			return nil, err
		}
	}
	if final.Access != found.Access {
		if err := r.write.keepToken(ctx, cr, rendered, live, finalizer); err != nil {
			return nil, err
		}
	}
	if token := final.Access.BoundToken(); token != nil {
		r.tokenExpiries.Observe(client.ObjectKeyFromObject(cr), token.ExpiresAt, token.RenewAt)
	} else {
		r.tokenExpiries.Forget(client.ObjectKeyFromObject(cr))
	}
	deployment, err := r.write.apply(ctx, cr, final, rendered, live, finalizer)
	if err != nil {
		return nil, err
	}
	return &applied{found: final, rendered: rendered, deployment: deployment, metrics: judged}, nil
}

// refuse reports a refusal: what only the user can fix. Nothing is applied: the scheduler
// keeps running with its last good configuration.
func (r *SecondarySchedulerReconciler) refuse(ctx context.Context, cr *v1.SecondaryScheduler,
	status *v1.SecondarySchedulerStatus, conditions *report.Conditions, problem *refusal.Error) error {
	logf.FromContext(ctx).V(1).Info("desired scheduler refused", "reason", problem.Reason, "message", problem.Message)
	r.reconcileErrors.Refused(problem.Reason)
	if !report.Refused(conditions, status, problem) {
		return nil
	}
	observed, err := r.observeScheduler(ctx, cr, status, conditions, nil)
	if err != nil {
		return err
	}
	report.Progressing(conditions, observed)
	return nil
}

// retryAfterRefusal is when to look again after a refusal: a polled one (a name taken by
// someone else's object, a CRD not served) with backoff, and a metrics source looked for again every probe
// interval, since no event says when they change; other refusals wait for the change that
// fixes them, which the operator watches.
func (r *SecondarySchedulerReconciler) retryAfterRefusal(status *v1.SecondarySchedulerStatus, refused *refusal.Error) outcome {
	switch {
	case reasons.IsPolled(refused.Reason):
		return outcome{requeueAfter: pollRetry(status, refused.Reason, r.now())}
	case reasons.KeepsFromMetrics(refused.Reason):
		return outcome{requeueAfter: r.metricsProber.Interval}
	}
	return outcome{}
}

// pollRetry is when a refusal for reason that no event ends (reasons.IsPolled: a name
// taken by someone else's object, a CRD not served) is looked at again: it is polled,
// backing off from 3 s to 5 minutes as the problem lasts.
func pollRetry(status *v1.SecondarySchedulerStatus, reason v1.ConditionReason, now time.Time) time.Duration {
	condition := meta.FindStatusCondition(status.Conditions, string(v1.ConditionDegraded))
	if condition == nil || condition.Reason != string(reason) || condition.Status != metav1.ConditionTrue {
		return 3 * time.Second
	}
	return min(max(now.Sub(condition.LastTransitionTime.Time), 3*time.Second), 5*time.Minute)
}

// schedulerNameOf is the scheduler name status shows: spec.schedulerName, metadata.name,
// or for a Custom configuration that names its own profiles, the first of them.
func schedulerNameOf(cr *v1.SecondaryScheduler, served []string) string {
	if slices.Contains(served, cr.EffectiveSchedulerName()) || len(served) == 0 {
		return cr.EffectiveSchedulerName()
	}
	return served[0]
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

// writeStatus writes status when it changed (internal/statusapply), and emits an Event
// for each condition that changed, with the condition's reason.
func (r *SecondarySchedulerReconciler) writeStatus(ctx context.Context, cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus) error {
	if equality.Semantic.DeepEqual(cr.Status, *status) {
		return nil
	}
	changed := report.Changed(cr.Status.Conditions, status.Conditions)
	if err := r.status.Write(ctx, cr, status); err != nil {
		return err
	}
	for _, condition := range changed {
		if derivedConditions[v1.ConditionType(condition.Type)] {
			continue // they repeat another condition, whose change has its own Event
		}
		if meta.FindStatusCondition(cr.Status.Conditions, condition.Type) == nil && !reasons.TellsFirstReport(condition) {
			continue // a condition's first report is told only when it is news
		}
		r.recorder.Eventf(cr, nil, reasons.EventType(condition), condition.Reason, condition.Type, "%s=%s: %s", condition.Type, condition.Status, condition.Message)
	}
	return nil
}

// derivedConditions are the kstatus conditions, derived from the others.
var derivedConditions = map[v1.ConditionType]bool{v1.ConditionReconciling: true, v1.ConditionStalled: true}

// finalize deletes the scheduler's objects, then lets the SecondaryScheduler go. Only
// what is provably cr's is deleted. Owner references would have the garbage collector
// delete those in cr's namespace, but at its own pace (a client limited to 20 requests a
// second): with hundreds of schedulers deleted at once, minutes. The Lease goes last,
// once the scheduler's ServiceAccount and bindings are gone: a scheduler still running
// recreates a missing Lease, unlabelled and unowned, unless it has lost the right to.
// Its pods are not waited for; the garbage collector deletes them with the Deployment's
// ReplicaSet. In a namespace no longer allowed, the operator may not read there: the
// garbage collector deletes what cr owns, and the finalizer what lies elsewhere.
func (r *SecondarySchedulerReconciler) finalize(ctx context.Context, cr *v1.SecondaryScheduler) error {
	r.forgetReferences(client.ObjectKeyFromObject(cr))
	if !controllerutil.ContainsFinalizer(cr, Finalizer) {
		return nil
	}
	// A cache that has not seen cr go yet hands a reconcile the version this operator
	// already removed the finalizer from: every child is gone, and the patch, locked to
	// that version, could only be answered Not Found.
	if spent, ok := r.finalized.Load(client.ObjectKeyFromObject(cr)); ok && spent == cr.ResourceVersion {
		return nil
	}
	allButLease := slices.DeleteFunc(slices.Clone(allChildKinds), func(kind childKind) bool { return kind.name == leaseKind.name })
	if err := r.write.deleteChildren(ctx, cr, allButLease); err != nil {
		return err
	}
	if err := r.write.deleteChildren(ctx, cr, []childKind{leaseKind}); err != nil {
		return err
	}
	if err := r.write.pruneRecordingRules(ctx, cr, nil); err != nil {
		return err
	}
	finalizedVersion := cr.ResourceVersion
	if err := r.write.removeFinalizer(ctx, cr); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	r.finalized.Store(client.ObjectKeyFromObject(cr), finalizedVersion)
	logf.FromContext(ctx).V(1).Info("deleted the scheduler's objects")
	return nil
}

// forgetReferences stops watching what a SecondaryScheduler referenced.
func (r *SecondarySchedulerReconciler) forgetReferences(key types.NamespacedName) {
	for _, watch := range r.references {
		watch.watches.ReferenceAll(key, nil)
	}
	r.metricsProber.forget(key)
	r.extenderProber.forget(key)
	r.deschedulerWatcher.forget(key)
	r.read.gather.Forget(key)
	r.tokenExpiries.Forget(key)
}
