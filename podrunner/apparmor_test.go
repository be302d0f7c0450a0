package podrunner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAdmitAppArmor(t *testing.T) {
	profile := func(typ corev1.AppArmorProfileType) *corev1.AppArmorProfile {
		return &corev1.AppArmorProfile{Type: typ}
	}
	withPod := func(p *corev1.AppArmorProfile) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{AppArmorProfile: p}, Containers: []corev1.Container{{Name: "c"}}}}
	}
	withInit := func(p *corev1.AppArmorProfile) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "i", SecurityContext: &corev1.SecurityContext{AppArmorProfile: p}}}, Containers: []corev1.Container{{Name: "c"}}}}
	}
	withAnnotation := func(v string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": v}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	}
	cases := []struct {
		name     string
		pod      *corev1.Pod
		required bool
	}{
		{"no profile", &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}, false},
		{"pod Unconfined", withPod(profile(corev1.AppArmorProfileTypeUnconfined)), false},
		{"pod RuntimeDefault", withPod(profile(corev1.AppArmorProfileTypeRuntimeDefault)), true},
		{"init container Localhost", withInit(&corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptrTo("p")}), true},
		{"init container Unconfined", withInit(profile(corev1.AppArmorProfileTypeUnconfined)), false},
		{"annotation runtime/default", withAnnotation("runtime/default"), true},
		{"annotation unconfined", withAnnotation("unconfined"), false},
	}
	for _, tc := range cases {
		if got := AppArmorRequired(tc.pod); got != tc.required {
			t.Errorf("%s: required %v, want %v", tc.name, got, tc.required)
		}
		for _, host := range []bool{false, true} {
			ok, reason, msg := AdmitAppArmor(tc.pod, host)
			if ok == tc.required || (!ok && (reason != ReasonAppArmor || msg == "")) {
				t.Errorf("%s, host AppArmor %v: %v %q %q", tc.name, host, ok, reason, msg)
			}
			if !ok && !host && msg != "Cannot enforce AppArmor: AppArmor is not enabled on the host" {
				t.Errorf("%s: message %q, want the kubelet's", tc.name, msg)
			}
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
