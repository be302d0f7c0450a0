package podrunner

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Condition reasons and messages as the kubelet 1.37 reports them.
const (
	ReasonPodCompleted             = "PodCompleted"
	ReasonPodFailed                = "PodFailed"
	ReasonContainersNotReady       = "ContainersNotReady"
	ReasonContainersNotInitialized = "ContainersNotInitialized"
	ReasonPodSandboxNotReady       = "PodSandboxNotReady"
	ReasonReadinessGatesNotReady   = "ReadinessGatesNotReady"
	MsgNoPodSandbox                = "no pod sandbox exists"
	MsgPodSandboxNotReady          = "pod sandbox is not ready"
)

// podConditions computes the five pod conditions from the container statuses already in st,
// the way the kubelet does. Pure.
//   - PodReadyToStartContainers: True while the sandbox runs; else False, PodSandboxNotReady, with
//     "no pod sandbox exists" or "pod sandbox is not ready".
//   - Initialized: True with reason PodCompleted once the pod Succeeded; True when every init
//     container completed (a sidecar: is started) or any app container has run; else False,
//     ContainersNotInitialized, "containers with incomplete status: [names]".
//   - ContainersReady and Ready: True when every app container and sidecar is ready (and the pod is
//     not terminating); in a Succeeded pod False/PodCompleted, in a Failed one False/PodFailed, with
//     no message; else False/ContainersNotReady, "containers with unready status: [names]"
//     (sidecars first, then app containers, in spec order). Ready also needs every readiness
//     gate's condition True, else False/ReadinessGatesNotReady naming each gate; with no API
//     server to set them, only a gate on a condition podkeeper sets itself can pass.
//   - PodScheduled: always True.
func podConditions(pod *corev1.Pod, st *corev1.PodStatus, hasSandbox, sandboxReady, terminating bool) []corev1.PodCondition {
	sandbox := corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue}
	if !sandboxReady {
		sandbox = corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse,
			Reason: ReasonPodSandboxNotReady, Message: MsgPodSandboxNotReady}
		if !hasSandbox {
			sandbox.Message = MsgNoPodSandbox
		}
	}

	initialized := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}
	var incomplete []string
	for i, cs := range st.InitContainerStatuses {
		if !initComplete(&pod.Spec.InitContainers[i], cs) {
			incomplete = append(incomplete, cs.Name)
		}
	}
	switch {
	case st.Phase == corev1.PodSucceeded:
		initialized.Reason = ReasonPodCompleted
	case len(incomplete) == 0 || anyAppStarted(st.ContainerStatuses):
	default:
		initialized.Status = corev1.ConditionFalse
		initialized.Reason = ReasonContainersNotInitialized
		initialized.Message = fmt.Sprintf("containers with incomplete status: %s", incomplete)
	}

	var unready []string
	for i, cs := range st.InitContainerStatuses {
		if IsSidecar(&pod.Spec.InitContainers[i]) && !cs.Ready {
			unready = append(unready, cs.Name)
		}
	}
	for _, cs := range st.ContainerStatuses {
		if !cs.Ready {
			unready = append(unready, cs.Name)
		}
	}
	ready := corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}
	switch {
	case st.Phase == corev1.PodSucceeded:
		ready.Status, ready.Reason = corev1.ConditionFalse, ReasonPodCompleted
	case st.Phase == corev1.PodFailed:
		ready.Status, ready.Reason = corev1.ConditionFalse, ReasonPodFailed
	case len(unready) > 0:
		ready.Status, ready.Reason = corev1.ConditionFalse, ReasonContainersNotReady
		ready.Message = fmt.Sprintf("containers with unready status: %s", unready)
	case terminating || len(st.ContainerStatuses) == 0:
		ready.Status, ready.Reason = corev1.ConditionFalse, ReasonContainersNotReady
	}
	podReady := ready
	podReady.Type = corev1.PodReady
	if podReady.Status == corev1.ConditionTrue {
		if msg := readinessGatesUnready(pod, []corev1.PodCondition{sandbox, initialized}); msg != "" {
			podReady.Status, podReady.Reason, podReady.Message = corev1.ConditionFalse, ReasonReadinessGatesNotReady, msg
		}
	}

	return []corev1.PodCondition{
		sandbox,
		initialized,
		ready,
		podReady,
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
	}
}

// readinessGatesUnready is the kubelet's message for the readiness gates whose condition (among
// conds) is missing or not True; empty when all pass.
func readinessGatesUnready(pod *corev1.Pod, conds []corev1.PodCondition) string {
	var msgs []string
	for _, g := range pod.Spec.ReadinessGates {
		var found *corev1.PodCondition
		for i := range conds {
			if conds[i].Type == g.ConditionType {
				found = &conds[i]
			}
		}
		switch {
		case found == nil:
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(g.ConditionType)))
		case found.Status != corev1.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(g.ConditionType), found.Status))
		}
	}
	return strings.Join(msgs, ", ")
}

// initComplete reports whether one init container counts as initialized, as the kubelet's
// Initialized condition counts it: a sidecar that is started (running, its startup probe
// passed; not one waiting to restart or stopped), a plain one that exited with 0.
func initComplete(c *corev1.Container, cs corev1.ContainerStatus) bool {
	if IsSidecar(c) {
		return cs.Started != nil && *cs.Started
	}
	return cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
}

// anyAppStarted reports whether an app container runs or has run (the kubelet then keeps
// Initialized True).
func anyAppStarted(sts []corev1.ContainerStatus) bool {
	for _, cs := range sts {
		if cs.State.Running != nil || cs.State.Terminated != nil {
			return true
		}
	}
	return false
}
