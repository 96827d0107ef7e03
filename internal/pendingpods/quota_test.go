package pendingpods

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestRefusedByQuota checks the quota arithmetic against CapacityScheduling's PreFilter:
// the namespace's max first, then the sum of every min, with the bounds a quota leaves out.
func TestRefusedByQuota(t *testing.T) {
	list := func(pairs ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(pairs); i += 2 {
			out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
		}
		return out
	}
	team := ElasticQuota{Namespace: "team", Name: "quota", Min: list("cpu", "500m", "memory", "4Gi"),
		Max: list("cpu", "1500m", "memory", "4Gi"), Used: list("cpu", "1", "memory", "1Gi")}
	lender := ElasticQuota{Namespace: "lender", Name: "quota", Min: list("cpu", "1500m", "memory", "4Gi"),
		Max: list("cpu", "2", "memory", "4Gi")}
	tests := []struct {
		name      string
		namespace string
		request   corev1.ResourceList
		quotas    []ElasticQuota
		want      *QuotaRefusal
	}{
		{"no quota in the namespace", "other", list("cpu", "64"), []ElasticQuota{team, lender}, nil},
		{"within its max, borrowing the lender's min", "team", list("cpu", "500m"), []ElasticQuota{team, lender}, nil},
		{"beyond its max", "team", list("cpu", "600m"), []ElasticQuota{team, lender},
			&QuotaRefusal{Quota: "team/quota", Resource: "cpu", Used: resource.MustParse("1"), Requested: resource.MustParse("600m"),
				Bound: resource.MustParse("1500m")}},
		{"a max that leaves memory out bounds it at zero", "team", list("cpu", "100m", "memory", "1Mi"),
			[]ElasticQuota{{Namespace: "team", Name: "q", Max: list("cpu", "2")}},
			&QuotaRefusal{Quota: "team/q", Resource: "memory", Requested: resource.MustParse("1Mi")}},
		{"a max that leaves a GPU out does not bound it", "team", list("nvidia.com/gpu", "8"),
			[]ElasticQuota{{Namespace: "team", Name: "q", Min: list("nvidia.com/gpu", "8"), Max: list("cpu", "2")}}, nil},
		{"no max at all bounds nothing", "team", list("cpu", "64"),
			[]ElasticQuota{{Namespace: "team", Name: "q", Min: list("cpu", "64")}}, nil},
		{"within its max, but no min is left to borrow", "team", list("cpu", "500m"),
			[]ElasticQuota{team, {Namespace: "lender", Name: "quota", Min: list("cpu", "1500m", "memory", "4Gi"), Used: list("cpu", "1500m")}},
			&QuotaRefusal{Quota: "team/quota", Resource: "cpu", Used: resource.MustParse("2500m"), Requested: resource.MustParse("500m"),
				Bound: resource.MustParse("2"), Borrowing: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RefusedByQuota(tt.namespace, tt.request, tt.quotas)
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("RefusedByQuota (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodRequest checks that a pod requests its containers' sum or its largest init
// container, whichever is larger per resource, plus its overhead.
func TestPodRequest(t *testing.T) {
	requests := func(cpu, memory string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Resources: requests("2", "64Mi")}},
		Containers:     []corev1.Container{{Resources: requests("500m", "256Mi")}, {Resources: requests("500m", "256Mi")}},
		Overhead:       corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
	}}
	got := PodRequest(pod)
	want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2100m"), corev1.ResourceMemory: resource.MustParse("512Mi")}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("PodRequest (-want +got):\n%s", diff)
	}
}
