package routing

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// routed is a SecondaryScheduler created age ago, serving its name, Available since
// available ago (negative: unavailable for that long, after pods were routed to it since
// its creation), whose route selects namespaces labelled team=team.
func routed(name string, age time.Duration, available time.Duration, team string) v1.SecondaryScheduler {
	cr := v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "schedulers", Name: name, Generation: 3, CreationTimestamp: metav1.NewTime(now.Add(-age))},
		Spec: v1.SecondarySchedulerSpec{Routing: &v1.Routing{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": team}}}},
		Status: v1.SecondarySchedulerStatus{SchedulerName: name},
	}
	status, since := metav1.ConditionTrue, available
	if available < 0 {
		status, since = metav1.ConditionFalse, -available
		setCondition(&cr, v1.ConditionRouting, metav1.ConditionTrue, v1.ReasonRouted, now.Add(-age))
	}
	setCondition(&cr, v1.ConditionAvailable, status, "Test", now.Add(-since))
	return cr
}

// neverAvailable is a SecondaryScheduler created age ago with a failoverAfter of an hour
// whose scheduler has not been Available since: its Available condition is False since
// its creation.
func neverAvailable(name string, age time.Duration) v1.SecondaryScheduler {
	cr := routed(name, age, 0, "a")
	cr.Spec.Routing.FailoverAfter = &metav1.Duration{Duration: time.Hour}
	setCondition(&cr, v1.ConditionAvailable, metav1.ConditionFalse, v1.ReasonSchedulerNotDeployed, now.Add(-age))
	return cr
}

func setCondition(cr *v1.SecondaryScheduler, conditionType v1.ConditionType, status metav1.ConditionStatus, reason v1.ConditionReason, since time.Time) {
	meta.RemoveStatusCondition(&cr.Status.Conditions, string(conditionType)) // so that since is kept
	meta.SetStatusCondition(&cr.Status.Conditions, metav1.Condition{Type: string(conditionType), Status: status, Reason: string(reason),
		LastTransitionTime: metav1.NewTime(since)})
}

// with is cr, alone in a list, given a condition of status and reason since ago.
func with(cr v1.SecondaryScheduler, conditionType v1.ConditionType, status metav1.ConditionStatus, reason v1.ConditionReason,
	ago time.Duration) []v1.SecondaryScheduler {
	setCondition(&cr, conditionType, status, reason, now.Add(-ago))
	return []v1.SecondaryScheduler{cr}
}

func TestDecide(t *testing.T) {
	allowAll := func(string) bool { return true }
	facts := Facts{Supported: true, Allowed: allowAll, Now: now}
	key := func(name string) types.NamespacedName {
		return types.NamespacedName{Namespace: "schedulers", Name: name}
	}
	tests := []struct {
		name  string
		crs   []v1.SecondaryScheduler
		facts Facts
		// want is the reason of each, and whether its route is carried.
		want        map[string]v1.ConditionReason
		carried     []string
		recheckSoon string
	}{
		{name: "available: routed", crs: []v1.SecondaryScheduler{routed("packer", time.Hour, time.Hour, "a")},
			want: map[string]v1.ConditionReason{"packer": v1.ReasonRouted}, carried: []string{"packer"}},
		{name: "unavailable for less than failoverAfter: still routed, recheck due",
			crs:  []v1.SecondaryScheduler{routed("packer", time.Hour, -30*time.Second, "a")},
			want: map[string]v1.ConditionReason{"packer": v1.ReasonRouted}, carried: []string{"packer"}, recheckSoon: "packer"},
		{name: "unavailable past failoverAfter: failed over",
			crs:  []v1.SecondaryScheduler{routed("packer", time.Hour, -2*time.Minute, "a")},
			want: map[string]v1.ConditionReason{"packer": v1.ReasonFailedOver}},
		{name: "failed over, still unavailable: failed over",
			crs:  with(routed("packer", 2*time.Hour, -time.Hour, "a"), v1.ConditionRouting, metav1.ConditionFalse, v1.ReasonFailedOver, 59*time.Minute),
			want: map[string]v1.ConditionReason{"packer": v1.ReasonFailedOver}},
		{name: "refused before it ran: nothing routed, not even within failoverAfter",
			crs:  with(neverAvailable("packer", 5*time.Minute), v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonConfigMapNotFound, 5*time.Minute),
			want: map[string]v1.ConditionReason{"packer": v1.ReasonSchedulerNotAvailable}},
		{name: "never Available, no condition yet: nothing routed", crs: []v1.SecondaryScheduler{func() v1.SecondaryScheduler {
			cr := routed("packer", time.Second, time.Second, "a")
			cr.Status.Conditions = nil
			return cr
		}()}, want: map[string]v1.ConditionReason{"packer": v1.ReasonSchedulerNotAvailable}},
		{name: "never Available while its route waits for the policy: nothing routed",
			crs:  with(neverAvailable("packer", 5*time.Minute), v1.ConditionRouting, metav1.ConditionFalse, v1.ReasonRoutingPolicyPending, 4*time.Minute),
			want: map[string]v1.ConditionReason{"packer": v1.ReasonSchedulerNotAvailable}},
		{name: "routed only while it never ran (a policy written for it regardless): nothing routed",
			crs:  with(neverAvailable("packer", 5*time.Minute), v1.ConditionRouting, metav1.ConditionTrue, v1.ReasonRouted, 4*time.Minute),
			want: map[string]v1.ConditionReason{"packer": v1.ReasonSchedulerNotAvailable}},
		{name: "stopped within the second routing started: routed, as it was while Available", crs: []v1.SecondaryScheduler{func() v1.SecondaryScheduler {
			cr := routed("packer", time.Hour, -30*time.Second, "a")
			stopped := meta.FindStatusCondition(cr.Status.Conditions, string(v1.ConditionAvailable)).LastTransitionTime.Time
			// As a status about to be written holds it: Available's time in
			// nanoseconds, Routing's as read back, to the second.
			setCondition(&cr, v1.ConditionAvailable, metav1.ConditionFalse, "Test", stopped.Add(300*time.Millisecond))
			setCondition(&cr, v1.ConditionRouting, metav1.ConditionTrue, v1.ReasonRouted, stopped)
			return cr
		}()}, want: map[string]v1.ConditionReason{"packer": v1.ReasonRouted}, carried: []string{"packer"}, recheckSoon: "packer"},
		{name: "refused while its last good scheduler runs: routed to it",
			crs:  with(routed("packer", time.Hour, time.Hour, "a"), v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonConfigMapNotFound, time.Minute),
			want: map[string]v1.ConditionReason{"packer": v1.ReasonRouted}, carried: []string{"packer"}},
		{name: "audit mode is carried even when unavailable", crs: []v1.SecondaryScheduler{func() v1.SecondaryScheduler {
			cr := routed("packer", time.Hour, -time.Hour, "a")
			cr.Spec.Routing.Mode = v1.RoutingAudit
			return cr
		}()}, want: map[string]v1.ConditionReason{"packer": v1.ReasonAuditing}, carried: []string{"packer"}},
		{name: "overlapping routes: the older keeps it", crs: []v1.SecondaryScheduler{
			routed("newer", time.Minute, time.Minute, "a"), routed("older", time.Hour, time.Hour, "a"), routed("apart", time.Second, time.Second, "b")},
			want:    map[string]v1.ConditionReason{"newer": v1.ReasonRoutingConflict, "older": v1.ReasonRouted, "apart": v1.ReasonRouted},
			carried: []string{"older", "apart"}},
		{name: "no MutatingAdmissionPolicy: unsupported", crs: []v1.SecondaryScheduler{routed("packer", time.Hour, time.Hour, "a")},
			facts: Facts{Supported: false, Allowed: allowAll, Now: now},
			want:  map[string]v1.ConditionReason{"packer": v1.ReasonRoutingUnsupported}},
		{name: "namespace not allowed: nothing routed", crs: []v1.SecondaryScheduler{routed("packer", time.Hour, time.Hour, "a")},
			facts: Facts{Supported: true, Allowed: func(string) bool { return false }, Now: now},
			want:  map[string]v1.ConditionReason{"packer": v1.ReasonNotRouting}},
		{name: "name not served yet: nothing routed", crs: []v1.SecondaryScheduler{func() v1.SecondaryScheduler {
			cr := routed("packer", time.Hour, time.Hour, "a")
			cr.Status.SchedulerName = ""
			return cr
		}()}, want: map[string]v1.ConditionReason{"packer": v1.ReasonNotRouting}},
		{name: "unmanaged: nothing routed", crs: []v1.SecondaryScheduler{func() v1.SecondaryScheduler {
			cr := routed("packer", time.Hour, time.Hour, "a")
			cr.Spec.ManagementState = v1.Unmanaged
			return cr
		}()}, want: map[string]v1.ConditionReason{"packer": v1.ReasonNotRouting}},
		{name: "invalid selector: refused, and conflicts with none", crs: []v1.SecondaryScheduler{func() v1.SecondaryScheduler {
			cr := routed("broken", 2*time.Hour, time.Hour, "a")
			cr.Spec.Routing.PodSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
			return cr
		}(), routed("packer", time.Hour, time.Hour, "a")},
			want: map[string]v1.ConditionReason{"broken": v1.ReasonInvalidSpec, "packer": v1.ReasonRouted}, carried: []string{"packer"}},
		{name: "a selector larger than a routing table carries: refused", crs: []v1.SecondaryScheduler{func() v1.SecondaryScheduler {
			cr := routed("packer", time.Hour, time.Hour, "a")
			cr.Spec.Routing.PodSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: make([]string, v1.MaxRouteSelectorValues+1)}}}
			for i := range cr.Spec.Routing.PodSelector.MatchExpressions[0].Values {
				cr.Spec.Routing.PodSelector.MatchExpressions[0].Values[i] = fmt.Sprint("app-", i)
			}
			return cr
		}()}, want: map[string]v1.ConditionReason{"packer": v1.ReasonInvalidSpec}},
		{name: "a scheduler name that is no label value: refused", crs: []v1.SecondaryScheduler{func() v1.SecondaryScheduler {
			cr := routed("packer", time.Hour, time.Hour, "a")
			cr.Name = strings.Repeat("p", 64)
			cr.Status.SchedulerName = cr.Name
			return cr
		}()}, want: map[string]v1.ConditionReason{strings.Repeat("p", 64): v1.ReasonInvalidSpec}},
		{name: "without spec.routing: no verdict", crs: []v1.SecondaryScheduler{func() v1.SecondaryScheduler {
			cr := routed("packer", time.Hour, time.Hour, "a")
			cr.Spec.Routing = nil
			return cr
		}()}, want: map[string]v1.ConditionReason{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.facts.Allowed == nil {
				tt.facts = facts
			}
			verdicts := Decide(tt.crs, tt.facts)
			if len(verdicts) != len(tt.want) {
				t.Errorf("%d verdicts, want %d: %+v", len(verdicts), len(tt.want), verdicts)
			}
			for name, reason := range tt.want {
				verdict := verdicts[key(name)]
				if verdict.Reason != reason {
					t.Errorf("%s: reason %s (%s), want %s", name, verdict.Reason, verdict.Message, reason)
				}
				carried := false
				for _, c := range tt.carried {
					carried = carried || c == name
				}
				if (verdict.Route != nil) != carried {
					t.Errorf("%s: route carried %v, want %v", name, verdict.Route != nil, carried)
				}
				if verdict.Route != nil && (verdict.Route.SchedulerName != name || verdict.Route.Generation != 3) {
					t.Errorf("%s: route %+v", name, verdict.Route)
				}
				if soon := verdict.RecheckAfter > 0; soon != (tt.recheckSoon == name) {
					t.Errorf("%s: recheck after %v", name, verdict.RecheckAfter)
				}
			}
		})
	}
	conflict := Decide([]v1.SecondaryScheduler{routed("newer", time.Minute, time.Minute, "a"), routed("older", time.Hour, time.Hour, "a")}, facts)
	if message := conflict[key("newer")].Message; !strings.Contains(message, "SecondaryScheduler schedulers/older") {
		t.Errorf("a conflict names the older route's owner: %q", message)
	}
	pending := Decide([]v1.SecondaryScheduler{routed("packer", time.Hour, -30*time.Second, "a")}, facts)
	if got := pending[key("packer")].RecheckAfter; got != 30*time.Second {
		t.Errorf("failover due in %v, want 30s", got)
	}
}

func TestSelectorsMayOverlap(t *testing.T) {
	labels := func(kv ...string) *metav1.LabelSelector {
		selector := &metav1.LabelSelector{MatchLabels: map[string]string{}}
		for i := 0; i < len(kv); i += 2 {
			selector.MatchLabels[kv[i]] = kv[i+1]
		}
		return selector
	}
	expression := func(key string, operator metav1.LabelSelectorOperator, values ...string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: operator, Values: values}}}
	}
	tests := []struct {
		name string
		a, b *metav1.LabelSelector
		want bool
	}{
		{"everything and anything", nil, labels("team", "a"), true},
		{"same label, same value", labels("team", "a"), labels("team", "a"), true},
		{"same label, other values", labels("team", "a"), labels("team", "b"), false},
		{"different labels can both be set", labels("team", "a"), labels("tier", "gold"), true},
		{"In sets that meet", expression("team", metav1.LabelSelectorOpIn, "a", "b"), expression("team", metav1.LabelSelectorOpIn, "b", "c"), true},
		{"In sets apart", expression("team", metav1.LabelSelectorOpIn, "a", "b"), expression("team", metav1.LabelSelectorOpIn, "c"), false},
		{"In and NotIn covering it", expression("team", metav1.LabelSelectorOpIn, "a"), expression("team", metav1.LabelSelectorOpNotIn, "a", "b"), false},
		{"In and NotIn leaving a value", expression("team", metav1.LabelSelectorOpIn, "a", "c"), expression("team", metav1.LabelSelectorOpNotIn, "a"), true},
		{"Exists and DoesNotExist", expression("team", metav1.LabelSelectorOpExists), expression("team", metav1.LabelSelectorOpDoesNotExist), false},
		{"value and DoesNotExist", labels("team", "a"), expression("team", metav1.LabelSelectorOpDoesNotExist), false},
		{"NotIn and DoesNotExist: a pod without the label", expression("team", metav1.LabelSelectorOpNotIn, "a"), expression("team", metav1.LabelSelectorOpDoesNotExist), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := selectorsMayOverlap(tt.a, tt.b); got != tt.want {
				t.Errorf("selectorsMayOverlap = %v, want %v", got, tt.want)
			}
			if got := selectorsMayOverlap(tt.b, tt.a); got != tt.want {
				t.Errorf("the other way round = %v, want %v", got, tt.want)
			}
		})
	}
}
