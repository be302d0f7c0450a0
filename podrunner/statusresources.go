package podrunner

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podkeeper/podkeeper/cgroup"
)

// The resources a pod's status reports, as the kubelet 1.37 does (in-place resize is GA there):
// each container's allocatedResources (its requests) and resources (requests and limits as
// applied), and the pod's totals. Only CPU and memory are reported. podkeeper never resizes in
// place, so what is applied is what the spec asks.

var statusResourceNames = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// pick keeps the CPU and memory entries of l; nil when there are none. CPU is in whole
// millicores, a finer quantity rounded up (the kubelet's status shows 100u as 1m: make
// conformance's edge-cpu-micro).
func pick(l corev1.ResourceList) corev1.ResourceList {
	var out corev1.ResourceList
	for _, n := range statusResourceNames {
		if q, ok := l[n]; ok {
			if out == nil {
				out = corev1.ResourceList{}
			}
			out[n] = q.DeepCopy()
			if n != corev1.ResourceCPU {
				continue
			}
			if milli := resource.NewMilliQuantity(q.MilliValue(), q.Format); q.Cmp(*milli) != 0 {
				out[n] = *milli
			}
		}
	}
	return out
}

// containerStatusResources returns a container's allocatedResources and resources for its
// status; a request left out but limited counts its limit (the API server's defaulting).
func containerStatusResources(c *corev1.Container) (corev1.ResourceList, *corev1.ResourceRequirements) {
	req, lim := pick(c.Resources.Requests), pick(c.Resources.Limits)
	for n, q := range lim {
		if _, ok := req[n]; !ok {
			if req == nil {
				req = corev1.ResourceList{}
			}
			req[n] = q.DeepCopy()
		}
	}
	if req == nil && lim == nil {
		return nil, nil
	}
	return req, &corev1.ResourceRequirements{Requests: req, Limits: lim}
}

// podStatusResources returns the pod's allocatedResources (PodRequests) and resources, as the
// kubelet reports them in phase: while the pod runs, the requests and per resource its pod-level
// limit, else the sum of the app containers' limits when every one has it (the pod cgroup's
// limits); in any other phase (Pending, Succeeded, Failed) the requests and cgroup.PodLimits (the
// kubelet's resource helper: an init container's limit counts, a container without one adds
// nothing).
func podStatusResources(pod *corev1.Pod, phase corev1.PodPhase) (corev1.ResourceList, *corev1.ResourceRequirements) {
	if phase != corev1.PodRunning {
		req, lim := withZeroRequests(pod, pick(PodRequests(pod))), pick(cgroup.PodLimits(pod))
		if req == nil && lim == nil {
			return nil, nil
		}
		return req, &corev1.ResourceRequirements{Requests: req, Limits: lim}
	}
	req := withZeroRequests(pod, pick(PodRequests(pod)))
	var lim corev1.ResourceList
	for _, n := range statusResourceNames {
		if cgroup.PodLevelSet(pod) {
			if q, ok := pod.Spec.Resources.Limits[n]; ok {
				if lim == nil {
					lim = corev1.ResourceList{}
				}
				lim[n] = q.DeepCopy()
				continue
			}
		}
		var sum resource.Quantity
		all := len(pod.Spec.Containers) > 0
		for _, c := range pod.Spec.Containers {
			q, ok := c.Resources.Limits[n]
			if !ok {
				all = false
				break
			}
			sum.Add(q)
		}
		if all {
			if lim == nil {
				lim = corev1.ResourceList{}
			}
			lim[n] = sum
		}
	}
	lim = pick(lim) // the sums in whole millicores too
	if req == nil && lim == nil {
		return nil, nil
	}
	return req, &corev1.ResourceRequirements{Requests: req, Limits: lim}
}

// withZeroRequests adds a zero entry to the pod's requests req for CPU or memory that a container
// requests (or, without a request, limits) when their total is zero: the kubelet's sums keep
// such a resource (make conformance's edge-limits-only-memory-zero: a memory limit of 0), where
// cgroup.PodRequests leaves a zero total out (its callers size cgroups by it).
func withZeroRequests(pod *corev1.Pod, req corev1.ResourceList) corev1.ResourceList {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, n := range statusResourceNames {
				_, requested := c.Resources.Requests[n]
				_, limited := c.Resources.Limits[n]
				if _, ok := req[n]; ok || !(requested || limited) {
					continue
				}
				if req == nil {
					req = corev1.ResourceList{}
				}
				req[n] = *resource.NewQuantity(0, resource.DecimalSI)
			}
		}
	}
	return req
}
