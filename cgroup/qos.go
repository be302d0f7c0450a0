// Package cgroup holds podkeeper's resource decisions: the QoS class of a pod now; the pod cgroup
// tree, limits and usage (containerd/cgroups/v3) arrive with the resources issue.
package cgroup

import (
	corev1 "k8s.io/api/core/v1"
)

// QOSClass computes a pod's QoS class as Kubernetes does:
//   - Guaranteed: every container (init containers included) has cpu and memory limits, and its
//     requests, where given, equal the limits (a missing request defaults to the limit);
//   - BestEffort: no container has any cpu or memory request or limit;
//   - Burstable: everything else.
func QOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	hasAny, guaranteed := false, true
	var ctrs []corev1.Container
	ctrs = append(ctrs, pod.Spec.InitContainers...)
	ctrs = append(ctrs, pod.Spec.Containers...)
	for _, c := range ctrs {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[name]
			lim, hasLim := c.Resources.Limits[name]
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
