// Package observe is the stage of a reconcile that looks at what runs of a
// SecondaryScheduler's scheduler: its Deployment, its pods and who holds its Lease, and
// why no pod of its current configuration is ready when a pod or the Deployment says
// so. It returns what it saw as a value; the controller derives the conditions from it.
// It cannot write: an Observer holds only readers (internal/readonly), and
// TestObservingCannotWrite proves the rest.
package observe

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
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/ownership"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/readonly"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// Observer looks at running schedulers through the operator's cache, which holds their
// Deployments, pods and Leases, and whose watch brings a reconcile at each change of
// theirs.
type Observer struct {
	cache client.Reader
	now   func() time.Time
}

// New is an Observer reading cache; now tells whether a Lease has expired.
func New(cache client.Reader, now func() time.Time) *Observer {
	return &Observer{cache: readonly.Wrap(cache), now: now}
}

// Scheduler is what runs of one scheduler.
type Scheduler struct {
	// Deployment is the scheduler's Deployment, nil when there is none of cr's.
	Deployment *appsv1.Deployment
	// Current and Old count the ready pods that run the Deployment's current pod template
	// and an older one.
	Current, Old int
	// CurrentNames and OldNames are the names of the ready pods of the current template
	// and of older ones.
	CurrentNames, OldNames []string
	// StoppingCurrentNames and StoppingOldNames are the names of the ready pods being
	// deleted, of the current template and of older ones: not counted, but one may still
	// hold the Lease, and schedules until its process stops.
	StoppingCurrentNames, StoppingOldNames []string
	// Problem is why no pod of the current template is ready, as its pods or the
	// Deployment tell (the foremost, as internal/reasons ranks them), nil when they tell
	// nothing or one is ready.
	Problem *reasons.Finding
	// UnreadyNames are the names of the scheduler's pods that are not ready, of any
	// template, being deleted or not: one may still hold the Lease, and schedule while it
	// renews it, as readiness does not stop kube-scheduler from leading.
	UnreadyNames []string
	// LeaseHolder is who holds the scheduler's Lease, empty when nobody does (or it
	// expired); read only while some pod of the scheduler exists.
	LeaseHolder string
}

// UnreadyLeads reports whether the Lease's holder is a pod of the scheduler that is not
// ready: it may still place pods while it renews the Lease, though none counts as ready.
func (s Scheduler) UnreadyLeads() bool {
	return holds(s.LeaseHolder, s.UnreadyNames)
}

// Leads reports whether the Lease's holder is one of the ready pods of the current
// template.
func (s Scheduler) Leads() bool {
	return holds(s.LeaseHolder, s.CurrentNames) || holds(s.LeaseHolder, s.StoppingCurrentNames)
}

// StatusOfCurrentTemplate reports whether deployment's status is of its current spec: its
// controller has observed the last change. Until then the status's counts and conditions
// are of the template before, and say nothing of what the resource now asks.
func StatusOfCurrentTemplate(deployment *appsv1.Deployment) bool {
	return deployment.Status.ObservedGeneration == deployment.Generation
}

// LeaderStopping reports whether the Lease's holder is a ready pod being deleted: it
// schedules until it stops and gives the Lease up.
func (s Scheduler) LeaderStopping() bool {
	return holds(s.LeaseHolder, s.StoppingCurrentNames) || holds(s.LeaseHolder, s.StoppingOldNames)
}

// OldLeads reports whether the Lease's holder is one of the ready pods of an older
// template: the scheduler serves its name, as that older configuration says.
func (s Scheduler) OldLeads() bool {
	return holds(s.LeaseHolder, s.OldNames) || holds(s.LeaseHolder, s.StoppingOldNames)
}

// Serves reports whether a ready pod of the scheduler, of whatever template, holds the
// Lease: pods naming the scheduler are then placed, which is what Available says.
func (s Scheduler) Serves() bool {
	return s.Leads() || s.OldLeads()
}

// holds reports whether holder, a Lease's holder identity, is one of pods: kube-scheduler's
// identity is its hostname, which is the pod's name (a generated pod name fits the 63
// characters of a hostname), an underscore and a unique suffix.
func holds(holder string, pods []string) bool {
	for _, name := range pods {
		if strings.HasPrefix(holder, name+"_") {
			return true
		}
	}
	return false
}

// Scheduler looks at cr's scheduler. applied is the Deployment as this reconcile applied
// or found it, nil when it applied none: it is then read from the cache, whose watch
// brings any newer one (and another reconcile) at once.
func (o *Observer) Scheduler(ctx context.Context, cr *v1.SecondaryScheduler, applied *appsv1.Deployment) (Scheduler, error) {
	deployment := applied
	if deployment == nil {
		key := types.NamespacedName{Namespace: cr.Namespace, Name: render.WorkloadName(cr)}
		deployment = &appsv1.Deployment{}
		if err := o.cache.Get(ctx, key, deployment); err != nil || !ownership.OwnedBy(deployment, cr) {
			if err != nil && !apierrors.IsNotFound(err) {
				return Scheduler{}, fmt.Errorf("read Deployment %s: %w", key, err)
			}
			return Scheduler{}, nil
		}
	}
	seen := Scheduler{Deployment: deployment}
	unready, err := o.pods(ctx, cr, &seen)
	if err != nil {
		return Scheduler{}, err
	}
	if seen.Current == 0 {
		seen.Problem = reasons.Foremost(podProblem(unready), creationProblem(deployment))
	}
	if seen.Current+seen.Old+len(seen.StoppingCurrentNames)+len(seen.StoppingOldNames)+len(seen.UnreadyNames) == 0 {
		return seen, nil
	}
	seen.LeaseHolder, err = o.leaseHolder(ctx, cr)
	return seen, err
}

// pods counts the scheduler's pods that are not being deleted, from the cache, against
// the Deployment's pod template, names those that are not ready, and returns those of the
// current template that are not ready and not being deleted.
func (o *Observer) pods(ctx context.Context, cr *v1.SecondaryScheduler, seen *Scheduler) ([]corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := o.cache.List(ctx, list, client.InNamespace(cr.Namespace), client.MatchingLabels(render.PodSelector(cr))); err != nil {
		return nil, fmt.Errorf("list the scheduler's pods: %w", err)
	}
	var unready []corev1.Pod
	template := seen.Deployment.Spec.Template.Annotations
	for i := range list.Items {
		pod := &list.Items[i]
		current := runsTemplate(pod.Annotations, template)
		if !podReady(pod) {
			seen.UnreadyNames = append(seen.UnreadyNames, pod.Name)
		}
		switch stopping := !pod.DeletionTimestamp.IsZero(); {
		case stopping && podReady(pod) && current:
			seen.StoppingCurrentNames = append(seen.StoppingCurrentNames, pod.Name)
		case stopping && podReady(pod):
			seen.StoppingOldNames = append(seen.StoppingOldNames, pod.Name)
		case stopping:
		case podReady(pod) && current:
			seen.Current++
			seen.CurrentNames = append(seen.CurrentNames, pod.Name)
		case podReady(pod):
			seen.Old++
			seen.OldNames = append(seen.OldNames, pod.Name)
		case current:
			unready = append(unready, *pod)
		}
	}
	return unready, nil
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
func (o *Observer) leaseHolder(ctx context.Context, cr *v1.SecondaryScheduler) (string, error) {
	lease := &coordinationv1.Lease{}
	key := types.NamespacedName{Namespace: cr.Namespace, Name: render.LeaseName(cr)}
	if err := o.cache.Get(ctx, key, lease); err != nil {
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
	if !o.now().Before(expires) {
		return "", nil
	}
	return *spec.HolderIdentity, nil
}
