// Package cgroup holds podkeeper's resource decisions: the QoS class of a pod now; the pod cgroup
// tree, limits and usage (containerd/cgroups/v3) arrive with the resources issue.
package cgroup

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// QOSClass computes a pod's QoS class as Kubernetes does:
//   - Guaranteed: every container (init containers included) has cpu and memory limits, and its
//     requests, where given, equal the limits (a missing request defaults to the limit);
//   - BestEffort: no container has any cpu or memory request or limit;
//   - Burstable: everything else.
//
// A pod with pod-level resources (PodLevelSet) is classed by them alone, by the same rule.
func QOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	if PodLevelSet(pod) {
		return qosOf([]corev1.ResourceRequirements{*pod.Spec.Resources})
	}
	var reqs []corev1.ResourceRequirements
	for _, c := range pod.Spec.InitContainers {
		reqs = append(reqs, c.Resources)
	}
	for _, c := range pod.Spec.Containers {
		reqs = append(reqs, c.Resources)
	}
	return qosOf(reqs)
}

func qosOf(reqs []corev1.ResourceRequirements) corev1.PodQOSClass {
	hasAny, guaranteed := false, true
	for _, r := range reqs {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := r.Requests[name]
			lim, hasLim := r.Limits[name]
			if hasReq && !req.IsZero() || hasLim && !lim.IsZero() {
				hasAny = true
			}
			if !hasLim || lim.IsZero() {
				guaranteed = false
				continue
			}
			if hasReq && req.Cmp(lim) != 0 {
				guaranteed = false
			}
		}
	}
	switch {
	case !hasAny:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// PodLevelResource reports whether name may be set in a pod's spec.resources (pod-level
// resources, beta and on by default since Kubernetes 1.34): cpu, memory and hugepages.
func PodLevelResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// PodLevelSet reports whether pod sets pod-level resources: a request or limit of a
// PodLevelResource in spec.resources.
func PodLevelSet(pod *corev1.Pod) bool {
	r := pod.Spec.Resources
	if r == nil {
		return false
	}
	for _, l := range []corev1.ResourceList{r.Requests, r.Limits} {
		for n := range l {
			if PodLevelResource(n) {
				return true
			}
		}
	}
	return false
}

// AggregateContainerRequests is what a pod's containers request together, per resource, as the
// kubelet aggregates them: the sum over the app containers and the sidecars, or, when larger, a
// regular init container's request plus the sidecars started before it. A missing request counts
// its limit (the API server's defaulting). Resources nobody requests are left out.
func AggregateContainerRequests(pod *corev1.Pod) corev1.ResourceList {
	return aggregateContainers(pod, func(c *corev1.Container, name corev1.ResourceName) (resource.Quantity, bool) {
		if q, ok := c.Resources.Requests[name]; ok {
			return q, true
		}
		q, ok := c.Resources.Limits[name]
		return q, ok
	})
}

// AggregateContainerLimits is the containers' limits together, per resource, aggregated as
// AggregateContainerRequests aggregates requests (the kubelet's resource helper does both
// alike): a container without a limit adds nothing. Resources nobody limits are left out.
func AggregateContainerLimits(pod *corev1.Pod) corev1.ResourceList {
	return aggregateContainers(pod, func(c *corev1.Container, name corev1.ResourceName) (resource.Quantity, bool) {
		q, ok := c.Resources.Limits[name]
		return q, ok
	})
}

// aggregateContainers sums get over the app containers and sidecars, or takes, when larger, a
// regular init container's value plus the sidecars started before it (the sidecar KEP's formula),
// per resource any container names; zero totals are left out.
func aggregateContainers(pod *corev1.Pod, get func(c *corev1.Container, name corev1.ResourceName) (resource.Quantity, bool)) corev1.ResourceList {
	names := map[corev1.ResourceName]bool{}
	all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range all {
		for n := range c.Resources.Requests {
			names[n] = true
		}
		for n := range c.Resources.Limits {
			names[n] = true
		}
	}
	out := corev1.ResourceList{}
	for name := range names {
		var sum, sidecars, initMax resource.Quantity
		for i := range pod.Spec.Containers {
			if q, ok := get(&pod.Spec.Containers[i], name); ok {
				sum.Add(q)
			}
		}
		for i := range pod.Spec.InitContainers {
			c := &pod.Spec.InitContainers[i]
			q, ok := get(c, name)
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				if ok {
					sum.Add(q)
					sidecars.Add(q)
				}
				continue
			}
			own := sidecars.DeepCopy()
			if ok {
				own.Add(q)
			}
			if own.Cmp(initMax) > 0 {
				initMax = own
			}
		}
		if initMax.Cmp(sum) > 0 {
			sum = initMax
		}
		if !sum.IsZero() {
			out[name] = sum
		}
	}
	return out
}

// PodLimits is a pod's limits as the kubelet's resource helper computes them (what its status
// reports while the pod is not running): AggregateContainerLimits, the pod-level limit where set
// (PodLevelSet), and the overhead (spec.overhead) added to each non-zero limit.
func PodLimits(pod *corev1.Pod) corev1.ResourceList {
	out := AggregateContainerLimits(pod)
	if PodLevelSet(pod) {
		for n, q := range pod.Spec.Resources.Limits {
			if PodLevelResource(n) {
				out[n] = q.DeepCopy()
			}
		}
	}
	for n, q := range pod.Spec.Overhead {
		if v, ok := out[n]; ok && !v.IsZero() {
			v.Add(q)
			out[n] = v
		}
	}
	return out
}

// PodRequests is what a pod asks of the node, per resource: its pod-level request where it sets
// one (PodLevelSet), else AggregateContainerRequests; plus the pod's overhead (spec.overhead), as
// the kubelet counts it for admission and the pod cgroup. Zero requests are left out.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	out := AggregateContainerRequests(pod)
	if PodLevelSet(pod) {
		for n, q := range pod.Spec.Resources.Requests {
			if !PodLevelResource(n) {
				continue
			}
			if q.IsZero() {
				delete(out, n)
			} else {
				out[n] = q.DeepCopy()
			}
		}
	}
	for n, q := range pod.Spec.Overhead {
		if q.IsZero() {
			continue
		}
		v := out[n]
		v.Add(q)
		out[n] = v
	}
	return out
}
