package main

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestFakeReadyReportsReadyWithoutProcess(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "scheduler-abc", UID: "4f1c2d3e-0000"},
		Spec: corev1.PodSpec{NodeName: "scheduler-host", Containers: []corev1.Container{{
			Name: "kube-scheduler", Image: "registry.example/no-binary-for-this:v1", Command: []string{"/bin/kube-scheduler"}}}},
	}
	clientset := fake.NewClientset(pod)
	// No --binaries: a pod that needed a process would wait in ErrImagePull.
	r := &runner{clientset: clientset, workDir: t.TempDir(), fakeReady: true, pods: map[string]*podProcess{}}
	ctx, cancel := context.WithCancel(t.Context())
	process := newPodProcess(r, pod, cancel)
	go process.supervise(ctx)

	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := clientset.CoreV1().Pods("bench").Get(t.Context(), pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase == corev1.PodRunning && podReady(got) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod not Running and Ready: %+v", got.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	process.stop()
}

func podReady(pod *corev1.Pod) bool {
	for _, condition := range pod.Status.Conditions {
		if condition.Type == corev1.PodReady {
			return condition.Status == corev1.ConditionTrue
		}
	}
	return false
}
