package report

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// ExtenderSeen is what the operator last saw of one extender of a scheduler.
type ExtenderSeen struct {
	Name, Address string
	Ignorable     bool
	// Probed says a probe (or, for an extender in the scheduler's pod, its container's
	// readiness) answered; the rest is about that answer.
	Probed    bool
	Reachable bool
	Reason    v1.ConditionReason
	Message   string
	At        metav1.Time
}

// Extenders reports the scheduler's extenders in status.extenders and the
// ExtendersAvailable condition, and returns the problem that degrades the scheduler: the
// first extender that is not ignorable and was not reached, since every pod the
// scheduler calls it for fails scheduling. Without extenders, both are removed.
func Extenders(status *v1.SecondarySchedulerStatus, conditions *Conditions, seen []ExtenderSeen) *reasons.Finding {
	if len(seen) == 0 {
		meta.RemoveStatusCondition(&status.Conditions, string(v1.ConditionExtendersAvailable))
		status.Extenders = nil
		return nil
	}
	status.Extenders = make([]v1.ExtenderStatus, 0, len(seen))
	var problem *reasons.Finding
	var probing, ignorable []string
	for _, extender := range seen {
		reported := v1.ExtenderStatus{Name: extender.Name, Address: extender.Address, Ignorable: extender.Ignorable,
			Reachable: extender.Reachable, Message: extender.Message}
		if extender.Probed {
			reported.LastProbeTime = &extender.At
		}
		switch {
		case !extender.Probed:
			// What the prober holds is of an earlier address, verb or TLS: nothing is
			// known of this one yet.
			reported.Reachable, reported.Reason, reported.Message = false, string(v1.ReasonExtendersProbing), "not probed yet at this address"
			probing = append(probing, extender.Name)
		case extender.Reachable:
		case extender.Ignorable:
			reported.Reason = string(v1.ReasonIgnorableExtenderUnreachable)
			ignorable = append(ignorable, fmt.Sprintf("%s (%s)", extender.Name, extender.Message))
		default:
			reported.Reason = string(extender.Reason)
			if problem == nil {
				problem = &reasons.Finding{Reason: extender.Reason, Message: fmt.Sprintf(
					"extender %s is not ignorable and the scheduler cannot use it: %s; every pod the scheduler calls it for fails scheduling and stays Pending until it answers. "+
						"Start it or correct its address or TLS, or set ignorable: true if pods may be placed without it", extender.Name, extender.Message)}
			}
		}
		status.Extenders = append(status.Extenders, reported)
	}
	switch {
	case problem != nil:
		conditions.Set(v1.ConditionExtendersAvailable, false, problem.Reason, problem.Message)
	case len(ignorable) > 0:
		conditions.Set(v1.ConditionExtendersAvailable, false, v1.ReasonIgnorableExtenderUnreachable, fmt.Sprintf(
			"ignorable extender %s did not answer: the scheduler places pods without it meanwhile; start it or correct its address or TLS if its decisions matter",
			strings.Join(ignorable, ", ")))
	case len(probing) > 0:
		conditions.SetUnknown(v1.ConditionExtendersAvailable, v1.ReasonExtendersProbing, fmt.Sprintf(
			"extender %s has not been probed yet; the first probe takes a few seconds", strings.Join(probing, ", ")))
	default:
		conditions.Set(v1.ConditionExtendersAvailable, true, v1.ReasonExtendersReachable, fmt.Sprintf(
			"every extender answered the operator's last probe, or is ready in the leading scheduler pod if it runs there (%d)", len(seen)))
	}
	return problem
}

// ContainerReadiness tells whether container is ready in a pod of the current
// configuration (configHash) that is not being deleted: probed is false while no such pod
// reports the container yet. It is how an extender in the scheduler's pod, which only the
// scheduler reaches on localhost, is observed. When leader, the pod that holds the
// scheduler's Lease, is such a pod, its container alone is judged: it is the one the
// scheduling replica calls, whatever the other replicas' say.
func ContainerReadiness(pods []corev1.Pod, configHash, container, leader string) (probed, ready bool, message string) {
	current := slices.DeleteFunc(slices.Clone(pods), func(pod corev1.Pod) bool {
		return pod.Annotations[render.ConfigHashAnnotation] != configHash || pod.DeletionTimestamp != nil
	})
	if i := slices.IndexFunc(current, func(pod corev1.Pod) bool { return pod.Name == leader }); leader != "" && i >= 0 {
		current = current[i : i+1]
	}
	for _, pod := range current {
		for _, status := range pod.Status.ContainerStatuses {
			if status.Name != container {
				continue
			}
			if status.Ready {
				return true, true, "container " + container + " of pod " + pod.Name + " is ready"
			}
			probed = true
			message = "container " + container + " of pod " + pod.Name + " is not ready"
			if waiting := status.State.Waiting; waiting != nil && waiting.Reason != "" {
				message += " (" + waiting.Reason + ")"
			}
		}
	}
	return probed, false, message
}
