package controllers

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/admission"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/report"
)

// errNoMutatingAdmission is why no scheduler-name policy can be in place on a cluster that
// does not serve MutatingAdmissionPolicy.
var errNoMutatingAdmission = errors.New("this cluster does not serve MutatingAdmissionPolicy v1 (Kubernetes 1.36 and later)")

// reportDescheduling reports the descheduler of spec.descheduling (report.Descheduling)
// from its Deployment as the cache holds it beside the one rendered, whether the
// scheduler-name policy it selects pods by is in place, and what the operator last read
// of its work (DeschedulerWatcher), which it asks to go on reading the descheduler's pods
// and the nodes' use.
func (r *SecondarySchedulerReconciler) reportDescheduling(ctx context.Context, cr *v1.SecondaryScheduler, found *gather.Facts,
	rendered *render.Result, status *v1.SecondarySchedulerStatus, conditions *report.Conditions) error {
	key := client.ObjectKeyFromObject(cr)
	if cr.Spec.Descheduling == nil {
		r.deschedulerWatcher.forget(key)
		report.Descheduling(cr, status, conditions, report.DeschedulingFacts{})
		return nil
	}
	facts := report.DeschedulingFacts{NodeNames: found.NodeNames, Pause: rendered.DeschedulerPause}
	for _, object := range rendered.Objects {
		if object.GetKind() == "Deployment" && object.GetName() == render.DeschedulerName(cr) {
			facts.TemplateHash = render.PodTemplateHash(object)
		}
	}
	deployment := &appsv1.Deployment{}
	err := r.cache.Get(ctx, client.ObjectKey{Namespace: cr.Namespace, Name: render.DeschedulerName(cr)}, deployment)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("read the descheduler's Deployment: %w", err)
	default:
		facts.Deployment = deployment
	}
	if facts.PolicyProblem, err = r.schedulerNamePolicyProblem(ctx); err != nil {
		return err
	}
	target, source, err := r.deschedulerTarget(ctx, cr, found)
	if err != nil {
		return err
	}
	if activity, read := r.deschedulerWatcher.watch(key, target, source); read {
		facts.Activity = &activity
	}
	report.Descheduling(cr, status, conditions, facts)
	return nil
}

// deschedulerTarget is what the watcher reads for cr: the metrics of each running pod of
// its descheduler in the current mode, at the port its container names https, and the nodes' use by the
// descheduler's query, from the scheduler's Prometheus with the scheduler's credentials.
// source identifies the latter without keeping the token twice.
func (r *SecondarySchedulerReconciler) deschedulerTarget(ctx context.Context, cr *v1.SecondaryScheduler, found *gather.Facts) (
	target deschedulerTarget, source [32]byte, err error) {
	target.mode = cr.Spec.Descheduling.EffectiveMode()
	pods := &corev1.PodList{}
	if err := r.cache.List(ctx, pods, client.InNamespace(cr.Namespace), client.MatchingLabels(render.DeschedulerPodLabels(cr))); err != nil {
		return target, source, fmt.Errorf("list the descheduler's pods: %w", err)
	}
	for _, pod := range pods.Items {
		port := deschedulerMetricsPort(&pod)
		if pod.Status.Phase != corev1.PodRunning || port == 0 || pod.DeletionTimestamp != nil ||
			pod.Annotations[render.DeschedulingModeAnnotation] != string(target.mode) {
			continue
		}
		if pod.Status.PodIP == "" {
			// Said, not skipped: status would otherwise show no cycles without a word why.
			target.pods = append(target.pods, deschedulerPod{name: pod.Name, uid: pod.UID,
				unreadable: "it runs but has no IP address to read them at"})
			continue
		}
		target.pods = append(target.pods, deschedulerPod{name: pod.Name, uid: pod.UID,
			url: "https://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port))) + "/metrics"})
	}
	if address := render.PrometheusURL(cr, found.Render); address != "" && found.Access != nil {
		target.prometheus, target.token, target.query = address, found.Access.BearerToken(), render.DeschedulerQuery(cr)
		target.httpClient = r.metricsProber.httpClient(found.Access)
		source = sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%t", target.prometheus, target.query, target.token,
			found.Access.CAPEM, found.Access.InsecureSkipVerify)))
	}
	return target, source, nil
}

// deschedulerMetricsPort is the port the descheduler's container names https, where it
// serves its metrics (bindata/assets/descheduler/deployment.yaml), 0 for none.
func deschedulerMetricsPort(pod *corev1.Pod) int32 {
	for _, container := range pod.Spec.Containers {
		for _, port := range container.Ports {
			if port.Name == "https" {
				return port.ContainerPort
			}
		}
	}
	return 0
}

// schedulerNamePolicyProblem is why the scheduler-name policy is not in place as the
// installer ships it, nil when it is; the error is a failure to read it.
func (r *SecondarySchedulerReconciler) schedulerNamePolicyProblem(ctx context.Context) (problem, err error) {
	if r.routing == nil || !r.routing.Supported || r.routing.SchedulerNamePolicy == nil {
		return errNoMutatingAdmission, nil
	}
	_, err = r.routing.SchedulerNamePolicy.Check(ctx, r.cache)
	var notInPlace *admission.NotInPlaceError
	if errors.As(err, &notInPlace) {
		return err, nil
	}
	return nil, err
}

// everyDeschedulingSecondaryScheduler are the requests of every SecondaryScheduler with
// spec.descheduling, whose Descheduling condition says whether the scheduler-name policy
// is in place.
func (r *SecondarySchedulerReconciler) everyDeschedulingSecondaryScheduler(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.secondarySchedulersWhere(ctx, "a change of the scheduler-name policy", func(cr *v1.SecondaryScheduler) bool {
		return cr.Spec.Descheduling != nil
	})
}

// servedConfigHash is the configuration hash of cr's scheduler last observed serving:
// status.configHash while Available is True with reason SchedulerReady, else "". The
// descheduler runs only while it is the configuration rendered now (render's
// DeschedulerPause).
func servedConfigHash(cr *v1.SecondaryScheduler) string {
	available := meta.FindStatusCondition(cr.Status.Conditions, string(v1.ConditionAvailable))
	if available == nil || available.Status != metav1.ConditionTrue || available.Reason != string(v1.ReasonSchedulerReady) {
		return ""
	}
	return cr.Status.ConfigHash
}
