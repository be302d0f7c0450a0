package podrunner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestAdmitSELinux(t *testing.T) {
	plain := mgrPod("u", "p", corev1.RestartPolicyAlways, "c")
	labelled := mgrPod("u", "p", corev1.RestartPolicyAlways, "c")
	labelled.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}}
	empty := mgrPod("u", "p", corev1.RestartPolicyAlways, "c")
	empty.Spec.SecurityContext = &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{}}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		host bool
		ok   bool
	}{
		{"no labels, SELinux host", plain, true, true},
		{"labels, host without SELinux: ignored as the runtime ignores them", labelled, false, true},
		{"labels, SELinux host: refused, never run under another label", labelled, true, false},
		{"empty options are no labels", empty, true, true},
	} {
		ok, reason, msg := AdmitSELinux(tc.pod, tc.host)
		if ok != tc.ok || (!ok && (reason != ReasonSELinux || msg == "")) {
			t.Errorf("%s: got %v %q %q, want ok=%v", tc.name, ok, reason, msg, tc.ok)
		}
	}
}
