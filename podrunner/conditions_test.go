package podrunner

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The kubelet 1.37's conditions (reason and message) for the scenarios make conformance runs.
func TestPodConditionsAsTheKubelet(t *testing.T) {
	type cond struct {
		status          corev1.ConditionStatus
		reason, message string
	}
	tests := []struct {
		name   string
		pod    *corev1.Pod
		recs   []ContainerRecord
		want   map[corev1.PodConditionType]cond
		initOK map[string]bool // init container name -> ready
	}{
		{
			name: "failed pod: PodFailed, sandbox not ready",
			pod:  testPod(corev1.RestartPolicyNever, nil, "c"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateExited, at(0)), exitedRec("c0", "c", KindApp, 0, 3, at(1), at(2))},
			want: map[corev1.PodConditionType]cond{
				corev1.PodReadyToStartContainers: {corev1.ConditionFalse, ReasonPodSandboxNotReady, MsgPodSandboxNotReady},
				corev1.PodInitialized:            {corev1.ConditionTrue, "", ""},
				corev1.ContainersReady:           {corev1.ConditionFalse, ReasonPodFailed, ""},
				corev1.PodReady:                  {corev1.ConditionFalse, ReasonPodFailed, ""},
			},
		},
		{
			name: "succeeded pod: PodCompleted, Initialized True with PodCompleted",
			pod:  testPod(corev1.RestartPolicyNever, []string{"init"}, "c"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateExited, at(0)),
				exitedRec("i0", "init", KindInit, 0, 0, at(1), at(2)),
				exitedRec("c0", "c", KindApp, 0, 0, at(3), at(4))},
			want: map[corev1.PodConditionType]cond{
				corev1.PodReadyToStartContainers: {corev1.ConditionFalse, ReasonPodSandboxNotReady, MsgPodSandboxNotReady},
				corev1.PodInitialized:            {corev1.ConditionTrue, ReasonPodCompleted, ""},
				corev1.ContainersReady:           {corev1.ConditionFalse, ReasonPodCompleted, ""},
				corev1.PodReady:                  {corev1.ConditionFalse, ReasonPodCompleted, ""},
			},
			initOK: map[string]bool{"init": true},
		},
		{
			name: "no sandbox yet: no pod sandbox exists, init incomplete, containers unready",
			pod:  testPod(corev1.RestartPolicyAlways, []string{"i1", "i2"}, "a", "b"),
			want: map[corev1.PodConditionType]cond{
				corev1.PodReadyToStartContainers: {corev1.ConditionFalse, ReasonPodSandboxNotReady, MsgNoPodSandbox},
				corev1.PodInitialized:            {corev1.ConditionFalse, ReasonContainersNotInitialized, "containers with incomplete status: [i1 i2]"},
				corev1.ContainersReady:           {corev1.ConditionFalse, ReasonContainersNotReady, "containers with unready status: [a b]"},
				corev1.PodReady:                  {corev1.ConditionFalse, ReasonContainersNotReady, "containers with unready status: [a b]"},
			},
			initOK: map[string]bool{"i1": false, "i2": false},
		},
		{
			name: "one of two exited under Always: it is named unready",
			pod:  testPod(corev1.RestartPolicyAlways, []string{"init"}, "a", "b"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)),
				exitedRec("i0", "init", KindInit, 0, 0, at(1), at(2)),
				runningRec("a0", "a", KindApp, 0, at(3)),
				exitedRec("b0", "b", KindApp, 0, 0, at(3), at(4))},
			want: map[corev1.PodConditionType]cond{
				corev1.PodReadyToStartContainers: {corev1.ConditionTrue, "", ""},
				corev1.PodInitialized:            {corev1.ConditionTrue, "", ""},
				corev1.ContainersReady:           {corev1.ConditionFalse, ReasonContainersNotReady, "containers with unready status: [b]"},
				corev1.PodReady:                  {corev1.ConditionFalse, ReasonContainersNotReady, "containers with unready status: [b]"},
			},
			initOK: map[string]bool{"init": true},
		},
		{
			name: "second init running: it is not ready and incomplete",
			pod:  testPod(corev1.RestartPolicyNever, []string{"i1", "i2"}, "a"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)),
				exitedRec("i0", "i1", KindInit, 0, 0, at(1), at(2)),
				runningRec("i20", "i2", KindInit, 0, at(3))},
			want: map[corev1.PodConditionType]cond{
				corev1.PodInitialized: {corev1.ConditionFalse, ReasonContainersNotInitialized, "containers with incomplete status: [i2]"},
			},
			initOK: map[string]bool{"i1": true, "i2": false},
		},
		{
			name: "readiness gates: Ready False naming each gate, ContainersReady True",
			pod:  withGates(testPod(corev1.RestartPolicyAlways, nil, "a"), "example.com/lb", "PodReadyToStartContainers", "example.com/dns"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), runningRec("a0", "a", KindApp, 0, at(1))},
			want: map[corev1.PodConditionType]cond{
				corev1.ContainersReady: {corev1.ConditionTrue, "", ""},
				corev1.PodReady: {corev1.ConditionFalse, ReasonReadinessGatesNotReady,
					`corresponding condition of pod readiness gate "example.com/lb" does not exist., corresponding condition of pod readiness gate "example.com/dns" does not exist.`},
			},
		},
		{
			name: "a readiness gate on a condition podkeeper sets: passes when it is True",
			pod:  withGates(testPod(corev1.RestartPolicyAlways, nil, "a"), "PodReadyToStartContainers"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), runningRec("a0", "a", KindApp, 0, at(1))},
			want: map[corev1.PodConditionType]cond{corev1.PodReady: {corev1.ConditionTrue, "", ""}},
		},
		{
			name: "readiness gates do not hide unready containers",
			pod:  withGates(testPod(corev1.RestartPolicyAlways, nil, "a"), "example.com/lb"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0))},
			want: map[corev1.PodConditionType]cond{
				corev1.PodReady: {corev1.ConditionFalse, ReasonContainersNotReady, "containers with unready status: [a]"},
			},
		},
		{
			name: "RestartAllContainers: True while the previous run stops, the trigger and the rest waiting",
			pod:  withRestartAll(testPod(corev1.RestartPolicyAlways, nil, "a", "b"), "b", corev1.ContainerRestartPolicyNever),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), runningRec("a0", "a", KindApp, 0, at(1)),
				exitedRec("b0", "b", KindApp, 0, 42, at(1), at(5))},
			want: map[corev1.PodConditionType]cond{
				corev1.AllContainersRestarting: {corev1.ConditionTrue, "RestartAllContainersStarted", "container exited with restart policy rule"},
				corev1.PodInitialized:          {corev1.ConditionTrue, "", ""},
			},
		},
		{
			name: "RestartAllContainers: False once nothing of the previous run runs",
			pod:  withRestartAll(testPod(corev1.RestartPolicyAlways, nil, "a", "b"), "b", corev1.ContainerRestartPolicyNever),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), exitedRec("a0", "a", KindApp, 0, 137, at(1), at(6)),
				exitedRec("b0", "b", KindApp, 0, 42, at(1), at(5))},
			want: map[corev1.PodConditionType]cond{
				corev1.AllContainersRestarting: {corev1.ConditionFalse, "", ""},
			},
		},
		{
			name: "RestartAllContainers: False/PodFailed in a failed pod",
			pod:  withRestartAll(testPod(corev1.RestartPolicyNever, nil, "b"), "b", corev1.ContainerRestartPolicyNever),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), exitedRec("b0", "b", KindApp, 0, 1, at(1), at(5))},
			want: map[corev1.PodConditionType]cond{
				corev1.AllContainersRestarting: {corev1.ConditionFalse, ReasonPodFailed, ""},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := buildStatus(tc.pod, tc.recs, nil, false)
			if _, has := conditions(st)[corev1.AllContainersRestarting]; has != CouldRestartAll(tc.pod) {
				t.Errorf("AllContainersRestarting reported: %v, want it only for a pod with a RestartAllContainers rule", has)
			}
			got := conditions(st)
			for typ, w := range tc.want {
				c := got[typ]
				if c.Status != w.status || c.Reason != w.reason || c.Message != w.message {
					t.Errorf("%s = %s/%q/%q, want %s/%q/%q", typ, c.Status, c.Reason, c.Message, w.status, w.reason, w.message)
				}
			}
			for _, cs := range st.InitContainerStatuses {
				if want, ok := tc.initOK[cs.Name]; ok && cs.Ready != want {
					t.Errorf("init %s ready = %v, want %v (state %+v)", cs.Name, cs.Ready, want, cs.State)
				}
			}
		})
	}
}

// A container whose task cannot be created ends StartError with 128; under OnFailure and Always
// it is restarted with CrashLoopBackOff like any failed exit.
func TestStartErrorBacksOff(t *testing.T) {
	for _, policy := range []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyAlways} {
		pod := testPod(policy, nil, "c")
		r := exitedRec("c0", "c", KindApp, 0, 128, at(1), at(1))
		r.Reason = ReasonStartError
		recs := []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), r}
		st := buildStatus(pod, recs, gateAt(map[string]time.Time{"c0": at(200)}), false)
		cs := st.ContainerStatuses[0]
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != ReasonCrashLoopBackOff {
			t.Errorf("%s: state %+v, want waiting CrashLoopBackOff", policy, cs.State)
		}
		if lt := cs.LastTerminationState.Terminated; lt == nil || lt.Reason != ReasonStartError || lt.ExitCode != 128 {
			t.Errorf("%s: lastState %+v, want terminated StartError 128", policy, cs.LastTerminationState)
		}
	}
	pod := testPod(corev1.RestartPolicyNever, nil, "c")
	r := exitedRec("c0", "c", KindApp, 0, 128, at(1), at(1))
	r.Reason = ReasonStartError
	st := buildStatus(pod, []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), r}, nil, false)
	if st.Phase != corev1.PodFailed || st.ContainerStatuses[0].State.Terminated == nil || st.ContainerStatuses[0].State.Terminated.Reason != ReasonStartError {
		t.Errorf("Never: phase %s state %+v, want Failed, terminated StartError", st.Phase, st.ContainerStatuses[0].State)
	}
}

func withGates(p *corev1.Pod, types ...corev1.PodConditionType) *corev1.Pod {
	for _, t := range types {
		p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: t})
	}
	return p
}

// Initialized counts a sidecar as the kubelet does: once it is started (running, its startup
// probe passed), not merely once it has run. Found by the conformance scenario
// sidecar-init-fails, where podkeeper left the stopped sidecar out of the incomplete list.
func TestInitializedSidecarsAsTheKubelet(t *testing.T) {
	notStarted := func(c *corev1.Container, r ContainerRecord) (bool, bool) { return c.Name != "side", c.Name != "side" }
	tests := []struct {
		name    string
		pod     *corev1.Pod
		recs    []ContainerRecord
		probes  ProbeStatus
		status  corev1.ConditionStatus
		message string
	}{
		{name: "sidecar running, started: initialized",
			pod:    sidecarPod(corev1.RestartPolicyNever, []string{"side"}, map[string]bool{"side": true}, "c"),
			recs:   []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), runningRec("s0", "side", KindInit, 0, at(1))},
			status: corev1.ConditionTrue},
		{name: "sidecar running, its startup probe not passed yet: incomplete",
			pod:    sidecarPod(corev1.RestartPolicyNever, []string{"side"}, map[string]bool{"side": true}, "c"),
			recs:   []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), runningRec("s0", "side", KindInit, 0, at(1))},
			probes: notStarted, status: corev1.ConditionFalse, message: "containers with incomplete status: [side]"},
		{name: "pod failed in its init: the stopped sidecar is incomplete too",
			pod: sidecarPod(corev1.RestartPolicyNever, []string{"side", "init"}, map[string]bool{"side": true}, "c"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateExited, at(0)), exitedRec("s0", "side", KindInit, 0, 137, at(1), at(5)),
				exitedRec("i0", "init", KindInit, 0, 1, at(2), at(3))},
			status: corev1.ConditionFalse, message: "containers with incomplete status: [side init]"},
		{name: "an app container has run: initialized, whatever the sidecar does",
			pod: sidecarPod(corev1.RestartPolicyAlways, []string{"side"}, map[string]bool{"side": true}, "c"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), exitedRec("s0", "side", KindInit, 0, 1, at(1), at(50)),
				runningRec("c0", "c", KindApp, 0, at(2))},
			status: corev1.ConditionTrue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := NewPodView(tc.recs)
			st := BuildStatus(StatusInput{Pod: tc.pod, View: v, Plan: PlanPod(tc.pod, v, nil, at(100)), StartTime: at(0),
				HostIP: "10.0.0.5", Now: at(100), Probes: tc.probes})
			c := conditions(st)[corev1.PodInitialized]
			if c.Status != tc.status || c.Message != tc.message {
				t.Errorf("Initialized = %s %q, want %s %q", c.Status, c.Message, tc.status, tc.message)
			}
		})
	}
}
