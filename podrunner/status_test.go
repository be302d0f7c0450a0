package podrunner

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func buildStatus(pod *corev1.Pod, recs []ContainerRecord, gate RestartGate, terminating bool) corev1.PodStatus {
	v := NewPodView(recs)
	return BuildStatus(StatusInput{
		Pod: pod, View: v, Plan: PlanPod(pod, v, gate, at(100)), StartTime: at(0),
		HostIP: "10.0.0.5", Terminating: terminating, Now: at(100),
	})
}

func conditions(st corev1.PodStatus) map[corev1.PodConditionType]corev1.PodCondition {
	out := map[corev1.PodConditionType]corev1.PodCondition{}
	for _, c := range st.Conditions {
		out[c.Type] = c
	}
	return out
}

func wantCond(t *testing.T, st corev1.PodStatus, typ corev1.PodConditionType, status corev1.ConditionStatus, reason string) {
	t.Helper()
	c, ok := conditions(st)[typ]
	if !ok {
		t.Fatalf("no %s condition in %+v", typ, st.Conditions)
	}
	if c.Status != status || c.Reason != reason {
		t.Errorf("condition %s = %s/%q, want %s/%q", typ, c.Status, c.Reason, status, reason)
	}
}

func TestBuildStatusRunningWithPreviousInstance(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, nil, "main")
	prev := exitedRec("c1", "main", KindApp, 1, 2, at(10), at(20))
	cur := runningRec("c2", "main", KindApp, 2, at(21))
	cur.ImageID, cur.Image = "sha256:abc", "docker.io/library/busybox:latest"
	st := buildStatus(pod, []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), prev, cur}, nil, false)

	if st.Phase != corev1.PodRunning {
		t.Errorf("phase = %s, want Running", st.Phase)
	}
	if st.StartTime == nil || !st.StartTime.Time.Equal(at(0)) {
		t.Errorf("startTime = %v, want %s", st.StartTime, at(0))
	}
	if st.HostIP != "10.0.0.5" || len(st.HostIPs) != 1 || st.HostIPs[0].IP != "10.0.0.5" {
		t.Errorf("hostIP = %q %v", st.HostIP, st.HostIPs)
	}
	if st.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("qosClass = %s, want BestEffort", st.QOSClass)
	}
	if st.PodIP != "" {
		t.Errorf("podIP = %q for a pod without hostNetwork, want empty", st.PodIP)
	}
	if len(st.ContainerStatuses) != 1 {
		t.Fatalf("containerStatuses = %+v", st.ContainerStatuses)
	}
	cs := st.ContainerStatuses[0]
	if cs.Name != "main" || cs.RestartCount != 2 || cs.ContainerID != "containerd://c2" {
		t.Errorf("status = name %q restartCount %d containerID %q; want main 2 containerd://c2", cs.Name, cs.RestartCount, cs.ContainerID)
	}
	if cs.Image != "docker.io/library/busybox:latest" || cs.ImageID != "sha256:abc" {
		t.Errorf("image = %q id %q", cs.Image, cs.ImageID)
	}
	if cs.State.Running == nil || !cs.State.Running.StartedAt.Time.Equal(at(21)) {
		t.Errorf("state = %+v, want running since %s", cs.State, at(21))
	}
	if !cs.Ready || cs.Started == nil || !*cs.Started {
		t.Errorf("ready %v started %v, want both true", cs.Ready, cs.Started)
	}
	last := cs.LastTerminationState.Terminated
	if last == nil {
		t.Fatalf("lastState = %+v, want terminated (the previous instance)", cs.LastTerminationState)
	}
	if last.ExitCode != 2 || last.Reason != "Error" || last.ContainerID != "containerd://c1" ||
		!last.StartedAt.Time.Equal(at(10)) || !last.FinishedAt.Time.Equal(at(20)) {
		t.Errorf("lastState.terminated = %+v", last)
	}
	for _, typ := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady, corev1.PodScheduled} {
		wantCond(t, st, typ, corev1.ConditionTrue, "")
	}
}

func TestBuildStatusCrashLoopBackOff(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, nil, "main")
	older := exitedRec("c1", "main", KindApp, 1, 1, at(10), at(20))
	latest := exitedRec("c2", "main", KindApp, 2, 3, at(30), at(90))
	st := buildStatus(pod, []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), older, latest},
		gateAt(map[string]time.Time{"c2": at(110)}), false)
	cs := st.ContainerStatuses[0]
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != ReasonCrashLoopBackOff {
		t.Fatalf("state = %+v, want waiting CrashLoopBackOff", cs.State)
	}
	if cs.State.Waiting.Message == "" {
		t.Error("CrashLoopBackOff without a message")
	}
	if cs.RestartCount != 2 {
		t.Errorf("restartCount = %d, want 2", cs.RestartCount)
	}
	last := cs.LastTerminationState.Terminated
	if last == nil || last.ContainerID != "containerd://c2" || last.ExitCode != 3 {
		t.Fatalf("lastState = %+v, want the latest exited instance c2 (exit 3)", cs.LastTerminationState)
	}
	if cs.Ready || *cs.Started {
		t.Errorf("ready %v started %v, want false", cs.Ready, *cs.Started)
	}
	wantCond(t, st, corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady")
	wantCond(t, st, corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady")
	wantCond(t, st, corev1.PodReadyToStartContainers, corev1.ConditionTrue, "")
}

func TestBuildStatusTerminatedReasons(t *testing.T) {
	pod := testPod(corev1.RestartPolicyNever, nil, "ok", "oom", "bad")
	oom := exitedRec("o0", "oom", KindApp, 0, 137, at(1), at(2))
	oom.Reason, oom.Message = "OOMKilled", "memory limit"
	st := buildStatus(pod, []ContainerRecord{
		sbRec("sb0", 0, StateExited, at(0)),
		exitedRec("k0", "ok", KindApp, 0, 0, at(1), at(2)),
		oom,
		exitedRec("b0", "bad", KindApp, 0, 1, at(1), at(2)),
	}, nil, false)
	if st.Phase != corev1.PodFailed {
		t.Errorf("phase = %s, want Failed", st.Phase)
	}
	want := map[string]string{"ok": "Completed", "oom": "OOMKilled", "bad": "Error"}
	for _, cs := range st.ContainerStatuses {
		term := cs.State.Terminated
		if term == nil {
			t.Errorf("%s: state %+v, want terminated", cs.Name, cs.State)
			continue
		}
		if term.Reason != want[cs.Name] {
			t.Errorf("%s: reason %q, want %q", cs.Name, term.Reason, want[cs.Name])
		}
		if cs.LastTerminationState.Terminated != nil {
			t.Errorf("%s: lastState %+v without a previous instance", cs.Name, cs.LastTerminationState)
		}
	}
	if st.ContainerStatuses[1].State.Terminated.Message != "memory limit" {
		t.Errorf("message not kept: %+v", st.ContainerStatuses[1].State.Terminated)
	}
	wantCond(t, st, corev1.PodReady, corev1.ConditionFalse, ReasonPodFailed)
	wantCond(t, st, corev1.PodReadyToStartContainers, corev1.ConditionFalse, ReasonPodSandboxNotReady)
}

func TestBuildStatusWaitingAndInit(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, []string{"init1", "init2"}, "main")
	// No sandbox, a pod with init containers: everything PodInitializing (as the kubelet).
	st := buildStatus(pod, nil, nil, false)
	for _, cs := range append(st.InitContainerStatuses, st.ContainerStatuses...) {
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != ReasonPodInitializing {
			t.Errorf("%s: state %+v, want waiting PodInitializing", cs.Name, cs.State)
		}
		if cs.ContainerID != "" || cs.RestartCount != 0 {
			t.Errorf("%s: containerID %q restartCount %d for a container never created", cs.Name, cs.ContainerID, cs.RestartCount)
		}
	}
	wantCond(t, st, corev1.PodReadyToStartContainers, corev1.ConditionFalse, ReasonPodSandboxNotReady)
	wantCond(t, st, corev1.PodInitialized, corev1.ConditionFalse, "ContainersNotInitialized")

	// First init done, second running: apps PodInitializing.
	st = buildStatus(pod, []ContainerRecord{
		sbRec("sb0", 0, StateRunning, at(0)),
		exitedRec("i1", "init1", KindInit, 0, 0, at(1), at(2)),
		runningRec("i2", "init2", KindInit, 0, at(3)),
	}, nil, false)
	if len(st.InitContainerStatuses) != 2 {
		t.Fatalf("initContainerStatuses = %+v", st.InitContainerStatuses)
	}
	if s := st.InitContainerStatuses[0].State.Terminated; s == nil || s.Reason != "Completed" {
		t.Errorf("init1 state = %+v, want terminated Completed", st.InitContainerStatuses[0].State)
	}
	if st.InitContainerStatuses[1].State.Running == nil {
		t.Errorf("init2 state = %+v, want running", st.InitContainerStatuses[1].State)
	}
	if w := st.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != ReasonPodInitializing {
		t.Errorf("main state = %+v, want waiting PodInitializing", st.ContainerStatuses[0].State)
	}
	wantCond(t, st, corev1.PodInitialized, corev1.ConditionFalse, "ContainersNotInitialized")

	// Both done, main running.
	st = buildStatus(pod, []ContainerRecord{
		sbRec("sb0", 0, StateRunning, at(0)),
		exitedRec("i1", "init1", KindInit, 0, 0, at(1), at(2)),
		exitedRec("i2", "init2", KindInit, 0, 0, at(3), at(4)),
		runningRec("m0", "main", KindApp, 0, at(5)),
	}, nil, false)
	wantCond(t, st, corev1.PodInitialized, corev1.ConditionTrue, "")
	wantCond(t, st, corev1.PodReady, corev1.ConditionTrue, "")
}

func TestBuildStatusTerminatingIsNotReady(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, nil, "main")
	st := buildStatus(pod, []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), runningRec("m0", "main", KindApp, 0, at(1))}, nil, true)
	wantCond(t, st, corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady")
	wantCond(t, st, corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady")
}

func TestBuildStatusHostNetwork(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, nil, "main")
	pod.Spec.HostNetwork = true
	st := buildStatus(pod, []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), runningRec("m0", "main", KindApp, 0, at(1))}, nil, false)
	if st.PodIP != "10.0.0.5" || len(st.PodIPs) != 1 || st.PodIPs[0].IP != "10.0.0.5" {
		t.Errorf("hostNetwork pod: podIP %q podIPs %v, want the host IP", st.PodIP, st.PodIPs)
	}
	st = buildStatus(pod, []ContainerRecord{sbRec("sb0", 0, StateExited, at(0))}, nil, false)
	if st.PodIP != "" {
		t.Errorf("hostNetwork pod without a running sandbox: podIP %q, want empty", st.PodIP)
	}
}
