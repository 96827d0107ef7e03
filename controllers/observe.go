package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// observed is what the operator saw of a running scheduler.
type observed struct {
	// deployment is the scheduler's Deployment, nil when there is none.
	deployment *appsv1.Deployment
	// podProblem is why no pod of the current template is ready, as its pods tell, nil
	// when they tell nothing.
	podProblem *reasons.Finding
	// requeueAfter asks to look again for what no watch reports (a leader elected, a
	// pod's containers).
	requeueAfter time.Duration
}

// leaderPoll is how soon a scheduler without a leader of its current configuration is
// looked at again: the operator watches a Lease change hands, but not expire.
const leaderPoll = 3 * time.Second

// leaderRecheck is how often a HighlyAvailable scheduler that has a leader is looked at
// again, so that Available does not long outlive a leader that stopped renewing its Lease
// while its pod stays ready (a leader that dies changes its pod, which wakes the operator
// at once). Each look is a whole reconcile, so not more often than this.
const leaderRecheck = time.Minute

// observeScheduler reads the scheduler's Deployment, pods and Lease, and sets
// readyReplicas and Available: True only when a ready pod runs the Deployment's current
// pod template (its configuration hash and CA bundle) and holds the Lease. A ready pod of
// an older configuration does not count, nor does one of the current configuration
// while an older one leads: the leader schedules, but not as the resource now says. So
// Available, and kubectl wait on it, mean that pods are placed as the generation asks.
// When no pod of the current template is ready, their state says why if it can
// (podProblem). applied is the Deployment as this
// reconcile applied or found it, nil when it applied none: it is then read from the
// cache, whose watch brings any newer one (and another reconcile) at once.
func (r *SecondarySchedulerReconciler) observeScheduler(ctx context.Context, cr *v1.SecondaryScheduler,
	status *v1.SecondarySchedulerStatus, conditions *conditionSetter, applied *appsv1.Deployment) (observed, error) {
	deployment := applied
	key := types.NamespacedName{Namespace: cr.Namespace, Name: render.WorkloadName(cr)}
	if deployment == nil {
		deployment = &appsv1.Deployment{}
		if err := r.Get(ctx, key, deployment); err != nil || !ownedBy(deployment, cr) {
			if err != nil && !apierrors.IsNotFound(err) {
				return observed{}, fmt.Errorf("read Deployment %s: %w", key, err)
			}
			status.ReadyReplicas = 0
			conditions.set(v1.ConditionAvailable, false, v1.ReasonSchedulerNotDeployed, "the scheduler's Deployment "+key.String()+" does not exist")
			return observed{}, nil
		}
	}
	status.ReadyReplicas = deployment.Status.ReadyReplicas
	pods, err := r.schedulerPods(ctx, cr, deployment)
	if err != nil {
		return observed{}, err
	}
	if pods.current == 0 {
		return observeNoReadyPod(cr, status, conditions, deployment, pods), nil
	}
	current, want := pods.current, ptrValue(deployment.Spec.Replicas)
	holder, err := r.leaseHolder(ctx, cr)
	if err != nil {
		return observed{}, err
	}
	// Only the holder of the Lease schedules: until a pod of the current template holds
	// it, pods are placed as an older configuration says, or not at all.
	switch {
	case holder == "":
		conditions.set(v1.ConditionAvailable, false, v1.ReasonNoLeader, fmt.Sprintf(
			"%d of %d scheduler pods are ready but none holds Lease %s/%s yet, so none schedules; a replica takes it within the lease duration (15 s)",
			current, want, cr.Namespace, render.LeaseName(cr)))
		return observed{deployment: deployment, requeueAfter: leaderPoll}, nil
	case !pods.leads(holder):
		conditions.set(v1.ConditionAvailable, false, v1.ReasonHandingOver, fmt.Sprintf(
			"%d of %d scheduler pods run the current configuration (hash %s) and are ready, but %s, which is not one of them, holds Lease %s/%s "+
				"and schedules until it stops; a pod of the current configuration takes the Lease then, within the lease duration (15 s)",
			current, want, status.ConfigHash, holder, cr.Namespace, render.LeaseName(cr)))
		return observed{deployment: deployment, requeueAfter: leaderPoll}, nil
	}
	conditions.set(v1.ConditionAvailable, true, v1.ReasonSchedulerReady, fmt.Sprintf(
		"%d of %d scheduler pods ready with the current configuration, one of them leading; pods with spec.schedulerName: %s are scheduled by it",
		current, want, status.SchedulerName))
	if want > 1 {
		// A leader that stops renewing changes no object the operator watches.
		return observed{deployment: deployment, requeueAfter: leaderRecheck}, nil
	}
	return observed{deployment: deployment}, nil
}

// observeNoReadyPod sets Available when no pod of the current template is ready: with
// the reason the pods give, if they give one, and what still schedules meanwhile.
func observeNoReadyPod(cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus, conditions *conditionSetter,
	deployment *appsv1.Deployment, pods schedulerPods) observed {
	seen := observed{deployment: deployment, podProblem: reasons.Foremost(podProblem(pods.unready), creationProblem(deployment))}
	seePods := fmt.Sprintf("see kubectl -n %s get pods -l %s=%s", cr.Namespace, render.LabelInstance, cr.Name)
	switch {
	case seen.podProblem != nil && pods.old > 0:
		conditions.set(v1.ConditionAvailable, false, seen.podProblem.Reason, fmt.Sprintf(
			"no pod running the current configuration (hash %s) is ready: %s. %d pods of an older configuration still schedule",
			status.ConfigHash, seen.podProblem.Message, pods.old))
	case seen.podProblem != nil:
		conditions.set(v1.ConditionAvailable, false, seen.podProblem.Reason, fmt.Sprintf(
			"no scheduler pod is ready: %s. Pods with spec.schedulerName: %s stay Pending until one is",
			seen.podProblem.Message, status.SchedulerName))
	case pods.old > 0:
		conditions.set(v1.ConditionAvailable, false, v1.ReasonNoReadyScheduler, fmt.Sprintf(
			"no pod running the current configuration (hash %s) is ready yet; %d pods of an older configuration still schedule; %s",
			status.ConfigHash, pods.old, seePods))
	default:
		conditions.set(v1.ConditionAvailable, false, v1.ReasonNoReadyScheduler, fmt.Sprintf(
			"no scheduler pod is ready; pods with spec.schedulerName: %s stay Pending until one is; %s", status.SchedulerName, seePods))
	}
	return seen
}

// schedulerPods is what the scheduler's pods are, against the Deployment's pod template.
type schedulerPods struct {
	// current and old count the ready pods that run the current template and an older one.
	current, old int
	// unready are the pods of the current template that are not ready.
	unready []corev1.Pod
	// currentNames are the names of the ready pods of the current template.
	currentNames []string
}

// leads reports whether holder, the identity in the scheduler's Lease, is one of the
// ready pods of the current template: kube-scheduler's identity is its hostname, which
// is the pod's name (a generated pod name fits the 63 characters of a hostname), an
// underscore and a unique suffix.
func (p schedulerPods) leads(holder string) bool {
	for _, name := range p.currentNames {
		if strings.HasPrefix(holder, name+"_") {
			return true
		}
	}
	return false
}

// schedulerPods reads the scheduler's pods that are not being deleted, from the cache,
// which holds the operator's pods and whose watch brings a reconcile at each change of
// theirs (a pod that cannot pull its image, or crashes, changes its status).
func (r *SecondarySchedulerReconciler) schedulerPods(ctx context.Context, cr *v1.SecondaryScheduler, deployment *appsv1.Deployment) (schedulerPods, error) {
	list := &corev1.PodList{}
	if err := r.List(ctx, list, client.InNamespace(cr.Namespace), client.MatchingLabels(render.PodSelector(cr))); err != nil {
		return schedulerPods{}, fmt.Errorf("list the scheduler's pods: %w", err)
	}
	var pods schedulerPods
	template := deployment.Spec.Template.Annotations
	for i := range list.Items {
		pod := &list.Items[i]
		switch current := runsTemplate(pod.Annotations, template); {
		case !pod.DeletionTimestamp.IsZero():
		case podReady(pod) && current:
			pods.current++
			pods.currentNames = append(pods.currentNames, pod.Name)
		case podReady(pod):
			pods.old++
		case current:
			pods.unready = append(pods.unready, *pod)
		}
	}
	return pods, nil
}

// runsTemplate reports whether a pod runs the Deployment's pod template: it carries the
// template's hash, which covers the image, flags, placement and configuration.
func runsTemplate(pod, template map[string]string) bool {
	hash := template[render.PodTemplateHashAnnotation]
	return hash != "" && pod[render.PodTemplateHashAnnotation] == hash
}

func podReady(pod *corev1.Pod) bool {
	for _, condition := range pod.Status.Conditions {
		if condition.Type == corev1.PodReady {
			return condition.Status == corev1.ConditionTrue
		}
	}
	return false
}

// leaseHolder is who holds cr's Lease, empty when nobody does or the holder stopped
// renewing it. Only cr's scheduler pods may update that Lease, so a holder is one of them.
func (r *SecondarySchedulerReconciler) leaseHolder(ctx context.Context, cr *v1.SecondaryScheduler) (string, error) {
	lease := &coordinationv1.Lease{}
	key := types.NamespacedName{Namespace: cr.Namespace, Name: render.LeaseName(cr)}
	if err := r.Get(ctx, key, lease); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("read Lease %s: %w", key, err)
	}
	spec := lease.Spec
	if spec.HolderIdentity == nil || *spec.HolderIdentity == "" || spec.RenewTime == nil || spec.LeaseDurationSeconds == nil {
		return "", nil
	}
	expires := spec.RenewTime.Add(time.Duration(*spec.LeaseDurationSeconds) * time.Second)
	if !r.now().Before(expires) {
		return "", nil
	}
	return *spec.HolderIdentity, nil
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}
