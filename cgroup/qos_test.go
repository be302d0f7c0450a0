package cgroup

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func res(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestQOSClass(t *testing.T) {
	cases := []struct {
		name string
		ctrs []corev1.ResourceRequirements
		want corev1.PodQOSClass
	}{
		{"none", []corev1.ResourceRequirements{{}}, corev1.PodQOSBestEffort},
		{"limits only", []corev1.ResourceRequirements{{Limits: res("cpu", "1", "memory", "64Mi")}}, corev1.PodQOSGuaranteed},
		{"equal", []corev1.ResourceRequirements{{Limits: res("cpu", "1", "memory", "64Mi"), Requests: res("cpu", "1000m", "memory", "64Mi")}}, corev1.PodQOSGuaranteed},
		{"request lower", []corev1.ResourceRequirements{{Limits: res("cpu", "1", "memory", "64Mi"), Requests: res("cpu", "500m", "memory", "64Mi")}}, corev1.PodQOSBurstable},
		{"memory only", []corev1.ResourceRequirements{{Limits: res("memory", "64Mi")}}, corev1.PodQOSBurstable},
		{"one of two", []corev1.ResourceRequirements{{Limits: res("cpu", "1", "memory", "64Mi")}, {}}, corev1.PodQOSBurstable},
		{"request only", []corev1.ResourceRequirements{{Requests: res("cpu", "100m")}}, corev1.PodQOSBurstable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{}
			for _, r := range tc.ctrs {
				pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "c", Resources: r})
			}
			if got := QOSClass(pod); got != tc.want {
				t.Fatalf("QOSClass = %s, want %s", got, tc.want)
			}
		})
	}
}
