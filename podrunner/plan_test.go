package podrunner

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// testPod builds a pod with the given init and app container names.
func testPod(policy corev1.RestartPolicy, inits []string, apps ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-node1", Namespace: "default", UID: types.UID("uid-web")},
		Spec:       corev1.PodSpec{RestartPolicy: policy},
	}
	for _, n := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox"})
	}
	for _, n := range apps {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n, Image: "busybox"})
	}
	return p
}

func sbRec(id string, attempt int, state ContainerState, started time.Time) ContainerRecord {
	return ContainerRecord{ID: id, PodUID: "uid-web", Kind: KindSandbox, Attempt: attempt, State: state,
		CreatedAt: started, StartedAt: started}
}

func runningRec(id, name string, kind ContainerKind, attempt int, started time.Time) ContainerRecord {
	return ContainerRecord{ID: id, PodUID: "uid-web", Name: name, Kind: kind, Attempt: attempt, State: StateRunning,
		CreatedAt: started, StartedAt: started}
}

func exitedRec(id, name string, kind ContainerKind, attempt int, code int32, started, finished time.Time) ContainerRecord {
	return ContainerRecord{ID: id, PodUID: "uid-web", Name: name, Kind: kind, Attempt: attempt, State: StateExited,
		ExitCode: code, CreatedAt: started, StartedAt: started, FinishedAt: finished}
}

// planSummary is a Plan as comparable data.
type planSummary struct {
	KillPod        bool
	CreateSandbox  bool
	SandboxAttempt int
	StopSandbox    bool
	Start          []string          // name/kind/attempt
	Waiting        map[string]string // name -> reason
	Remove         []string
	WakeAt         time.Time
	Phase          corev1.PodPhase
}

func summarize(p Plan) planSummary {
	s := planSummary{
		KillPod: p.KillPod, CreateSandbox: p.CreateSandbox, SandboxAttempt: p.SandboxAttempt,
		StopSandbox: p.StopSandbox, WakeAt: p.WakeAt, Phase: p.Phase, Waiting: map[string]string{},
	}
	for _, a := range p.Start {
		s.Start = append(s.Start, fmt.Sprintf("%s/%s/%d", a.Container.Name, a.Kind, a.Attempt))
	}
	for n, w := range p.Waiting {
		s.Waiting[n] = w.Reason
	}
	s.Remove = append(s.Remove, p.Remove...)
	sort.Strings(s.Remove)
	return s
}

func gateAt(ts map[string]time.Time) RestartGate {
	return func(r ContainerRecord) time.Time { return ts[r.ID] }
}

func TestPlanPod(t *testing.T) {
	always, onFailure, never := corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever
	now := at(100)
	tests := []struct {
		name string
		pod  *corev1.Pod
		recs []ContainerRecord
		gate RestartGate
		want planSummary
	}{
		{
			name: "no sandbox, init containers: create attempt 0, every container PodInitializing (the kubelet's default with init containers)",
			pod:  testPod(always, []string{"init"}, "main", "side"),
			want: planSummary{CreateSandbox: true, SandboxAttempt: 0, Phase: corev1.PodPending,
				Waiting: map[string]string{"init": ReasonPodInitializing, "main": ReasonPodInitializing, "side": ReasonPodInitializing}},
		},
		{
			name: "no sandbox, no init containers: every container ContainerCreating",
			pod:  testPod(always, nil, "main", "side"),
			want: planSummary{CreateSandbox: true, SandboxAttempt: 0, Phase: corev1.PodPending,
				Waiting: map[string]string{"main": ReasonContainerCreating, "side": ReasonContainerCreating}},
		},
		{
			name: "dead sandbox, nothing running: create attempt+1",
			pod:  testPod(always, nil, "main"),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateExited, at(0)),
				sbRec("sb2", 2, StateExited, at(50)),
				exitedRec("c0", "main", KindApp, 0, 137, at(51), at(60)),
			},
			want: planSummary{CreateSandbox: true, SandboxAttempt: 3, Phase: corev1.PodRunning,
				Waiting: map[string]string{"main": ReasonContainerCreating}, Remove: []string{"sb0"}},
		},
		{
			name: "dead sandbox with a running container: kill the pod",
			pod:  testPod(always, nil, "main"),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateExited, at(0)),
				runningRec("c0", "main", KindApp, 0, at(1)),
			},
			want: planSummary{KillPod: true, Phase: corev1.PodRunning},
		},
		{
			name: "fresh pod: start every app container at attempt 0",
			pod:  testPod(always, nil, "main", "side"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0))},
			want: planSummary{Start: []string{"main/app/0", "side/app/0"}, Phase: corev1.PodPending},
		},
		{
			name: "all running: nothing to do",
			pod:  testPod(always, nil, "main", "side"),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateRunning, at(0)),
				runningRec("c0", "main", KindApp, 0, at(1)),
				runningRec("s0", "side", KindApp, 4, at(1)),
			},
			want: planSummary{Phase: corev1.PodRunning},
		},
		{
			name: "created but never started: start the same attempt again",
			pod:  testPod(always, nil, "main"),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateRunning, at(0)),
				{ID: "c2", PodUID: "uid-web", Name: "main", Kind: KindApp, Attempt: 2, State: StateCreated, CreatedAt: at(5)},
			},
			want: planSummary{Start: []string{"main/app/2"}, Phase: corev1.PodRunning},
		},
		{
			name: "Always, exit 1: restart attempt+1",
			pod:  testPod(always, nil, "main"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), exitedRec("c0", "main", KindApp, 0, 1, at(1), at(5))},
			want: planSummary{Start: []string{"main/app/1"}, Phase: corev1.PodRunning},
		},
		{
			name: "Always, exit 0: restart attempt+1",
			pod:  testPod(always, nil, "main"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), exitedRec("c3", "main", KindApp, 3, 0, at(1), at(5))},
			want: planSummary{Start: []string{"main/app/4"}, Phase: corev1.PodRunning},
		},
		{
			name: "OnFailure, exit 0: no restart, Succeeded, sandbox stopped",
			pod:  testPod(onFailure, nil, "main"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), exitedRec("c0", "main", KindApp, 0, 0, at(1), at(5))},
			want: planSummary{StopSandbox: true, Phase: corev1.PodSucceeded},
		},
		{
			name: "OnFailure, exit 1: restart attempt+1",
			pod:  testPod(onFailure, nil, "main"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), exitedRec("c0", "main", KindApp, 0, 1, at(1), at(5))},
			want: planSummary{Start: []string{"main/app/1"}, Phase: corev1.PodRunning},
		},
		{
			name: "Never, exit 1: Failed, sandbox stopped",
			pod:  testPod(never, nil, "main"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), exitedRec("c0", "main", KindApp, 0, 1, at(1), at(5))},
			want: planSummary{StopSandbox: true, Phase: corev1.PodFailed},
		},
		{
			name: "Never, exit 0: Succeeded, sandbox stopped",
			pod:  testPod(never, nil, "main"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), exitedRec("c0", "main", KindApp, 0, 0, at(1), at(5))},
			want: planSummary{StopSandbox: true, Phase: corev1.PodSucceeded},
		},
		{
			name: "Never, one exited one running: Running, nothing to do",
			pod:  testPod(never, nil, "main", "side"),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateRunning, at(0)),
				exitedRec("c0", "main", KindApp, 0, 1, at(1), at(5)),
				runningRec("s0", "side", KindApp, 0, at(1)),
			},
			want: planSummary{Phase: corev1.PodRunning},
		},
		{
			name: "Never, one failed one succeeded: Failed",
			pod:  testPod(never, nil, "main", "side"),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateRunning, at(0)),
				exitedRec("c0", "main", KindApp, 0, 0, at(1), at(5)),
				exitedRec("s0", "side", KindApp, 0, 2, at(1), at(5)),
			},
			want: planSummary{StopSandbox: true, Phase: corev1.PodFailed},
		},
		{
			name: "Succeeded pod whose sandbox is already stopped: nothing to do",
			pod:  testPod(never, nil, "main"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateExited, at(0)), exitedRec("c0", "main", KindApp, 0, 0, at(1), at(5))},
			want: planSummary{Phase: corev1.PodSucceeded},
		},
		{
			name: "Failed pod whose sandbox died: no new sandbox",
			pod:  testPod(never, nil, "main"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateExited, at(0)), exitedRec("c0", "main", KindApp, 0, 1, at(1), at(5))},
			want: planSummary{Phase: corev1.PodFailed},
		},
		{
			name: "backoff gate in the future: CrashLoopBackOff until the gate",
			pod:  testPod(always, nil, "main"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), exitedRec("c1", "main", KindApp, 1, 1, at(80), at(95))},
			gate: gateAt(map[string]time.Time{"c1": at(105)}),
			want: planSummary{Phase: corev1.PodRunning, Waiting: map[string]string{"main": ReasonCrashLoopBackOff}, WakeAt: at(105)},
		},
		{
			name: "backoff gate reached: restart attempt+1",
			pod:  testPod(always, nil, "main"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), exitedRec("c1", "main", KindApp, 1, 1, at(80), at(90))},
			gate: gateAt(map[string]time.Time{"c1": now}),
			want: planSummary{Start: []string{"main/app/2"}, Phase: corev1.PodRunning},
		},
		{
			name: "two containers in backoff: wake at the earlier gate",
			pod:  testPod(always, nil, "main", "side"),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateRunning, at(0)),
				exitedRec("c1", "main", KindApp, 1, 1, at(80), at(90)),
				exitedRec("s1", "side", KindApp, 1, 1, at(80), at(90)),
			},
			gate: gateAt(map[string]time.Time{"c1": at(200), "s1": at(150)}),
			want: planSummary{Phase: corev1.PodRunning, WakeAt: at(150),
				Waiting: map[string]string{"main": ReasonCrashLoopBackOff, "side": ReasonCrashLoopBackOff}},
		},
		{
			name: "init containers: the first one starts alone, apps PodInitializing",
			pod:  testPod(always, []string{"init1", "init2"}, "main"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0))},
			want: planSummary{Start: []string{"init1/init/0"}, Phase: corev1.PodPending,
				Waiting: map[string]string{"main": ReasonPodInitializing}},
		},
		{
			name: "init container running: wait for it",
			pod:  testPod(always, []string{"init1", "init2"}, "main"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), runningRec("i1", "init1", KindInit, 0, at(1))},
			want: planSummary{Phase: corev1.PodPending, Waiting: map[string]string{"main": ReasonPodInitializing}},
		},
		{
			name: "first init done: start the second",
			pod:  testPod(always, []string{"init1", "init2"}, "main"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), exitedRec("i1", "init1", KindInit, 0, 0, at(1), at(2))},
			want: planSummary{Start: []string{"init2/init/0"}, Phase: corev1.PodPending,
				Waiting: map[string]string{"main": ReasonPodInitializing}},
		},
		{
			name: "all init done: start the app containers",
			pod:  testPod(always, []string{"init1", "init2"}, "main", "side"),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateRunning, at(0)),
				exitedRec("i1", "init1", KindInit, 0, 0, at(1), at(2)),
				exitedRec("i2", "init2", KindInit, 0, 0, at(3), at(4)),
			},
			want: planSummary{Start: []string{"main/app/0", "side/app/0"}, Phase: corev1.PodPending},
		},
		{
			name: "failed init under Never: pod Failed, nothing else starts",
			pod:  testPod(never, []string{"init1", "init2"}, "main"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), exitedRec("i1", "init1", KindInit, 0, 1, at(1), at(2))},
			want: planSummary{StopSandbox: true, Phase: corev1.PodFailed},
		},
		{
			name: "failed init under Always: restart it (attempt+1), apps keep waiting",
			pod:  testPod(always, []string{"init1", "init2"}, "main"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), exitedRec("i1", "init1", KindInit, 0, 1, at(1), at(2))},
			want: planSummary{Start: []string{"init1/init/1"}, Phase: corev1.PodPending,
				Waiting: map[string]string{"main": ReasonPodInitializing}},
		},
		{
			name: "failed init under OnFailure in backoff: CrashLoopBackOff",
			pod:  testPod(onFailure, []string{"init1"}, "main"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), exitedRec("i2", "init1", KindInit, 2, 1, at(90), at(95))},
			gate: gateAt(map[string]time.Time{"i2": at(135)}),
			want: planSummary{Phase: corev1.PodPending, WakeAt: at(135),
				Waiting: map[string]string{"init1": ReasonCrashLoopBackOff, "main": ReasonPodInitializing}},
		},
		{
			name: "init containers from before a sandbox replacement run again",
			pod:  testPod(always, []string{"init1"}, "main"),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateExited, at(0)),
				sbRec("sb1", 1, StateRunning, at(50)),
				exitedRec("i0", "init1", KindInit, 0, 0, at(1), at(2)),
				exitedRec("c0", "main", KindApp, 0, 137, at(3), at(40)),
			},
			want: planSummary{Start: []string{"init1/init/1"}, Phase: corev1.PodPending,
				Waiting: map[string]string{"main": ReasonPodInitializing}, Remove: []string{"sb0"}},
		},
		{
			name: "Remove: instances older than the previous one, dead old sandboxes, gone containers; never running ones",
			pod:  testPod(always, nil, "main"),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateExited, at(0)),
				sbRec("sb1", 1, StateRunning, at(10)), // an old sandbox still running: kept
				sbRec("sb2", 2, StateExited, at(20)),
				sbRec("sb3", 3, StateRunning, at(30)),
				exitedRec("c0", "main", KindApp, 0, 1, at(31), at(32)),
				exitedRec("c1", "main", KindApp, 1, 1, at(33), at(34)),
				exitedRec("c2", "main", KindApp, 2, 1, at(35), at(36)),
				runningRec("c3", "main", KindApp, 3, at(37)),
				exitedRec("g0", "gone", KindApp, 0, 0, at(31), at(32)),
				runningRec("r0", "gone-running", KindApp, 0, at(31)),
			},
			want: planSummary{Phase: corev1.PodRunning, Remove: []string{"c0", "c1", "g0", "sb0", "sb2"}},
		},
		{
			name: "Remove never takes the newest sandbox, even dead",
			pod:  testPod(never, nil, "main"),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateExited, at(0)),
				exitedRec("c0", "main", KindApp, 0, 0, at(1), at(2)),
			},
			want: planSummary{Phase: corev1.PodSucceeded},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := summarize(PlanPod(tc.pod, NewPodView(tc.recs), tc.gate, now))
			if tc.want.Waiting == nil {
				tc.want.Waiting = map[string]string{}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("plan mismatch\n got: %+v\nwant: %+v", got, tc.want)
			}
		})
	}
}

func TestPlanPodCrashLoopMessage(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, nil, "main")
	recs := []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), exitedRec("c1", "main", KindApp, 1, 1, at(80), at(90))}
	p := PlanPod(pod, NewPodView(recs), gateAt(map[string]time.Time{"c1": at(110)}), at(95))
	w := p.Waiting["main"]
	if w.Reason != ReasonCrashLoopBackOff || !w.Until.Equal(at(110)) {
		t.Fatalf("waiting = %+v, want CrashLoopBackOff until %s", w, at(110))
	}
	if want := fmt.Sprintf("back-off 20s restarting failed container=main pod=%s_%s(%s)", pod.Name, pod.Namespace, pod.UID); w.Message != want {
		t.Fatalf("message %q, want the kubelet's %q", w.Message, want)
	}
	if len(p.Start) != 0 {
		t.Fatalf("started %v during backoff", summarize(p).Start)
	}
}

func TestPlanPodIsPure(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, []string{"init"}, "main")
	recs := []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), exitedRec("i0", "init", KindInit, 0, 0, at(1), at(2))}
	a := summarize(PlanPod(pod, NewPodView(recs), nil, at(3)))
	b := summarize(PlanPod(pod, NewPodView(recs), nil, at(3)))
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same inputs, different plans: %+v vs %+v", a, b)
	}
}

func TestPodPhase(t *testing.T) {
	always, never := corev1.RestartPolicyAlways, corev1.RestartPolicyNever
	tests := []struct {
		name string
		pod  *corev1.Pod
		recs []ContainerRecord
		want corev1.PodPhase
	}{
		{"nothing yet", testPod(always, nil, "main"), nil, corev1.PodPending},
		{"sandbox only", testPod(always, nil, "main"), []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0))}, corev1.PodPending},
		{"one of two started", testPod(always, nil, "main", "side"), []ContainerRecord{
			sbRec("sb0", 0, StateRunning, at(0)), runningRec("c0", "main", KindApp, 0, at(1)),
		}, corev1.PodPending},
		{"init running", testPod(always, []string{"init"}, "main"), []ContainerRecord{
			sbRec("sb0", 0, StateRunning, at(0)), runningRec("i0", "init", KindInit, 0, at(1)),
		}, corev1.PodPending},
		{"init failed, Always: Pending", testPod(always, []string{"init"}, "main"), []ContainerRecord{
			sbRec("sb0", 0, StateRunning, at(0)), exitedRec("i0", "init", KindInit, 0, 1, at(1), at(2)),
		}, corev1.PodPending},
		{"init failed, Never: Failed", testPod(never, []string{"init"}, "main"), []ContainerRecord{
			sbRec("sb0", 0, StateRunning, at(0)), exitedRec("i0", "init", KindInit, 0, 1, at(1), at(2)),
		}, corev1.PodFailed},
		{"running", testPod(always, []string{"init"}, "main"), []ContainerRecord{
			sbRec("sb0", 0, StateRunning, at(0)), exitedRec("i0", "init", KindInit, 0, 0, at(1), at(2)),
			runningRec("c0", "main", KindApp, 0, at(3)),
		}, corev1.PodRunning},
		{"restarting instance being created counts as Running", testPod(always, nil, "main"), []ContainerRecord{
			sbRec("sb0", 0, StateRunning, at(0)),
			{ID: "c1", Name: "main", Kind: KindApp, Attempt: 1, State: StateCreated, CreatedAt: at(5)},
		}, corev1.PodRunning},
		{"Never: all exited 0", testPod(never, nil, "main", "side"), []ContainerRecord{
			sbRec("sb0", 0, StateRunning, at(0)),
			exitedRec("c0", "main", KindApp, 0, 0, at(1), at(2)), exitedRec("s0", "side", KindApp, 0, 0, at(1), at(2)),
		}, corev1.PodSucceeded},
		{"Never: one failed", testPod(never, nil, "main", "side"), []ContainerRecord{
			sbRec("sb0", 0, StateRunning, at(0)),
			exitedRec("c0", "main", KindApp, 0, 0, at(1), at(2)), exitedRec("s0", "side", KindApp, 0, 1, at(1), at(2)),
		}, corev1.PodFailed},
		{"Always: all exited is still Running", testPod(always, nil, "main"), []ContainerRecord{
			sbRec("sb0", 0, StateRunning, at(0)), exitedRec("c0", "main", KindApp, 0, 0, at(1), at(2)),
		}, corev1.PodRunning},
		{"pod Always, container Never, exited 1: Failed", withPolicy(testPod(always, nil, "main"), "main", corev1.ContainerRestartPolicyNever), []ContainerRecord{
			sbRec("sb0", 0, StateRunning, at(0)), exitedRec("c0", "main", KindApp, 0, 1, at(1), at(2)),
		}, corev1.PodFailed},
		{"pod Never, container OnFailure, exited 1: Running (restarting)", withPolicy(testPod(never, nil, "main"), "main", corev1.ContainerRestartPolicyOnFailure), []ContainerRecord{
			sbRec("sb0", 0, StateRunning, at(0)), exitedRec("c0", "main", KindApp, 0, 1, at(1), at(2)),
		}, corev1.PodRunning},
		{"pod Always, init container Never, failed: Failed", withPolicy(testPod(always, []string{"init"}, "main"), "init", corev1.ContainerRestartPolicyNever), []ContainerRecord{
			sbRec("sb0", 0, StateRunning, at(0)), exitedRec("i0", "init", KindInit, 0, 1, at(1), at(2)),
		}, corev1.PodFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodPhase(tc.pod, NewPodView(tc.recs)); got != tc.want {
				t.Errorf("PodPhase = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestNewPodViewOrder(t *testing.T) {
	recs := []ContainerRecord{
		exitedRec("c0", "main", KindApp, 0, 1, at(1), at(2)),
		runningRec("c2", "main", KindApp, 2, at(5)),
		exitedRec("c1", "main", KindApp, 1, 1, at(3), at(4)),
		{ID: "c2b", Name: "main", Kind: KindApp, Attempt: 2, State: StateCreated, CreatedAt: at(6)},
		sbRec("sb0", 0, StateExited, at(0)),
		sbRec("sb1", 1, StateRunning, at(1)),
	}
	v := NewPodView(recs)
	var ids []string
	for _, r := range v.Containers["main"] {
		ids = append(ids, r.ID)
	}
	if want := []string{"c2b", "c2", "c1", "c0"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("main instances = %v, want %v (newest attempt, then newest creation, first)", ids, want)
	}
	if sb, ok := v.Sandbox(); !ok || sb.ID != "sb1" {
		t.Fatalf("Sandbox() = %v %v, want sb1", sb.ID, ok)
	}
	if prev, ok := v.Previous("main"); !ok || prev.ID != "c2" {
		t.Fatalf("Previous = %v %v, want c2", prev.ID, ok)
	}
	if _, ok := v.Latest("none"); ok {
		t.Fatal("Latest of an unknown container reported ok")
	}
	if v.Running() {
		t.Fatal("Running() = true, but only an older instance runs: only the newest counts")
	}
	if !NewPodView(recs[:3]).Running() {
		t.Fatal("Running() = false with the newest instance running")
	}
}

func TestContainerShouldRestart(t *testing.T) {
	pol := func(p corev1.ContainerRestartPolicy) *corev1.ContainerRestartPolicy { return &p }
	rule := func(op corev1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) corev1.ContainerRestartRule {
		return corev1.ContainerRestartRule{Action: corev1.ContainerRestartRuleActionRestart, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}
	}
	for _, tc := range []struct {
		name      string
		podPolicy corev1.RestartPolicy
		policy    *corev1.ContainerRestartPolicy
		rules     []corev1.ContainerRestartRule
		exit      int32
		want      bool
	}{
		{"pod Always", corev1.RestartPolicyAlways, nil, nil, 0, true},
		{"pod OnFailure, exit 0", corev1.RestartPolicyOnFailure, nil, nil, 0, false},
		{"pod OnFailure, exit 1", corev1.RestartPolicyOnFailure, nil, nil, 1, true},
		{"pod Never", corev1.RestartPolicyNever, nil, nil, 1, false},
		{"container OnFailure over pod Never", corev1.RestartPolicyNever, pol(corev1.ContainerRestartPolicyOnFailure), nil, 1, true},
		{"container Never over pod Always", corev1.RestartPolicyAlways, pol(corev1.ContainerRestartPolicyNever), nil, 0, false},
		{"rule In matches", corev1.RestartPolicyNever, pol(corev1.ContainerRestartPolicyNever), []corev1.ContainerRestartRule{rule("In", 42, 43)}, 42, true},
		{"rule In misses: the container's policy", corev1.RestartPolicyAlways, pol(corev1.ContainerRestartPolicyNever), []corev1.ContainerRestartRule{rule("In", 42)}, 1, false},
		{"rule NotIn matches", corev1.RestartPolicyNever, pol(corev1.ContainerRestartPolicyNever), []corev1.ContainerRestartRule{rule("NotIn", 0)}, 3, true},
		{"rule NotIn misses", corev1.RestartPolicyNever, pol(corev1.ContainerRestartPolicyNever), []corev1.ContainerRestartRule{rule("NotIn", 0)}, 0, false},
		{"rule RestartAllContainers matches: the container runs again", corev1.RestartPolicyNever, pol(corev1.ContainerRestartPolicyNever), []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestartAllContainers, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: "In", Values: []int32{42}}}}, 42, true},
		{"rules without a container policy are not read", corev1.RestartPolicyNever, nil, []corev1.ContainerRestartRule{rule("In", 42)}, 42, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := mgrPod("u", "p", tc.podPolicy, "c")
			pod.Spec.Containers[0].RestartPolicy, pod.Spec.Containers[0].RestartPolicyRules = tc.policy, tc.rules
			if got := ContainerShouldRestart(pod, &pod.Spec.Containers[0], tc.exit); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// withPolicy sets container name's own restartPolicy.
func withPolicy(p *corev1.Pod, name string, policy corev1.ContainerRestartPolicy) *corev1.Pod {
	for i := range p.Spec.InitContainers {
		if p.Spec.InitContainers[i].Name == name {
			p.Spec.InitContainers[i].RestartPolicy = &policy
		}
	}
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == name {
			p.Spec.Containers[i].RestartPolicy = &policy
		}
	}
	return p
}

// A container stopped for a failed liveness or startup probe restarts as the kubelet decides at
// the kill: unless its policy is Never, whatever its exit code (make conformance's
// prestop-on-liveness-kill: a SIGTERM handler exiting 0 under OnFailure); then its exit is judged
// as any other (liveness-kill-rule: a Restart rule for exit 0 restarts it).
func TestProbeKillRestarts(t *testing.T) {
	rule := []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: "In", Values: []int32{0}}}}
	onFailure, never, always := corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever, corev1.RestartPolicyAlways
	killed := func(code int32) ContainerRecord {
		r := exitedRec("c0", "main", KindApp, 0, code, at(1), at(5))
		r.ProbeKilled = true
		return r
	}
	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		rec       ContainerRecord
		restarts  bool
		wantPhase corev1.PodPhase
	}{
		{"OnFailure, killed, exit 0: restarts", testPod(onFailure, nil, "main"), killed(0), true, corev1.PodRunning},
		{"OnFailure, exit 0 of its own: done", testPod(onFailure, nil, "main"), exitedRec("c0", "main", KindApp, 0, 0, at(1), at(5)), false, corev1.PodSucceeded},
		{"Never, killed: stays down", testPod(never, nil, "main"), killed(137), false, corev1.PodFailed},
		{"Always, killed, exit 0: restarts", testPod(always, nil, "main"), killed(0), true, corev1.PodRunning},
		{"container Never in an Always pod, killed: stays down", withPolicy(testPod(always, nil, "main"), "main", corev1.ContainerRestartPolicyNever), killed(0), false, corev1.PodSucceeded},
		{"container OnFailure in a Never pod, killed, exit 0: restarts", withPolicy(testPod(never, nil, "main"), "main", corev1.ContainerRestartPolicyOnFailure), killed(0), true, corev1.PodRunning},
		{"container Never with a Restart rule for 0, killed: the exit is judged too (the rule)", func() *corev1.Pod {
			p := withPolicy(testPod(always, nil, "main"), "main", corev1.ContainerRestartPolicyNever)
			p.Spec.Containers[0].RestartPolicyRules = rule
			return p
		}(), killed(0), true, corev1.PodRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := NewPodView([]ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), tc.rec})
			p := PlanPod(tc.pod, v, gateAt(nil), at(20))
			if got := len(p.Start) == 1; got != tc.restarts {
				t.Errorf("restart planned %v, want %v (plan %+v)", got, tc.restarts, summarize(p))
			}
			if got := PodPhase(tc.pod, v); got != tc.wantPhase {
				t.Errorf("phase %s, want %s", got, tc.wantPhase)
			}
		})
	}
}
