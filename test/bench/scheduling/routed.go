package scheduling

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/routing"
)

// The OursRouted runs' pods name no scheduler: the routing policy the installer ships
// (render.RoutingAdmission), with a routing table internal/render renders for a route of
// the benchmark's namespace, gives them the scheduler's name as the API server creates
// them, as spec.routing does (the benchmark applies both itself: no operator runs here).

// benchRoutingPolicy names the benchmark's routing policy, its binding and its table.
const benchRoutingPolicy = "scheduling-bench-routing"

// routePods puts in place the routing policy, its binding and a table with a route of
// benchNamespace to schedulerName, and waits until the API server applies them.
func routePods(ctx context.Context, client kubernetes.Interface) error {
	route := routing.Route{Owner: types.NamespacedName{Namespace: benchNamespace, Name: schedulerName}, Generation: 1,
		SchedulerName: schedulerName, Mode: v1.RoutingEnforce,
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: benchNamespace}}}
	rendered, err := render.RoutingAdmission()
	if err != nil {
		return err
	}
	policy, binding := &admissionregistrationv1.MutatingAdmissionPolicy{}, &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(rendered[0].Object, policy); err != nil {
		return fmt.Errorf("convert the routing policy: %w", err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(rendered[1].Object, binding); err != nil {
		return fmt.Errorf("convert the routing policy's binding: %w", err)
	}
	table, err := render.RoutingTable([]routing.Route{route}, nil, nil)
	if err != nil {
		return err
	}
	// Names and labels of the benchmark's own: an operator running in the same cluster
	// keeps the table of its name as its routes say, and would delete this one.
	policy.Name, policy.Labels = benchRoutingPolicy, nil
	binding.Name, binding.Labels, binding.Spec.PolicyName, binding.Spec.ParamRef.Name = benchRoutingPolicy, nil, benchRoutingPolicy, benchRoutingPolicy
	table.Name, table.Labels = benchRoutingPolicy, nil
	admission := client.AdmissionregistrationV1()
	if _, err := admission.MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the routing policy: %w", err)
	}
	if _, err := admission.MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the routing policy's binding: %w", err)
	}
	body, err := json.Marshal(table)
	if err != nil {
		return fmt.Errorf("encode the routing table: %w", err)
	}
	err = client.Discovery().RESTClient().Post().AbsPath(routingTablesPath).SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the routing table: %w", err)
	}
	// The API server loads a new policy within a second or so: a probe pod shows when.
	pods := client.CoreV1().Pods(benchNamespace)
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "routing-probe-"},
			Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: "scheduling-bench/probe"}},
				Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
		created, err := pods.Create(ctx, probe, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		if err := pods.Delete(ctx, created.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
		return created.Spec.SchedulerName == schedulerName, nil
	})
	if err != nil {
		return fmt.Errorf("wait for the API server to route the benchmark's pods: %w", err)
	}
	return nil
}

// routingTablesPath is where the API server serves RoutingTables.
var routingTablesPath = "/apis/" + v1.GroupVersion.String() + "/routingtables"

// unroutePods deletes the routing policy, its binding and its table. The other runs'
// pods name the scheduler themselves, which the policy leaves alone while the API server
// still has it.
func unroutePods(ctx context.Context, client kubernetes.Interface) error {
	err := client.Discovery().RESTClient().Delete().AbsPath(routingTablesPath, benchRoutingPolicy).Do(ctx).Error()
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the routing table: %w", err)
	}
	admission := client.AdmissionregistrationV1()
	if err := admission.MutatingAdmissionPolicyBindings().Delete(ctx, benchRoutingPolicy, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the routing policy's binding: %w", err)
	}
	if err := admission.MutatingAdmissionPolicies().Delete(ctx, benchRoutingPolicy, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the routing policy: %w", err)
	}
	return nil
}
