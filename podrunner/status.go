package podrunner

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkeeper/podkeeper/cgroup"
)

// StatusInput is everything BuildStatus reads.
type StatusInput struct {
	Pod         *corev1.Pod
	View        PodView
	Plan        Plan // its Phase and Waiting
	StartTime   time.Time
	HostIP      string
	Terminating bool
	Now         time.Time
	// Probes says whether running containers have started and are ready (nil: running means
	// started and ready).
	Probes ProbeStatus
	// RecursiveReadOnly says the runtime makes recursively read-only mounts (it resolves
	// recursiveReadOnly IfPossible in the containers' volumeMounts status).
	RecursiveReadOnly bool
}

// BuildStatus computes a pod's status the way the kubelet reports it. Pure.
func BuildStatus(in StatusInput) corev1.PodStatus {
	pod, v := in.Pod, in.View
	st := corev1.PodStatus{
		Phase:    in.Plan.Phase,
		HostIP:   in.HostIP,
		QOSClass: cgroup.QOSClass(pod),
	}
	if in.HostIP != "" {
		st.HostIPs = []corev1.HostIP{{IP: in.HostIP}}
	}
	st.AllocatedResources, st.Resources = podStatusResources(pod, st.Phase)
	if !in.StartTime.IsZero() {
		t := metav1.NewTime(in.StartTime)
		st.StartTime = &t
	}
	sb, hasSB := v.Sandbox()
	sandboxReady := hasSB && sb.State == StateRunning
	if pod.Spec.HostNetwork && sandboxReady {
		st.PodIP = in.HostIP
		if in.HostIP != "" {
			st.PodIPs = []corev1.PodIP{{IP: in.HostIP}}
		}
	} else if sandboxReady && len(sb.PodIPs) > 0 {
		st.PodIP = sb.PodIPs[0]
		for _, ip := range sb.PodIPs {
			st.PodIPs = append(st.PodIPs, corev1.PodIP{IP: ip})
		}
	}
	for _, c := range pod.Spec.InitContainers {
		cs := containerStatus(pod, c, v, in)
		if !IsSidecar(&c) {
			completedInit(&cs)
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, containerStatus(pod, c, v, in))
	}

	capTerminationMessages(pod, &st)
	st.Conditions = podConditions(pod, &st, hasSB, sandboxReady, in.Terminating)
	if CouldRestartAll(pod) {
		st.Conditions = append(st.Conditions, restartingCondition(st.Phase, in.Plan.Reset))
	}
	return st
}

// restartingCondition is the AllContainersRestarting condition of a pod with a
// RestartAllContainers rule, as the kubelet 1.37 reports it: True while the previous run's
// containers are being stopped, else False (reason PodCompleted or PodFailed once the pod is).
func restartingCondition(phase corev1.PodPhase, reset *ResetCause) corev1.PodCondition {
	c := corev1.PodCondition{Type: corev1.AllContainersRestarting, Status: corev1.ConditionFalse}
	switch {
	case phase == corev1.PodSucceeded:
		c.Reason = ReasonPodCompleted
	case phase == corev1.PodFailed:
		c.Reason = ReasonPodFailed
	case reset != nil:
		c.Status, c.Reason, c.Message = corev1.ConditionTrue, "RestartAllContainersStarted", "container exited with restart policy rule"
	}
	return c
}

func containerStatus(pod *corev1.Pod, c corev1.Container, v PodView, in StatusInput) corev1.ContainerStatus {
	plan, probe := in.Plan, in.Probes
	cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image}
	cs.AllocatedResources, cs.Resources = containerStatusResources(&c)
	cs.VolumeMounts = volumeMountStatuses(&c, in.RecursiveReadOnly)
	latest, ok := v.Latest(c.Name)
	if ok {
		cs.RestartCount = int32(latest.Attempt)
		cs.ContainerID = "containerd://" + latest.ID
		cs.ImageID = latest.ImageID
		if latest.Image != "" {
			cs.Image = latest.Image
		}
		cs.State = recordState(latest)
		if prev, ok := v.Previous(c.Name); ok {
			cs.LastTerminationState = recordState(prev)
		}
	}
	if w, waiting := plan.Waiting[c.Name]; waiting && (!ok || latest.State != StateRunning) {
		if ok && latest.State == StateExited {
			cs.LastTerminationState = recordState(latest)
		}
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}}
	}
	if cs.State.Waiting == nil && cs.State.Running == nil && cs.State.Terminated == nil {
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: DefaultWaitingReason(pod)}
	}
	running := cs.State.Running != nil
	started, ready := running, running
	if running && probe != nil {
		started, ready = probe(&c, latest)
	}
	cs.Started = &started
	cs.Ready = ready
	return cs
}

// completedInit sets a plain init container's readiness as the kubelet does: ready once it
// exited with 0, not while it runs.
func completedInit(cs *corev1.ContainerStatus) {
	t := cs.State.Terminated
	cs.Ready = t != nil && t.ExitCode == 0
}

// recordState turns a runtime record into the API's container state.
func recordState(r ContainerRecord) corev1.ContainerState {
	switch r.State {
	case StateRunning:
		return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(r.StartedAt)}}
	case StateExited:
		reason := r.Reason
		if reason == "" {
			reason = "Error"
			if r.ExitCode == 0 {
				reason = "Completed"
			}
		}
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode:    r.ExitCode,
			Reason:      reason,
			Message:     r.Message,
			StartedAt:   metav1.NewTime(r.StartedAt),
			FinishedAt:  metav1.NewTime(r.FinishedAt),
			ContainerID: "containerd://" + r.ID,
		}}
	}
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonContainerCreating}}
}
