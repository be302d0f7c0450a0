package podrunner

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestCapTerminationMessages(t *testing.T) {
	pod := testPod(corev1.RestartPolicyNever, []string{"i1", "i2"}, "a", "b", "c", "d")
	long := strings.Repeat("x", 4096)
	term := func() corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: long}}
	}
	st := corev1.PodStatus{
		InitContainerStatuses: []corev1.ContainerStatus{{State: term()}, {State: term()}},
		ContainerStatuses:     []corev1.ContainerStatus{{State: term(), LastTerminationState: term()}, {State: term()}, {}, {State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: "short"}}}},
	}
	capTerminationMessages(pod, &st)
	total := 0
	for _, cs := range append(st.InitContainerStatuses, st.ContainerStatuses...) {
		if cs.State.Terminated != nil {
			if l := len(cs.State.Terminated.Message); l > 12*1024/6 {
				t.Errorf("message of %d bytes, want at most %d", l, 12*1024/6)
			}
			total += len(cs.State.Terminated.Message)
		}
	}
	if total > 12*1024 {
		t.Errorf("pod total %d bytes over 12 KiB", total)
	}
	if st.ContainerStatuses[3].State.Terminated.Message != "short" || len(st.ContainerStatuses[0].LastTerminationState.Terminated.Message) != 2048 {
		t.Errorf("short messages stay; lastState is cut too: %q, %d", st.ContainerStatuses[3].State.Terminated.Message, len(st.ContainerStatuses[0].LastTerminationState.Terminated.Message))
	}
}
