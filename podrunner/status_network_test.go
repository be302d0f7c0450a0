package podrunner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestBuildStatusPodIPFromSandbox(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, nil, "main")
	sb := sbRec("sb0", 0, StateRunning, at(0))
	sb.PodIPs = []string{"10.89.0.7", "fd00::7"}
	st := buildStatus(pod, []ContainerRecord{sb, runningRec("m0", "main", KindApp, 0, at(1))}, nil, false)
	if st.PodIP != "10.89.0.7" || len(st.PodIPs) != 2 || st.PodIPs[0].IP != "10.89.0.7" || st.PodIPs[1].IP != "fd00::7" {
		t.Errorf("podIP %q podIPs %v, want the sandbox's CNI IPs", st.PodIP, st.PodIPs)
	}
	if st.HostIP != "10.0.0.5" {
		t.Errorf("hostIP %q", st.HostIP)
	}
	sb.State = StateExited
	st = buildStatus(pod, []ContainerRecord{sb}, nil, false)
	if st.PodIP != "" || len(st.PodIPs) != 0 {
		t.Errorf("sandbox not running: podIP %q podIPs %v, want none", st.PodIP, st.PodIPs)
	}
}
