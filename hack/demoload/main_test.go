package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRenderSumsWhatPodsUse(t *testing.T) {
	node := func(name string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")}}}
	}
	pod := func(node, cpuRequest, cpuUse string, phase corev1.PodPhase) corev1.Pod {
		p := corev1.Pod{Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuRequest), corev1.ResourceMemory: resource.MustParse("4Gi")}}}}},
			Status: corev1.PodStatus{Phase: phase}}
		if cpuUse != "" {
			p.Annotations = map[string]string{cpuUseAnnotation: cpuUse}
		}
		return p
	}
	got := render([]corev1.Node{node("fake-2"), node("fake-1")}, []corev1.Pod{
		pod("fake-1", "1", "", corev1.PodRunning),          // uses its request: 1 of 4
		pod("fake-1", "500m", "1", corev1.PodRunning),      // uses its annotation: 1 of 4
		pod("fake-2", "2", "", corev1.PodSucceeded),        // done: uses nothing
		pod("fake-2", "100m", "not a quantity", "Running"), // a bad annotation: its request
	}, seriesNames{cpu: "instance:node_cpu:ratio", memory: "instance:node_memory_utilisation:ratio"})
	want := "# TYPE instance:node_cpu:ratio gauge\n" +
		"instance:node_cpu:ratio{instance=\"fake-1\"} 0.55\n" +
		"instance:node_cpu:ratio{instance=\"fake-2\"} 0.075\n" +
		"# TYPE instance:node_memory_utilisation:ratio gauge\n" +
		"instance:node_memory_utilisation:ratio{instance=\"fake-1\"} 0.55\n" +
		"instance:node_memory_utilisation:ratio{instance=\"fake-2\"} 0.3\n"
	if got != want {
		t.Errorf("render =\n%s\nwant\n%s", got, want)
	}
}
