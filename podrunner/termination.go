package podrunner

import corev1 "k8s.io/api/core/v1"

// maxPodTerminationMessages is the kubelet's budget for termination messages across a pod's
// containers (MaxPodTerminationMessageLogLength): each container status keeps at most an even
// share of it, the start of its message.
const maxPodTerminationMessages = 12 * 1024

// capTerminationMessages cuts the terminated states' messages of st to the kubelet's per-pod
// budget. Pure.
func capTerminationMessages(pod *corev1.Pod, st *corev1.PodStatus) {
	per := maxPodTerminationMessages
	if n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers); n > 0 {
		per /= n
	}
	cut := func(s *corev1.ContainerState) {
		if s.Terminated != nil && len(s.Terminated.Message) > per {
			s.Terminated.Message = s.Terminated.Message[:per]
		}
	}
	for _, list := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range list {
			cut(&list[i].State)
			cut(&list[i].LastTerminationState)
		}
	}
}
