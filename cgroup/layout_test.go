package cgroup

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestLayout(t *testing.T) {
	const uid = "1234-abcd"
	for _, tc := range []struct {
		driver              Driver
		parent              string
		qos                 corev1.PodQOSClass
		pod, cgroupsPath, c string
	}{
		{DriverCgroupfs, "", corev1.PodQOSGuaranteed, "/podkeeper/pod1234-abcd", "/podkeeper/pod1234-abcd/ctr", "/podkeeper/pod1234-abcd/ctr"},
		{DriverCgroupfs, "kube", corev1.PodQOSBurstable, "/kube/burstable/pod1234-abcd", "/kube/burstable/pod1234-abcd/ctr", "/kube/burstable/pod1234-abcd/ctr"},
		{DriverCgroupfs, "", corev1.PodQOSBestEffort, "/podkeeper/besteffort/pod1234-abcd", "/podkeeper/besteffort/pod1234-abcd/ctr", "/podkeeper/besteffort/pod1234-abcd/ctr"},
		{DriverSystemd, "", corev1.PodQOSGuaranteed, "/podkeeper.slice/podkeeper-pod1234_abcd.slice", "podkeeper-pod1234_abcd.slice:podkeeper:ctr", "/podkeeper.slice/podkeeper-pod1234_abcd.slice/podkeeper-ctr.scope"},
		{DriverSystemd, "", corev1.PodQOSBurstable, "/podkeeper.slice/podkeeper-burstable.slice/podkeeper-burstable-pod1234_abcd.slice", "podkeeper-burstable-pod1234_abcd.slice:podkeeper:ctr", "/podkeeper.slice/podkeeper-burstable.slice/podkeeper-burstable-pod1234_abcd.slice/podkeeper-ctr.scope"},
		{DriverSystemd, "edge", corev1.PodQOSBestEffort, "/edge.slice/edge-besteffort.slice/edge-besteffort-pod1234_abcd.slice", "edge-besteffort-pod1234_abcd.slice:podkeeper:ctr", "/edge.slice/edge-besteffort.slice/edge-besteffort-pod1234_abcd.slice/podkeeper-ctr.scope"},
	} {
		l := Layout{Driver: tc.driver, Parent: tc.parent}
		if got := l.PodDir(tc.qos, uid); got != tc.pod {
			t.Errorf("%s %s PodDir = %s, want %s", tc.driver, tc.qos, got, tc.pod)
		}
		if got := l.ContainerCgroupsPath(tc.qos, uid, "ctr"); got != tc.cgroupsPath {
			t.Errorf("%s %s cgroupsPath = %s, want %s", tc.driver, tc.qos, got, tc.cgroupsPath)
		}
		if got := l.ContainerDir(tc.qos, uid, "ctr"); got != tc.c {
			t.Errorf("%s %s ContainerDir = %s, want %s", tc.driver, tc.qos, got, tc.c)
		}
	}
	if _, err := ParseDriver("cgroupfsx"); err == nil {
		t.Fatal("ParseDriver accepted a bad driver")
	}
}
