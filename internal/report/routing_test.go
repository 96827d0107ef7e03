package report

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/routing"
)

// The Routing condition says what the routing policy in the API server does: a route the
// table carries routes only while the policy the installer ships is in place.
func TestRoutingCondition(t *testing.T) {
	route := &routing.Route{Owner: types.NamespacedName{Namespace: "s", Name: "packer"}, Generation: 2, SchedulerName: "packer", Mode: v1.RoutingEnforce}
	carried := &v1.TableRoute{SecondaryScheduler: "s/packer", Generation: 2, SchedulerName: "packer", Mode: v1.RoutingEnforce}
	older := &v1.TableRoute{SecondaryScheduler: "s/packer", Generation: 1, SchedulerName: "packer", Mode: v1.RoutingEnforce}
	digest, err := render.WantedRouteDigest(route)
	if err != nil {
		t.Fatal(err)
	}
	inEffect := &v1.RouteInEffect{SecondaryScheduler: "s/packer", Generation: 2, Mode: v1.RoutingEnforce, Digest: digest}
	olderInEffect := &v1.RouteInEffect{SecondaryScheduler: "s/packer", Generation: 1, Mode: v1.RoutingEnforce, Digest: "an-older-route"}
	// An edit that leaves spec.routing alone: the route of generation 1 does what the
	// route of generation 2 does, so it is Routed throughout.
	sameInEffect := &v1.RouteInEffect{SecondaryScheduler: "s/packer", Generation: 1, Mode: v1.RoutingEnforce, Digest: digest}
	missing := errors.New("MutatingAdmissionPolicy secondary-scheduler-operator-routing does not exist")
	failedOver := routing.Verdict{Reason: v1.ReasonFailedOver, Message: "the scheduler has not been Available"}
	tests := []struct {
		name       string
		facts      RoutingFacts
		wantStatus metav1.ConditionStatus
		wantReason v1.ConditionReason
		// wantInMessage is part of the message.
		wantInMessage string
	}{
		{"carried and seen in effect, policy in place: routed", RoutingFacts{Verdict: routing.Verdict{Route: route}, Carried: carried, InEffect: inEffect},
			metav1.ConditionTrue, v1.ReasonRouted, "spec.schedulerName packer"},
		{"carried, the same route of an older generation in effect: routed", RoutingFacts{Verdict: routing.Verdict{Route: route}, Carried: carried, InEffect: sameInEffect},
			metav1.ConditionTrue, v1.ReasonRouted, "spec.schedulerName packer"},
		{"carried, not seen in effect yet: not routed yet", RoutingFacts{Verdict: routing.Verdict{Route: route}, Carried: carried},
			metav1.ConditionFalse, v1.ReasonRoutingPolicyPending, "has not been seen applying it yet"},
		{"carried, the probe refused: why it is not observed", RoutingFacts{Verdict: routing.Verdict{Route: route}, Carried: carried,
			ProbeProblem: errors.New("the API server refused the routing probe")},
			metav1.ConditionFalse, v1.ReasonRoutingPolicyPending, "The operator cannot observe it: the API server refused the routing probe"},
		{"carried, an older generation in effect: still routed, pending", RoutingFacts{Verdict: routing.Verdict{Route: route}, Carried: carried, InEffect: olderInEffect},
			metav1.ConditionTrue, v1.ReasonRoutingPolicyPending, "was seen applying its route of generation 1, which routes pods"},
		{"carried and in effect, policy missing: nothing routed, the admin applies it", RoutingFacts{Verdict: routing.Verdict{Route: route}, Carried: carried,
			InEffect: inEffect, PolicyProblem: missing},
			metav1.ConditionFalse, v1.ReasonRoutingPolicyMissing, "does not exist"},
		{"not carried yet, policy missing: the installer's policy named", RoutingFacts{Verdict: routing.Verdict{Route: route}, PolicyProblem: missing},
			metav1.ConditionFalse, v1.ReasonRoutingPolicyMissing, "dist/routing.yaml"},
		{"an older generation carried and in effect: still routed, pending", RoutingFacts{Verdict: routing.Verdict{Route: route}, Carried: older, InEffect: olderInEffect},
			metav1.ConditionTrue, v1.ReasonRoutingPolicyPending, "RoutingTable secondary-scheduler-operator-routing"},
		{"failed over, still carried and in effect: pending its removal", RoutingFacts{Verdict: failedOver, Carried: carried, InEffect: inEffect},
			metav1.ConditionTrue, v1.ReasonRoutingPolicyPending, "is being changed because the scheduler has not been Available"},
		{"failed over, removed from the table but still in effect: pending", RoutingFacts{Verdict: failedOver, InEffect: inEffect},
			metav1.ConditionTrue, v1.ReasonRoutingPolicyPending, "is being changed because the scheduler has not been Available"},
		{"failed over, policy missing: why it routes nothing", RoutingFacts{Verdict: failedOver, Carried: carried, InEffect: inEffect, PolicyProblem: missing},
			metav1.ConditionFalse, v1.ReasonFailedOver, "the scheduler has not been Available"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "s", Name: "packer", Generation: 2},
				Spec: v1.SecondarySchedulerSpec{Routing: &v1.Routing{}}}
			status := &v1.SecondarySchedulerStatus{}
			tt.facts.Audited = -1
			Routing(cr, status, NewConditions(cr, status), tt.facts)
			condition := meta.FindStatusCondition(status.Conditions, string(v1.ConditionRouting))
			if condition == nil {
				t.Fatal("no Routing condition")
			}
			if condition.Status != tt.wantStatus || condition.Reason != string(tt.wantReason) || !strings.Contains(condition.Message, tt.wantInMessage) {
				t.Errorf("Routing %s %s %q, want %s %s with %q", condition.Status, condition.Reason, condition.Message, tt.wantStatus, tt.wantReason,
					tt.wantInMessage)
			}
		})
	}
}
