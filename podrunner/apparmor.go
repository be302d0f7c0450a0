package podrunner

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// AppArmor, as the kubelet admits it: a pod that asks for an AppArmor profile (other than
// Unconfined, by field or by the deprecated container annotation) on a host without AppArmor is
// rejected, Failed with reason AppArmor, never run unconfined. podkeeper does not apply AppArmor
// profiles itself (containerd's CRI would load its default profile and the Localhost ones), so
// on a host with AppArmor such a pod is rejected too, with that reason; a pod that asks for no
// profile runs as it would without AppArmor.

// ReasonAppArmor is the kubelet's rejection reason.
const ReasonAppArmor = "AppArmor"

// AppArmorRequired says whether pod asks for an AppArmor profile. Pure.
func AppArmorRequired(pod *corev1.Pod) bool {
	confined := func(p *corev1.AppArmorProfile) bool {
		return p != nil && p.Type != corev1.AppArmorProfileTypeUnconfined
	}
	if sc := pod.Spec.SecurityContext; sc != nil && confined(sc.AppArmorProfile) {
		return true
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.SecurityContext != nil && confined(c.SecurityContext.AppArmorProfile) {
				return true
			}
		}
	}
	for k, v := range pod.Annotations {
		if strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) && v != corev1.DeprecatedAppArmorBetaProfileNameUnconfined {
			return true
		}
	}
	return false
}

// AdmitAppArmor decides a pod's AppArmor admission on a host with (hostSupports) or without
// AppArmor; on refusal the reason and message, as the kubelet words them. Pure.
func AdmitAppArmor(pod *corev1.Pod, hostSupports bool) (ok bool, reason, message string) {
	if !AppArmorRequired(pod) {
		return true, "", ""
	}
	if !hostSupports {
		return false, ReasonAppArmor, "Cannot enforce AppArmor: AppArmor is not enabled on the host"
	}
	return false, ReasonAppArmor, "Cannot enforce AppArmor: podkeeper does not apply AppArmor profiles (set the profile to Unconfined, or leave it out)"
}
