package pendingpods

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ElasticQuota is what the quota arithmetic reads of one of scheduler-plugins' ElasticQuotas
// (scheduling.x-k8s.io/v1alpha1): CapacityScheduling holds each namespace that has one to it.
type ElasticQuota struct {
	// Namespace and Name name the ElasticQuota; it binds the pods of its namespace.
	Namespace, Name string
	// Min and Max are its spec.min and spec.max; nil when the spec leaves one out.
	Min, Max corev1.ResourceList
	// Used is its status.used, which scheduler-plugins' controller keeps: what the
	// namespace's running pods request.
	Used corev1.ResourceList
}

// QuotaRefusal says why CapacityScheduling refuses a pod: placing it would take its
// namespace's ElasticQuota beyond its max, or would take the quotas' use, all together,
// beyond the sum of their mins (a namespace borrows only what others leave of theirs).
type QuotaRefusal struct {
	// Quota is the pod's namespace's ElasticQuota, as namespace/name.
	Quota string
	// Resource is the first resource the pod would take beyond the bound.
	Resource corev1.ResourceName
	// Used is what is used of Resource: of the quota for a max, of every quota for the mins.
	// Requested is what the pod requests of it, Bound the bound it would pass.
	Used, Requested, Bound resource.Quantity
	// Borrowing is true when the bound is the sum of every quota's min (the namespace's own
	// max would allow the pod), false when it is the quota's max.
	Borrowing bool
}

// boundedResources are the resources CapacityScheduling compares whatever the pod requests
// (its framework.Resource's fields), in its order; a bound that a quota's min or max leaves
// out of them is zero. Any other resource is compared only when the pod requests it, and a
// max that leaves it out does not bound it.
var boundedResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory,
	corev1.ResourceEphemeralStorage, corev1.ResourcePods}

// RefusedByQuota is why CapacityScheduling refuses a pod of namespace that requests
// request, given the cluster's quotas; nil when it would not. It follows the plugin's
// PreFilter (pkg/capacityscheduling/capacity_scheduling.go and elasticquota.go of the
// pinned scheduler-plugins): a namespace without an ElasticQuota is not held; a pod is
// refused when its quota's use with it passes the max, else when every quota's use with it
// passes the sum of their mins. It leaves out the pods the scheduler nominated for
// preemption, which only the scheduler knows, and reads use as the controller last wrote it.
func RefusedByQuota(namespace string, request corev1.ResourceList, quotas []ElasticQuota) *QuotaRefusal {
	index := slices.IndexFunc(quotas, func(quota ElasticQuota) bool { return quota.Namespace == namespace })
	if index < 0 {
		return nil
	}
	own := quotas[index]
	names := comparedResources(request)
	if own.Max != nil {
		for _, name := range names {
			used := quantity(own.Used, name)
			if bound, bounded := maxBound(own.Max, name); bounded && passes(used, request, name, bound) {
				return &QuotaRefusal{Quota: own.Namespace + "/" + own.Name, Resource: name, Used: used,
					Requested: quantity(request, name), Bound: bound}
			}
		}
	}
	for _, name := range names {
		var used, bound resource.Quantity
		for _, quota := range quotas {
			used.Add(quantity(quota.Used, name))
			bound.Add(quantity(quota.Min, name))
		}
		if passes(used, request, name, bound) {
			return &QuotaRefusal{Quota: own.Namespace + "/" + own.Name, Resource: name, Used: used,
				Requested: quantity(request, name), Bound: bound, Borrowing: true}
		}
	}
	return nil
}

// Message says, for a status message, what r means.
func (r *QuotaRefusal) Message() string {
	if r.Borrowing {
		return fmt.Sprintf("ElasticQuota %s may borrow only what other namespaces leave of their min, and all ElasticQuotas "+
			"together use %s of %s with the %s of their mins; the pod requests %s more", r.Quota, r.Used.String(), r.Resource,
			r.Bound.String(), r.Requested.String())
	}
	return fmt.Sprintf("ElasticQuota %s uses %s of its max of %s %s; the pod requests %s more", r.Quota, r.Used.String(),
		r.Bound.String(), r.Resource, r.Requested.String())
}

// PodRequest is what CapacityScheduling counts a pod as requesting
// (computePodResourceRequest): the sum of its containers' requests or the largest init
// container's, whichever is larger per resource, plus its overhead.
func PodRequest(pod *corev1.Pod) corev1.ResourceList {
	request := corev1.ResourceList{}
	for _, container := range pod.Spec.Containers {
		for name, value := range container.Resources.Requests {
			sum := request[name]
			sum.Add(value)
			request[name] = sum
		}
	}
	for _, container := range pod.Spec.InitContainers {
		for name, value := range container.Resources.Requests {
			if current, ok := request[name]; !ok || value.Cmp(current) > 0 {
				request[name] = value.DeepCopy()
			}
		}
	}
	for name, value := range pod.Spec.Overhead {
		sum := request[name]
		sum.Add(value)
		request[name] = sum
	}
	return request
}

// comparedResources are the resources CapacityScheduling compares for a pod requesting
// request: boundedResources, then the others it requests, in order of name.
func comparedResources(request corev1.ResourceList) []corev1.ResourceName {
	names := slices.Clone(boundedResources)
	var others []corev1.ResourceName
	for name := range request {
		if !slices.Contains(boundedResources, name) {
			others = append(others, name)
		}
	}
	slices.Sort(others)
	return append(names, others...)
}

// maxBound is a max's bound on name, and whether it bounds it at all: a resource of
// boundedResources that the max leaves out is bounded by zero, any other is not bounded.
func maxBound(limits corev1.ResourceList, name corev1.ResourceName) (resource.Quantity, bool) {
	if bound, ok := limits[name]; ok {
		return bound, true
	}
	if slices.Contains(boundedResources, name) {
		return resource.Quantity{}, true
	}
	return resource.Quantity{}, false
}

// passes reports whether used and the request's name together pass bound.
func passes(used resource.Quantity, request corev1.ResourceList, name corev1.ResourceName, bound resource.Quantity) bool {
	total := used.DeepCopy()
	total.Add(quantity(request, name))
	return total.Cmp(bound) > 0
}

// quantity is list's name, zero when it has none.
func quantity(list corev1.ResourceList, name corev1.ResourceName) resource.Quantity {
	if value, ok := list[name]; ok {
		return value.DeepCopy()
	}
	return resource.Quantity{}
}
