package podrunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const waitTimeout = 10 * time.Second

// waitFor polls cond until it holds or a generous timeout passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type testEnv struct {
	m   *Manager
	rt  *fakeRuntime
	rec *Recorder
}

// newEnv builds a manager on a fake runtime; run starts it (stopped at the end of the test).
func newEnv(t *testing.T, backoff BackoffPolicy) *testEnv {
	t.Helper()
	rt := newFakeRuntime()
	rec := NewRecorder("node1", 1000)
	m := NewManager(Config{
		NodeName: "node1",
		LogDir:   t.TempDir(),
		HostIP:   "10.0.0.5",
		Backoff:  backoff,
		Resync:   time.Hour, // no safety-net relist during a test: exits drive everything
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, rt, rec)
	return &testEnv{m: m, rt: rt, rec: rec}
}

func (e *testEnv) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(waitTimeout):
			t.Error("Run did not return after its context ended")
		}
	})
}

var slowBackoff = BackoffPolicy{Initial: time.Hour, Max: 2 * time.Hour, ResetAfter: 10 * time.Hour}

func mgrPod(uid, name string, policy corev1.RestartPolicy, containers ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name + "-node1", Namespace: "default", UID: types.UID(uid),
			Annotations: map[string]string{"podkeeper.io/manifest-name": name},
		},
		Spec: corev1.PodSpec{RestartPolicy: policy, NodeName: "node1"},
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "busybox:1"})
	}
	return p
}

func withGrace(p *corev1.Pod, sec int64) *corev1.Pod {
	p.Spec.TerminationGracePeriodSeconds = &sec
	return p
}

// status returns the published pod of uid (the live instance), if any.
func (e *testEnv) status(uid string) *corev1.Pod {
	for _, p := range e.m.Pods() {
		if string(p.UID) == uid {
			return p
		}
	}
	return nil
}

func (e *testEnv) containerStatus(uid, name string) (corev1.ContainerStatus, bool) {
	p := e.status(uid)
	if p == nil {
		return corev1.ContainerStatus{}, false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name {
			return cs, true
		}
	}
	return corev1.ContainerStatus{}, false
}

// waitRunning waits until container name of pod uid runs and returns its record.
func (e *testEnv) waitRunning(t *testing.T, uid, name string, attempt int) ContainerRecord {
	t.Helper()
	var r ContainerRecord
	waitFor(t, uid+"/"+name+" running at attempt "+strconv.Itoa(attempt), func() bool {
		var ok bool
		r, ok = e.rt.Running(uid, name)
		return ok && r.Attempt == attempt
	})
	return r
}

func (e *testEnv) starts(uid, name string) []fakeCall {
	var out []fakeCall
	for _, c := range e.rt.CallsFor("StartContainer", uid) {
		if c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

func TestManagerWaitsForFirstSnapshot(t *testing.T) {
	e := newEnv(t, slowBackoff)
	a := mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main")
	b := mgrPod("uid-b", "b", corev1.RestartPolicyAlways, "main")
	e.run(t)
	select {
	case <-e.m.Ready():
		t.Fatal("Ready before any snapshot")
	default:
	}
	if calls := e.rt.Calls(""); len(calls) != 0 {
		t.Fatalf("runtime used before the first snapshot: %+v", calls)
	}
	e.m.Update([]*corev1.Pod{a, b})
	select {
	case <-e.m.Ready():
	case <-time.After(waitTimeout):
		t.Fatal("not Ready after the first snapshot")
	}
	e.waitRunning(t, "uid-a", "main", 0)
	e.waitRunning(t, "uid-b", "main", 0)
	all := e.rt.Calls("")
	if all[0].Op != "ListContainers" || all[0].PodUID != "" {
		t.Fatalf("first call = %+v, want ListContainers of every pod (adoption) before anything starts", all[0])
	}
}

func TestManagerLatestSnapshotWins(t *testing.T) {
	e := newEnv(t, slowBackoff)
	a := mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main")
	b := mgrPod("uid-b", "b", corev1.RestartPolicyAlways, "main")
	// Both snapshots arrive before Run: only the latest is applied.
	e.m.Update([]*corev1.Pod{a})
	e.m.Update([]*corev1.Pod{b})
	e.run(t)
	e.waitRunning(t, "uid-b", "main", 0)
	if c := e.rt.CallsFor("CreateSandbox", "uid-a"); len(c) != 0 {
		t.Fatalf("pod of a replaced snapshot was started: %+v", c)
	}
}

func TestManagerAdoptsRunningContainers(t *testing.T) {
	e := newEnv(t, slowBackoff)
	pod := mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main")
	started := time.Now().Add(-time.Minute)
	e.rt.Seed(ContainerRecord{ID: "old-sb", PodUID: "uid-a", PodName: pod.Name, PodNamespace: "default",
		Kind: KindSandbox, State: StateRunning, TaskPresent: true, CreatedAt: started, StartedAt: started})
	e.rt.Seed(ContainerRecord{ID: "old-main-2", PodUID: "uid-a", PodName: pod.Name, PodNamespace: "default",
		Name: "main", Kind: KindApp, Attempt: 2, State: StateExited, ExitCode: 1,
		CreatedAt: started, StartedAt: started, FinishedAt: started.Add(time.Second)})
	e.rt.Seed(ContainerRecord{ID: "old-main-3", PodUID: "uid-a", PodName: pod.Name, PodNamespace: "default",
		Name: "main", Kind: KindApp, Attempt: 3, State: StateRunning, TaskPresent: true,
		CreatedAt: started.Add(2 * time.Second), StartedAt: started.Add(2 * time.Second)})
	e.m.Update([]*corev1.Pod{pod})
	e.run(t)

	waitFor(t, "status of the adopted pod", func() bool {
		cs, ok := e.containerStatus("uid-a", "main")
		return ok && cs.State.Running != nil
	})
	cs, _ := e.containerStatus("uid-a", "main")
	if cs.RestartCount != 3 || cs.ContainerID != "containerd://old-main-3" {
		t.Errorf("adopted status: restartCount %d containerID %q, want 3 containerd://old-main-3", cs.RestartCount, cs.ContainerID)
	}
	if cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ContainerID != "containerd://old-main-2" {
		t.Errorf("lastState = %+v, want the adopted previous instance", cs.LastTerminationState)
	}
	if p := e.status("uid-a"); p.Status.Phase != corev1.PodRunning {
		t.Errorf("phase = %s, want Running", p.Status.Phase)
	}
	for _, op := range []string{"CreateSandbox", "StartContainer", "StopContainer", "RemoveContainer", "EnsureImage"} {
		if c := e.rt.Calls(op); len(c) != 0 {
			t.Errorf("adoption called %s: %+v", op, c)
		}
	}
}

func TestManagerTerminatesOrphans(t *testing.T) {
	e := newEnv(t, slowBackoff)
	started := time.Now().Add(-time.Minute)
	// A pod from before the restart whose manifest is gone. Its grace period is only in its labels.
	e.rt.Seed(ContainerRecord{ID: "orph-sb", PodUID: "uid-orphan", PodName: "gone-node1", PodNamespace: "default",
		Kind: KindSandbox, State: StateRunning, TaskPresent: true, CreatedAt: started, StartedAt: started, GracePeriod: 7 * time.Second})
	e.rt.Seed(ContainerRecord{ID: "orph-main", PodUID: "uid-orphan", PodName: "gone-node1", PodNamespace: "default",
		Name: "main", Kind: KindApp, State: StateRunning, TaskPresent: true, CreatedAt: started, StartedAt: started, GracePeriod: 7 * time.Second})
	other := mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main")
	e.m.Update([]*corev1.Pod{other})
	e.run(t)

	waitFor(t, "orphan removed", func() bool {
		return len(e.rt.Containers("uid-orphan")) == 0 && len(e.rt.CallsFor("RemovePodFiles", "uid-orphan")) == 1
	})
	var stoppedMain bool
	for _, c := range e.rt.CallsFor("StopContainer", "uid-orphan") {
		if c.ID == "orph-main" {
			stoppedMain = true
			if c.Grace != 7*time.Second {
				t.Errorf("orphan container stopped with grace %s, want its recorded 7s", c.Grace)
			}
		}
	}
	if !stoppedMain {
		t.Error("orphan container was not stopped")
	}
	removed := map[string]bool{}
	for _, c := range e.rt.CallsFor("RemoveContainer", "uid-orphan") {
		removed[c.ID] = true
	}
	if !removed["orph-main"] || !removed["orph-sb"] {
		t.Errorf("removed %v, want the orphan's container and sandbox", removed)
	}
	e.waitRunning(t, "uid-a", "main", 0)
	waitFor(t, "orphan gone from Pods()", func() bool { return e.status("uid-orphan") == nil })
}

func TestManagerStopsRemovedPod(t *testing.T) {
	e := newEnv(t, slowBackoff)
	pod := withGrace(mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main", "side"), 5)
	e.m.Update([]*corev1.Pod{pod})
	e.run(t)
	main := e.waitRunning(t, "uid-a", "main", 0)
	side := e.waitRunning(t, "uid-a", "side", 0)

	e.m.Update(nil)
	waitFor(t, "pod removed", func() bool {
		return len(e.rt.Containers("uid-a")) == 0 && len(e.rt.CallsFor("RemovePodFiles", "uid-a")) == 1
	})
	graces := map[string]time.Duration{}
	for _, c := range e.rt.CallsFor("StopContainer", "uid-a") {
		graces[c.ID] = c.Grace
	}
	for _, r := range []ContainerRecord{main, side} {
		if g, ok := graces[r.ID]; !ok || g != 5*time.Second {
			t.Errorf("%s stopped: %v with grace %s, want 5s (terminationGracePeriodSeconds)", r.Name, ok, g)
		}
	}
	removed := map[string]bool{}
	for _, c := range e.rt.CallsFor("RemoveContainer", "uid-a") {
		removed[c.ID] = true
	}
	if !removed[main.ID] || !removed[side.ID] {
		t.Errorf("removed %v, want both containers", removed)
	}
	waitFor(t, "pod gone from Pods()", func() bool { return len(e.m.Pods()) == 0 })
	killing := 0
	for _, ev := range e.rec.Events("uid-a") {
		if ev.Reason == ReasonKilling {
			killing++
		}
	}
	if killing != 2 {
		t.Errorf("%d Killing events, want 2", killing)
	}
}

// blockStops makes StopContainer of app containers wait for release (sandboxes pass). stopping
// receives the ID of each stop that starts waiting.
func blockStops(rt *fakeRuntime) (stopping chan string, release func()) {
	stopping = make(chan string, 100)
	rel := make(chan struct{})
	var once sync.Once
	rt.SetStopHook(func(ctx context.Context, id string) {
		if strings.HasPrefix(id, "sb") {
			return
		}
		stopping <- id
		select {
		case <-rel:
		case <-ctx.Done():
		}
	})
	return stopping, func() { once.Do(func() { close(rel) }) }
}

func TestManagerNewInstanceWaitsForOld(t *testing.T) {
	e := newEnv(t, slowBackoff)
	oldPod := withGrace(mgrPod("uid-old", "web", corev1.RestartPolicyAlways, "main"), 3)
	e.m.Update([]*corev1.Pod{oldPod})
	e.run(t)
	e.waitRunning(t, "uid-old", "main", 0)

	stopping, release := blockStops(e.rt)
	defer release()
	newPod := mgrPod("uid-new", "web", corev1.RestartPolicyAlways, "main") // same namespace/name, edited manifest
	e.m.Update([]*corev1.Pod{newPod})
	select {
	case <-stopping:
	case <-time.After(waitTimeout):
		t.Fatal("old instance not being stopped")
	}
	// While the old instance terminates the new one is listed as Pending and nothing of it exists.
	waitFor(t, "both instances listed", func() bool { return len(e.m.Pods()) == 2 })
	pods := e.m.Pods()
	if pods[0].UID != "uid-old" || pods[0].DeletionTimestamp == nil {
		t.Errorf("first listed = %s (deletion %v), want the terminating old instance", pods[0].UID, pods[0].DeletionTimestamp)
	}
	if pods[1].UID != "uid-new" || pods[1].Status.Phase != corev1.PodPending {
		t.Errorf("second listed = %s %s, want the new instance Pending", pods[1].UID, pods[1].Status.Phase)
	}
	if p, err := e.m.FindPod("", "web"); err != nil || p.UID != "uid-new" {
		t.Errorf("FindPod(web) = %v, %v; want the new (not terminating) instance", p, err)
	}
	if c := e.rt.CallsFor("CreateSandbox", "uid-new"); len(c) != 0 {
		t.Fatalf("new instance created while the old one terminates: %+v", c)
	}
	release()
	e.waitRunning(t, "uid-new", "main", 0)

	lastOld := 0
	for _, c := range e.rt.Calls("") {
		if c.PodUID == "uid-old" && (c.Op == "RemoveContainer" || c.Op == "RemovePodFiles" || c.Op == "StopContainer") {
			lastOld = c.Seq
		}
	}
	first := e.rt.CallsFor("CreateSandbox", "uid-new")[0]
	if first.Seq < lastOld {
		t.Fatalf("new sandbox created (call %d) before the old instance was fully removed (call %d)", first.Seq, lastOld)
	}
	if len(e.rt.Containers("uid-old")) != 0 {
		t.Fatal("old instance's containers left behind")
	}
	for _, c := range e.rt.CallsFor("StopContainer", "uid-old") {
		if c.Name == "main" && c.Grace != 3*time.Second {
			t.Errorf("old main stopped with grace %s, want 3s", c.Grace)
		}
	}
}

func TestManagerOrphanWithSameNameBlocksNewInstance(t *testing.T) {
	e := newEnv(t, slowBackoff)
	started := time.Now().Add(-time.Minute)
	e.rt.Seed(ContainerRecord{ID: "orph-sb", PodUID: "uid-old", PodName: "web-node1", PodNamespace: "default",
		Kind: KindSandbox, State: StateRunning, TaskPresent: true, CreatedAt: started, StartedAt: started, GracePeriod: time.Second})
	e.rt.Seed(ContainerRecord{ID: "orph-main", PodUID: "uid-old", PodName: "web-node1", PodNamespace: "default",
		Name: "main", Kind: KindApp, State: StateRunning, TaskPresent: true, CreatedAt: started, StartedAt: started, GracePeriod: time.Second})
	e.m.Update([]*corev1.Pod{mgrPod("uid-new", "web", corev1.RestartPolicyAlways, "main")})
	e.run(t)
	e.waitRunning(t, "uid-new", "main", 0)
	var removedFiles, created int
	for _, c := range e.rt.Calls("") {
		switch {
		case c.Op == "RemovePodFiles" && c.PodUID == "uid-old":
			removedFiles = c.Seq
		case c.Op == "CreateSandbox" && c.PodUID == "uid-new" && created == 0:
			created = c.Seq
		}
	}
	if removedFiles == 0 || created < removedFiles {
		t.Fatalf("new instance's sandbox (call %d) not after the old instance's removal (call %d)", created, removedFiles)
	}
}

func TestManagerRestartAlwaysThenCrashLoopBackOff(t *testing.T) {
	e := newEnv(t, slowBackoff) // 1h backoff: a restart that happens at all happened without waiting
	pod := mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main")
	e.m.Update([]*corev1.Pod{pod})
	e.run(t)
	first := e.waitRunning(t, "uid-a", "main", 0)

	e.rt.Exit(t, first.ID, 1)
	second := e.waitRunning(t, "uid-a", "main", 1) // the first crash restarts at once

	e.rt.Exit(t, second.ID, 2)
	waitFor(t, "CrashLoopBackOff in status", func() bool {
		cs, ok := e.containerStatus("uid-a", "main")
		return ok && cs.State.Waiting != nil && cs.State.Waiting.Reason == ReasonCrashLoopBackOff
	})
	cs, _ := e.containerStatus("uid-a", "main")
	if !strings.Contains(cs.State.Waiting.Message, "back-off 1h0m0s restarting failed container=main") {
		t.Errorf("waiting message = %q", cs.State.Waiting.Message)
	}
	if cs.RestartCount != 1 {
		t.Errorf("restartCount = %d, want 1", cs.RestartCount)
	}
	if lt := cs.LastTerminationState.Terminated; lt == nil || lt.ExitCode != 2 || lt.ContainerID != "containerd://"+second.ID {
		t.Errorf("lastState = %+v, want the instance that just exited with 2", cs.LastTerminationState)
	}
	if s := e.starts("uid-a", "main"); len(s) != 2 {
		t.Errorf("%d starts, want 2 (the second crash waits)", len(s))
	}
	waitFor(t, "BackOff event", func() bool {
		for _, ev := range e.rec.Events("uid-a") {
			if ev.Reason == ReasonBackOff && ev.Type == EventWarning && ev.InvolvedObject.FieldPath == "spec.containers{main}" {
				return true
			}
		}
		return false
	})

	// logs --previous reads the instance before the newest.
	path, err := e.m.ContainerLogPath(context.Background(), pod, "main", true)
	if err != nil || path != first.LogPath {
		t.Errorf("previous log path = %q, %v; want %q", path, err, first.LogPath)
	}
	path, err = e.m.ContainerLogPath(context.Background(), pod, "main", false)
	if err != nil || path != second.LogPath || !strings.HasSuffix(path, "default_a-node1_uid-a/main/1.log") {
		t.Errorf("current log path = %q, %v; want %q", path, err, second.LogPath)
	}
	if _, err := e.m.ContainerLogPath(context.Background(), pod, "nope", false); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "containers: main") {
		t.Errorf("unknown container: %v", err)
	}
}

// Exits missed while the event stream was down are acted on when the runtime says the stream is
// back, for every pod, without waiting for the safety-net relist (an hour here).
func TestManagerRereadsEveryPodAfterEventGap(t *testing.T) {
	e := newEnv(t, slowBackoff)
	e.m.Update([]*corev1.Pod{
		mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main"),
		mgrPod("uid-b", "b", corev1.RestartPolicyAlways, "main"),
	})
	e.run(t)
	a := e.waitRunning(t, "uid-a", "main", 0)
	b := e.waitRunning(t, "uid-b", "main", 0)

	e.rt.ExitUnseen(t, a.ID, 1)
	e.rt.ExitUnseen(t, b.ID, 1)
	lists := len(e.rt.CallsFor("ListContainers", "uid-a"))
	time.Sleep(100 * time.Millisecond)
	if n := len(e.rt.CallsFor("ListContainers", "uid-a")); n != lists {
		t.Fatalf("pod a relisted %d times with no event (the test's resync is an hour)", n-lists)
	}
	if s := e.starts("uid-a", "main"); len(s) != 1 {
		t.Fatalf("%d starts of a before the stream came back, want 1", len(s))
	}

	e.rt.StreamBack()
	e.waitRunning(t, "uid-a", "main", 1)
	e.waitRunning(t, "uid-b", "main", 1)
}

func TestManagerBackoffDelaysSecondRestart(t *testing.T) {
	initial := 200 * time.Millisecond
	e := newEnv(t, BackoffPolicy{Initial: initial, Max: time.Second, ResetAfter: time.Hour})
	e.m.Update([]*corev1.Pod{mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main")})
	e.run(t)
	r0 := e.waitRunning(t, "uid-a", "main", 0)
	e.rt.Exit(t, r0.ID, 1)
	r1 := e.waitRunning(t, "uid-a", "main", 1)
	exitedAt := e.rt.Exit(t, r1.ID, 1)
	e.waitRunning(t, "uid-a", "main", 2)

	s := e.starts("uid-a", "main")
	if len(s) != 3 {
		t.Fatalf("starts = %+v, want 3", s)
	}
	if s[2].At.Before(exitedAt.Add(initial)) {
		t.Fatalf("second restart at %s, only %s after the exit; want >= %s", s[2].At.Format(time.StampMicro), s[2].At.Sub(exitedAt), initial)
	}
	if s[1].Attempt != 1 || s[2].Attempt != 2 {
		t.Fatalf("attempts = %d, %d; want 1, 2", s[1].Attempt, s[2].Attempt)
	}
}

// A crashed container's exit is recorded first, then its replacement starts, and only then is
// the old instance's task released: the task's delete (a shim round trip and runc delete) is not
// on the restart's path. The old instance stays as the record of lastState.
func TestManagerReplacementStartsBeforeOldTaskIsReleased(t *testing.T) {
	e := newEnv(t, slowBackoff)
	e.m.Update([]*corev1.Pod{mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main")})
	e.run(t)
	first := e.waitRunning(t, "uid-a", "main", 0)
	e.rt.Exit(t, first.ID, 3)
	e.waitRunning(t, "uid-a", "main", 1)
	seq := func(op string) int {
		for _, c := range e.rt.Calls(op) {
			if (op == "StartContainer" && c.Attempt == 1) || (op != "StartContainer" && c.ID == first.ID) {
				return c.Seq
			}
		}
		return 0
	}
	waitFor(t, "the old task released", func() bool { return seq("Finalize") > 0 })
	rec, start, fin := seq("RecordExit"), seq("StartContainer"), seq("Finalize")
	if !(rec > 0 && rec < start && start < fin) {
		t.Fatalf("call order: RecordExit #%d, replacement StartContainer #%d, Finalize #%d; want them in that order", rec, start, fin)
	}
	n := 0
	for _, c := range e.rt.Calls("RecordExit") {
		if c.ID == first.ID {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the exit was recorded %d times, want once (a recorded exit is not asked again)", n)
	}
	for _, r := range e.rt.Containers("uid-a") {
		if r.ID == first.ID && (r.State != StateExited || r.TaskPresent) {
			t.Fatalf("old instance after the restart: %+v, want exited with its task released", r)
		}
	}
	cs, _ := e.containerStatus("uid-a", "main")
	if lt := cs.LastTerminationState.Terminated; lt == nil || lt.ExitCode != 3 {
		t.Fatalf("lastState = %+v, want the exit with 3", cs.LastTerminationState)
	}
}

func TestManagerRestartPolicyNever(t *testing.T) {
	e := newEnv(t, BackoffPolicy{Initial: time.Millisecond, Max: time.Millisecond, ResetAfter: time.Hour})
	e.m.Update([]*corev1.Pod{mgrPod("uid-a", "a", corev1.RestartPolicyNever, "main")})
	e.run(t)
	r := e.waitRunning(t, "uid-a", "main", 0)
	e.rt.Exit(t, r.ID, 1)
	waitFor(t, "pod Failed with its sandbox stopped", func() bool {
		p := e.status("uid-a")
		return p != nil && p.Status.Phase == corev1.PodFailed && len(e.rt.CallsFor("StopContainer", "uid-a")) > 0
	})
	if s := e.starts("uid-a", "main"); len(s) != 1 {
		t.Fatalf("starts = %+v, want 1 (Never)", s)
	}
	cs, _ := e.containerStatus("uid-a", "main")
	if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 1 || cs.State.Terminated.Reason != "Error" {
		t.Fatalf("state = %+v, want terminated Error 1", cs.State)
	}
}

func TestManagerRestartPolicyOnFailure(t *testing.T) {
	for _, tc := range []struct {
		code        int32
		wantRestart bool
	}{{0, false}, {1, true}} {
		t.Run(strconv.Itoa(int(tc.code)), func(t *testing.T) {
			e := newEnv(t, slowBackoff)
			e.m.Update([]*corev1.Pod{mgrPod("uid-a", "a", corev1.RestartPolicyOnFailure, "main")})
			e.run(t)
			r := e.waitRunning(t, "uid-a", "main", 0)
			e.rt.Exit(t, r.ID, tc.code)
			if tc.wantRestart {
				e.waitRunning(t, "uid-a", "main", 1)
				return
			}
			waitFor(t, "pod Succeeded with its sandbox stopped", func() bool {
				p := e.status("uid-a")
				return p != nil && p.Status.Phase == corev1.PodSucceeded && len(e.rt.CallsFor("StopContainer", "uid-a")) > 0
			})
			if s := e.starts("uid-a", "main"); len(s) != 1 {
				t.Fatalf("starts = %+v, want 1 (exit 0 under OnFailure)", s)
			}
		})
	}
}

func TestManagerImagePullFailure(t *testing.T) {
	e := newEnv(t, slowBackoff)
	pod := mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main")
	pod.Spec.Containers[0].Image = "bad:1"
	e.rt.FailPull("bad:1", errors.New("manifest unknown"))
	e.m.Update([]*corev1.Pod{pod})
	e.run(t)

	waiting := func(reason string) func() bool {
		return func() bool {
			cs, ok := e.containerStatus("uid-a", "main")
			return ok && cs.State.Waiting != nil && cs.State.Waiting.Reason == reason
		}
	}
	waitFor(t, "ErrImagePull", waiting("ErrImagePull"))
	cs, _ := e.containerStatus("uid-a", "main")
	if !strings.Contains(cs.State.Waiting.Message, "manifest unknown") {
		t.Errorf("ErrImagePull message = %q", cs.State.Waiting.Message)
	}
	var failed bool
	for _, ev := range e.rec.Events("uid-a") {
		if ev.Type == EventWarning && ev.Reason == ReasonFailed && strings.Contains(ev.Message, `Failed to pull image "bad:1"`) &&
			ev.InvolvedObject.FieldPath == "spec.containers{main}" {
			failed = true
		}
	}
	if !failed {
		t.Errorf("no Failed event: %+v", e.rec.Events("uid-a"))
	}
	if n := len(e.rt.Calls("EnsureImage")); n != 1 {
		t.Fatalf("%d pulls, want 1", n)
	}

	// The next sync inside the pull backoff shows ImagePullBackOff and does not pull.
	e.m.Update([]*corev1.Pod{pod})
	waitFor(t, "ImagePullBackOff", waiting("ImagePullBackOff"))
	cs, _ = e.containerStatus("uid-a", "main")
	if !strings.Contains(cs.State.Waiting.Message, `Back-off pulling image "bad:1"`) {
		t.Errorf("ImagePullBackOff message = %q", cs.State.Waiting.Message)
	}
	if n := len(e.rt.Calls("EnsureImage")); n != 1 {
		t.Fatalf("%d pulls during the backoff, want 1", n)
	}
	if n := len(e.rt.Calls("StartContainer")); n != 0 {
		t.Fatalf("container started without its image")
	}
}

// A pod removed while its image is being pulled from a registry that stopped sending goes at
// once: the pull is ended (as the kubelet cancels a deleted pod's sync), and its end is no pull
// failure (no Failed event, no back-off).
func TestManagerRemovedPodEndsItsPull(t *testing.T) {
	e := newEnv(t, slowBackoff)
	pod := mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main")
	pod.Spec.Containers[0].Image = "hang:1"
	e.rt.mu.Lock()
	e.rt.pullHang["hang:1"] = true
	e.rt.mu.Unlock()
	e.m.Update([]*corev1.Pod{pod})
	e.run(t)
	waitFor(t, "the pull under way", func() bool { return len(e.rt.Calls("EnsureImage")) == 1 })

	e.m.Update(nil)
	waitFor(t, "pod gone", func() bool {
		return len(e.m.Pods()) == 0 && len(e.rt.CallsFor("RemovePodFiles", "uid-a")) == 1
	})
	for _, ev := range e.rec.Events("uid-a") {
		if ev.Reason == ReasonFailed || ev.Reason == ReasonBackOff {
			t.Errorf("event for an ended pull: %s %s", ev.Reason, ev.Message)
		}
	}
	if n := len(e.rt.Calls("EnsureImage")); n != 1 {
		t.Errorf("%d pulls, want 1", n)
	}
}

// A pod removed while a container's postStart hook hangs goes at once: the hook is ended (the
// kubelet gives postStart no timeout, but a deleted pod's sync is cancelled).
func TestManagerRemovedPodEndsItsPostStart(t *testing.T) {
	e := newEnv(t, slowBackoff)
	pod := withGrace(mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main"), 1)
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"hang"}}}}
	hooked := make(chan struct{}, 1)
	e.rt.SetExec(func(ctx context.Context, id string, req ExecRequest) (int, error) {
		select {
		case hooked <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return -1, ctx.Err()
	})
	e.m.Update([]*corev1.Pod{pod})
	e.run(t)
	select {
	case <-hooked:
	case <-time.After(waitTimeout):
		t.Fatal("the postStart hook never ran")
	}
	e.m.Update(nil)
	waitFor(t, "pod gone", func() bool {
		return len(e.m.Pods()) == 0 && len(e.rt.CallsFor("RemovePodFiles", "uid-a")) == 1
	})
}

// A start that fails before anything is kept (bad spec) waits with backoff as
// CreateContainerConfigError; it never turns into a tight retry loop.
func TestManagerUnrecordedStartFailureBacksOff(t *testing.T) {
	e := newEnv(t, slowBackoff)
	pod := mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main")
	e.rt.FailStart("main", errors.New(`volume "cfg": this volume type is not supported yet`))
	e.m.Update([]*corev1.Pod{pod})
	e.run(t)
	waitFor(t, "CreateContainerConfigError", func() bool {
		cs, ok := e.containerStatus("uid-a", "main")
		return ok && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CreateContainerConfigError" &&
			strings.Contains(cs.State.Waiting.Message, "not supported")
	})
	before := len(e.rt.Calls("ListContainers"))
	wakeAll(e.m) // a sync inside the backoff (an equal spec from a snapshot no longer wakes it)
	waitFor(t, "another sync", func() bool { return len(e.rt.Calls("ListContainers")) > before })
	if n := len(e.starts("uid-a", "main")); n != 1 {
		t.Fatalf("%d start attempts inside the backoff, want 1", n)
	}
}

// A start the kubelet's runtime would fail in CreateContainer (a Localhost seccomp profile the
// node lacks) waits as CreateContainerError with the CRI's message, in the status and in the
// Failed event, with a bad spec's backoff.
func TestManagerCreateErrorAsTheKubelet(t *testing.T) {
	e := newEnv(t, slowBackoff)
	pod := mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main")
	e.rt.FailStart("main", fmt.Errorf("start container x: container spec: %w", &CreateError{Err: errors.New(`cannot load seccomp profile "/p.json": no such file`)}))
	e.m.Update([]*corev1.Pod{pod})
	e.run(t)
	want := `failed to create containerd container: cannot load seccomp profile "/p.json": no such file`
	waitFor(t, "CreateContainerError", func() bool {
		cs, ok := e.containerStatus("uid-a", "main")
		return ok && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CreateContainerError" && cs.State.Waiting.Message == want
	})
	found := false
	for _, ev := range e.rec.Events("uid-a") {
		found = found || (ev.Reason == ReasonFailed && ev.Message == "Error: "+want)
	}
	if !found {
		t.Errorf("no Failed event with the CRI's message: %+v", e.rec.Events("uid-a"))
	}
	wakeAll(e.m) // inside the backoff: still CreateContainerError, no second try
	time.Sleep(200 * time.Millisecond)
	if cs, _ := e.containerStatus("uid-a", "main"); cs.State.Waiting == nil || cs.State.Waiting.Reason != "CreateContainerError" {
		t.Errorf("inside the backoff: %+v", cs.State)
	}
	if n := len(e.starts("uid-a", "main")); n != 1 {
		t.Errorf("%d start attempts inside the backoff, want 1", n)
	}
}

// A volume that cannot be set up is the kubelet's FailedMount: the container waits as
// ContainerCreating with the kubelet's message, a FailedMount warning names the volume, the
// set-up is tried again with the volume backoff (500 ms, not a bad spec's hour here), and the
// container starts once the volume can be set up.
func TestManagerVolumeSetUpFailureIsFailedMount(t *testing.T) {
	e := newEnv(t, slowBackoff)
	pod := mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main")
	e.rt.FailStart("main", fmt.Errorf("prepare volumes: %w", &VolumeError{Volume: "h", Err: errors.New("hostPath type check failed: /x is not a file")}))
	e.m.Update([]*corev1.Pod{pod})
	e.run(t)
	want := `MountVolume.SetUp failed for volume "h" : hostPath type check failed: /x is not a file`
	waitFor(t, "ContainerCreating with the FailedMount message", func() bool {
		cs, ok := e.containerStatus("uid-a", "main")
		return ok && cs.State.Waiting != nil && cs.State.Waiting.Reason == "ContainerCreating" && cs.State.Waiting.Message == want
	})
	var mount, failed int
	for _, ev := range e.rec.Events("uid-a") {
		switch {
		case ev.Type == EventWarning && ev.Reason == ReasonFailedMount && ev.Message == want && ev.InvolvedObject.FieldPath == "":
			mount++
		case ev.Reason == ReasonFailed:
			failed++
		}
	}
	if mount != 1 || failed != 0 {
		t.Errorf("events: %d FailedMount, %d Failed; want 1 and 0: %+v", mount, failed, e.rec.Events("uid-a"))
	}
	// Still failing: tried again after about 500 ms, then 1 s (the status keeps the reason).
	waitFor(t, "two more tries", func() bool { return len(e.starts("uid-a", "main")) >= 3 })
	if cs, _ := e.containerStatus("uid-a", "main"); cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("state between tries: %+v", cs.State)
	}
	e.rt.FailStart("main", nil) // the file shows up
	waitFor(t, "running once the volume can be set up", func() bool {
		cs, ok := e.containerStatus("uid-a", "main")
		return ok && cs.State.Running != nil
	})
}

// A start blocked by what an interrupted earlier create of the container still holds is not the
// container's failure: it waits as ContainerCreating, with no failure event and none of a bad
// spec's backoff (an hour here), and starts once the leftover is gone.
func TestManagerInterruptedCreateRetriesSoon(t *testing.T) {
	e := newEnv(t, slowBackoff)
	pod := mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main")
	e.rt.FailStart("main", fmt.Errorf("create task x: %w: runc: container with given ID already exists", ErrCreateInterrupted))
	e.m.Update([]*corev1.Pod{pod})
	e.run(t)
	waitFor(t, "ContainerCreating", func() bool {
		cs, ok := e.containerStatus("uid-a", "main")
		return ok && cs.State.Waiting != nil && cs.State.Waiting.Reason == "ContainerCreating" &&
			strings.Contains(cs.State.Waiting.Message, "interrupted earlier create")
	})
	e.rt.FailStart("main", nil) // the leftover is gone
	e.waitRunning(t, "uid-a", "main", 0)
	for _, ev := range e.rec.Events("uid-a") {
		if ev.Reason == ReasonFailed {
			t.Fatalf("a failure event for an interrupted earlier create: %+v", ev)
		}
	}
}

func TestInterruptedBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{
		1: 500 * time.Millisecond, 2: time.Second, 3: 2 * time.Second, 4: 4 * time.Second,
		5: 8 * time.Second, 6: 8 * time.Second, 100: 8 * time.Second,
	} {
		if got := interruptedBackoff.Delay(n); got != want {
			t.Errorf("interruptedBackoff.Delay(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestManagerFindPod(t *testing.T) {
	e := newEnv(t, slowBackoff)
	web := mgrPod("uid-web", "web", corev1.RestartPolicyAlways, "main")
	db := mgrPod("uid-db", "db", corev1.RestartPolicyAlways, "main")
	db.Namespace = "data"

	if _, err := e.m.FindPod("", "web"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "no pods") {
		t.Fatalf("FindPod with no pods: %v", err)
	}
	e.m.Update([]*corev1.Pod{web, db})
	e.run(t)
	waitFor(t, "both pods listed", func() bool { return len(e.m.Pods()) == 2 })

	for _, tc := range []struct{ ns, name, uid string }{
		{"", "web-node1", "uid-web"},
		{"", "web", "uid-web"}, // manifest name annotation
		{"default", "web", "uid-web"},
		{"data", "db", "uid-db"},
		{"", "db-node1", "uid-db"},
	} {
		p, err := e.m.FindPod(tc.ns, tc.name)
		if err != nil || string(p.UID) != tc.uid {
			t.Errorf("FindPod(%q, %q) = %v, %v; want %s", tc.ns, tc.name, p, err, tc.uid)
		}
	}
	_, err := e.m.FindPod("", "nope")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "db-node1") || !strings.Contains(err.Error(), "web-node1") {
		t.Errorf("not-found error %q should list the pods", err)
	}
	_, err = e.m.FindPod("data", "web")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "db-node1") || strings.Contains(err.Error(), "web-node1") {
		t.Errorf("not-found error in namespace data = %q, want only that namespace's pods", err)
	}
	if p := e.status("uid-web"); p.Annotations["kubernetes.io/config.seen"] == "" || p.CreationTimestamp.IsZero() {
		t.Errorf("published pod lacks config.seen/creationTimestamp: %v %v", p.Annotations, p.CreationTimestamp)
	}
}

// revertWhileTerminating runs pod A, replaces it by B (same name, new UID), and, while A is
// still terminating, reverts the snapshot to A (plus an unrelated pod C whose start proves the
// snapshot was applied). Then A's termination is let finish.
func revertWhileTerminating(t *testing.T) *testEnv {
	e := newEnv(t, slowBackoff)
	a := mgrPod("uid-a", "web", corev1.RestartPolicyAlways, "main")
	b := mgrPod("uid-b", "web", corev1.RestartPolicyAlways, "main")
	c := mgrPod("uid-c", "other", corev1.RestartPolicyAlways, "main")
	e.m.Update([]*corev1.Pod{a})
	e.run(t)
	e.waitRunning(t, "uid-a", "main", 0)
	stopping, release := blockStops(e.rt)
	t.Cleanup(release)
	e.m.Update([]*corev1.Pod{b})
	select {
	case <-stopping:
	case <-time.After(waitTimeout):
		t.Fatal("A not being stopped")
	}
	e.m.Update([]*corev1.Pod{a, c}) // the manifest edit is undone
	e.waitRunning(t, "uid-c", "main", 0)
	release()
	waitFor(t, "A's first instance removed", func() bool { return len(e.rt.CallsFor("RemovePodFiles", "uid-a")) == 1 })
	return e
}

// A pending new instance the snapshot no longer wants (the edit was undone) must not start when
// the old instance ends.
func TestManagerRevertDropsStalePendingInstance(t *testing.T) {
	e := revertWhileTerminating(t)
	// Give the manager every chance to (wrongly) start B: wait until A's worker is gone.
	waitFor(t, "A's first worker done", func() bool {
		p := e.status("uid-a")
		return p == nil || p.DeletionTimestamp == nil
	})
	e.m.mu.Lock()
	pendingB := e.m.pending["default/web-node1"]
	_, workerB := e.m.workers["uid-b"]
	e.m.mu.Unlock()
	if pendingB != nil || workerB || len(e.rt.CallsFor("CreateSandbox", "uid-b")) > 0 {
		t.Fatalf("pod B (no longer in the snapshot) is pending=%v / has a worker=%v / sandboxes=%d",
			pendingB != nil, workerB, len(e.rt.CallsFor("CreateSandbox", "uid-b")))
	}
}

// A pod wanted again while its worker terminates starts again once the old worker is done (the
// watcher sends no new snapshot while the directory does not change).
func TestManagerRevertedPodRestartsAfterTermination(t *testing.T) {
	e := revertWhileTerminating(t)
	waitFor(t, "pod A started again", func() bool { return len(e.rt.CallsFor("CreateSandbox", "uid-a")) == 2 })
	if n := len(e.rt.CallsFor("CreateSandbox", "uid-b")); n != 0 {
		t.Fatalf("pod B (no longer wanted) got %d sandboxes", n)
	}
	e.waitRunning(t, "uid-a", "main", 0)
}

// wakeAll makes every worker sync now, as its resync timer would.
func wakeAll(m *Manager) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range m.workers {
		w.wake()
	}
}

// Image problems no pull can fix (InvalidImageName, ErrImageNeverPull) show the kubelet's reason
// and message and stay so between tries: never ErrImagePull / ImagePullBackOff.
func TestManagerImageErrorsAsTheKubelet(t *testing.T) {
	for _, ie := range []*ImageError{
		InvalidImageName("busybox:Not A Tag", errors.New("invalid reference format")),
		ImageNeverPull("example.com/absent:1"),
	} {
		t.Run(ie.Reason, func(t *testing.T) {
			e := newEnv(t, slowBackoff)
			pod := mgrPod("uid-i", "i", corev1.RestartPolicyAlways, "main")
			pod.Spec.Containers[0].Image = "img:1"
			e.rt.FailPull("img:1", fmt.Errorf("ensure image: %w", ie))
			e.m.Update([]*corev1.Pod{pod})
			e.run(t)
			shows := func() bool {
				cs, ok := e.containerStatus("uid-i", "main")
				return ok && cs.State.Waiting != nil && cs.State.Waiting.Reason == ie.Reason && cs.State.Waiting.Message == ie.Message
			}
			waitFor(t, ie.Reason, shows)
			e.m.Update([]*corev1.Pod{pod}) // a sync inside the retry delay
			time.Sleep(100 * time.Millisecond)
			if !shows() {
				cs, _ := e.containerStatus("uid-i", "main")
				t.Errorf("after a sync: %+v, want %s as is", cs.State.Waiting, ie.Reason)
			}
			found := false
			for _, ev := range e.rec.Events("uid-i") {
				found = found || (ev.Type == EventWarning && ev.Reason == ie.Event && ev.Message == ie.Message)
			}
			if !found {
				t.Errorf("no %s event: %+v", ie.Event, e.rec.Events("uid-i"))
			}
		})
	}
}

// A log asked for a container of the spec that has not run yet: the kubelet's words, from the
// container's waiting reason.
func TestNotStartedYet(t *testing.T) {
	pod := mgrPod("uid-a", "web", corev1.RestartPolicyAlways, "main")
	pod.Spec.InitContainers = []corev1.Container{{Name: "init"}}
	waiting := func(reason string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
	}
	for _, tc := range []struct {
		container string
		previous  bool
		status    []corev1.ContainerStatus
		init      []corev1.ContainerStatus
		want      string
	}{
		{"main", true, nil, nil, `previous terminated container "main" in pod "web-node1" not found`},
		{"main", false, nil, nil, `container "main" in pod "web-node1" is waiting to start - no logs yet`},
		{"main", false, []corev1.ContainerStatus{{Name: "main", State: waiting("ContainerCreating")}}, nil, `container "main" in pod "web-node1" is waiting to start: ContainerCreating`},
		{"main", false, []corev1.ContainerStatus{{Name: "main", State: waiting("PodInitializing")}}, nil, `container "main" in pod "web-node1" is waiting to start: PodInitializing`},
		{"main", false, []corev1.ContainerStatus{{Name: "main", State: waiting("ErrImagePull")}}, nil, `container "main" in pod "web-node1" is waiting to start: image can't be pulled`},
		{"main", false, []corev1.ContainerStatus{{Name: "main", State: waiting("ImagePullBackOff")}}, nil, `container "main" in pod "web-node1" is waiting to start: trying and failing to pull image`},
		{"init", false, nil, []corev1.ContainerStatus{{Name: "init", State: waiting("CreateContainerConfigError")}}, `container "init" in pod "web-node1" is waiting to start: CreateContainerConfigError`},
	} {
		p := pod.DeepCopy()
		p.Status.ContainerStatuses, p.Status.InitContainerStatuses = tc.status, tc.init
		err := notStartedYet(p, tc.container, tc.previous)
		if err.Error() != tc.want || !errors.Is(err, ErrNoLogsYet) {
			t.Errorf("%s (previous %v): %q, want %q and ErrNoLogsYet", tc.container, tc.previous, err, tc.want)
		}
	}
}
