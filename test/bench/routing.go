package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

const (
	// routingNamespace holds the SecondaryScheduler whose route the routing benchmark
	// measures; routedNamespace is the namespace its route selects, unroutedNamespace one
	// it does not.
	routingNamespace  = "bench-routing"
	routedNamespace   = "bench-routed"
	unroutedNamespace = "bench-unrouted"
	// routingPods is how many pods are created in each of the two namespaces.
	routingPods = 2000
	// routedLabel selects routedNamespace for the route.
	routedLabel = "bench.secondary-scheduler.io/routed"
)

var unitPercent = unit{"%", 1}

// runRouting measures what routing adds to the creation of a pod: the API server runs
// the routing policy (a MutatingAdmissionPolicy) on every pod created, in the namespaces a
// route selects and in the others (where its match conditions say no). Pods are created
// in turn in a routed and an unrouted namespace, so that both see the same API server.
func runRouting(ctx context.Context, e *env) (*section, error) {
	s := &section{
		name:  "routing",
		title: fmt.Sprintf("creating %d pods with a route in place, %d without", routingPods, routingPods),
		what: fmt.Sprintf("A BinPacking SecondaryScheduler routes the pods of namespace %s (spec.routing); %d pods are created there and %d in "+
			"namespace %s, which no route selects, one at a time, in turn (the order swapped every other pair). Every pod is held by a "+
			"scheduling gate, so that no scheduler works meanwhile.", routedNamespace, routingPods, routingPods, unroutedNamespace),
		how: "Each create's latency as the client sees it (the request to the API server's answer), by namespace; the routed pods' " +
			"spec.schedulerName is checked.",
	}
	if err := e.usePodrunner(ctx, true); err != nil {
		return s, err
	}
	for namespace, labels := range map[string]map[string]string{routedNamespace: {routedLabel: "true"}, unroutedNamespace: nil} {
		if err := e.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: labels}}); client.IgnoreAlreadyExists(err) != nil {
			return s, fmt.Errorf("create namespace %s: %w", namespace, err)
		}
	}
	router := binPacking(routingNamespace, "router")
	router.Spec.Routing = &v1.Routing{NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{routedLabel: "true"}}}
	if err := e.client.Create(ctx, router); client.IgnoreAlreadyExists(err) != nil {
		return s, fmt.Errorf("create the routing SecondaryScheduler: %w", err)
	}
	if err := e.waitRouted(ctx, router); err != nil {
		return s, err
	}
	var routed, unrouted []float64
	misrouted := 0
	for i := range routingPods {
		order := []string{routedNamespace, unroutedNamespace}
		if i%2 == 1 {
			order = []string{unroutedNamespace, routedNamespace}
		}
		for _, namespace := range order {
			pod := gatedPod(namespace)
			started := time.Now()
			if err := e.client.Create(ctx, pod); err != nil {
				return s, fmt.Errorf("create a pod in %s: %w", namespace, err)
			}
			took := float64(time.Since(started)) / float64(time.Millisecond)
			if namespace == routedNamespace {
				routed = append(routed, took)
				if pod.Spec.SchedulerName != router.Name {
					misrouted++
				}
			} else {
				unrouted = append(unrouted, took)
				if pod.Spec.SchedulerName != corev1.DefaultSchedulerName {
					misrouted++
				}
			}
		}
	}
	p99Added := (percentile(routed, 99)/percentile(unrouted, 99) - 1) * 100
	s.rows = []row{
		{figure: "create, without a route, p50", values: []float64{percentile(unrouted, 50)}, unit: unitMilliseconds},
		{figure: "create, with a route, p50", values: []float64{percentile(routed, 50)}, unit: unitMilliseconds},
		{figure: "create, without a route, p99", values: []float64{percentile(unrouted, 99)}, unit: unitMilliseconds},
		{figure: "create, with a route, p99", values: []float64{percentile(routed, 99)}, unit: unitMilliseconds},
		{figure: "added by the route, p99", values: []float64{p99Added}, unit: unitPercent, target: below(10)},
		{figure: "pods given the wrong scheduler", values: []float64{float64(misrouted)}, unit: unitCount, target: zero()},
	}
	for _, namespace := range []string{routedNamespace, unroutedNamespace} {
		if err := e.client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(namespace), client.GracePeriodSeconds(0)); err != nil {
			return s, fmt.Errorf("delete the pods of %s: %w", namespace, err)
		}
	}
	return s, e.clean(ctx, routingNamespace)
}

// waitRouted waits until router's route is in place and the API server applies it: a pod
// created in routedNamespace gets router's scheduler name.
func (e *env) waitRouted(ctx context.Context, router *v1.SecondaryScheduler) error {
	return e.pollEvery(ctx, time.Second, 3*time.Minute, "new pods of "+routedNamespace+" are routed", func() (bool, error) {
		probe := gatedPod(routedNamespace)
		if err := e.client.Create(ctx, probe); err != nil {
			return false, err
		}
		if err := e.client.Delete(ctx, probe, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			return false, err
		}
		return probe.Spec.SchedulerName == router.Name, nil
	})
}

// gatedPod is a pod of namespace that a scheduling gate holds: no scheduler looks at it.
func gatedPod(namespace string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "routing-"},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "bench.secondary-scheduler.io/hold"}},
			Containers:      []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		},
	}
}
