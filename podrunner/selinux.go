package podrunner

import (
	corev1 "k8s.io/api/core/v1"
)

// SELinux: the kubelet hands seLinuxOptions to the runtime, which labels the container's
// processes and mounts on a host with SELinux enabled and ignores them on one without. podkeeper
// applies no SELinux labels: on a host without SELinux it does what the kubelet's runtime does
// (nothing); on an SELinux host it refuses a pod that asks for labels, never runs it under
// another label than it asked for.

// ReasonSELinux is the reason of a pod refused for its SELinux labels.
const ReasonSELinux = "SELinux"

// SELinuxRequested reports whether pod or one of its containers sets seLinuxOptions.
func SELinuxRequested(pod *corev1.Pod) bool {
	set := func(o *corev1.SELinuxOptions) bool { return o != nil && *o != (corev1.SELinuxOptions{}) }
	if sc := pod.Spec.SecurityContext; sc != nil && set(sc.SELinuxOptions) {
		return true
	}
	for _, c := range allContainers(pod) {
		if c.SecurityContext != nil && set(c.SecurityContext.SELinuxOptions) {
			return true
		}
	}
	return false
}

// AdmitSELinux decides a pod's SELinux admission on a host with (hostEnabled) or without
// SELinux. Pure.
func AdmitSELinux(pod *corev1.Pod, hostEnabled bool) (ok bool, reason, message string) {
	if !hostEnabled || !SELinuxRequested(pod) {
		return true, "", ""
	}
	return false, ReasonSELinux, "Cannot enforce SELinux: podkeeper does not apply SELinux labels (leave seLinuxOptions out on this host)"
}
