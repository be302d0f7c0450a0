package podrunner

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestPastActiveDeadline(t *testing.T) {
	secs := func(n int64) *int64 { return &n }
	start := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		deadline *int64
		start    time.Time
		now      time.Time
		past     bool
		wake     time.Time
	}{
		{"no deadline", nil, start, start.Add(time.Hour), false, time.Time{}},
		{"not started", secs(10), time.Time{}, start, false, time.Time{}},
		{"before: wake at the deadline", secs(10), start, start.Add(4 * time.Second), false, start.Add(10 * time.Second)},
		{"at the deadline", secs(10), start, start.Add(10 * time.Second), true, time.Time{}},
		{"after", secs(10), start, start.Add(time.Minute), true, time.Time{}},
	}
	for _, tc := range cases {
		pod := &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: tc.deadline}}
		past, wake := PastActiveDeadline(pod, tc.start, tc.now)
		if past != tc.past || !wake.Equal(tc.wake) {
			t.Errorf("%s: got %v %v, want %v %v", tc.name, past, wake, tc.past, tc.wake)
		}
	}
}

func withDeadline(p *corev1.Pod, sec int64) *corev1.Pod {
	p.Spec.ActiveDeadlineSeconds = &sec
	return p
}

// A pod past its activeDeadlineSeconds is Failed/DeadlineExceeded, its container stopped and
// not restarted (restartPolicy Always notwithstanding), with the kubelet's event.
func TestManagerActiveDeadline(t *testing.T) {
	e := newEnv(t, slowBackoff)
	pod := withDeadline(withGrace(mgrPod("uid-d", "d", corev1.RestartPolicyAlways, "main"), 0), 1)
	e.m.Update([]*corev1.Pod{pod})
	e.run(t)
	waitFor(t, "the pod failed for its deadline", func() bool {
		p := e.status("uid-d")
		return p != nil && p.Status.Phase == corev1.PodFailed && p.Status.Reason == ReasonDeadlineExceeded
	})
	waitFor(t, "its container stopped", func() bool {
		cs, ok := e.containerStatus("uid-d", "main")
		return ok && cs.State.Terminated != nil
	})
	p := e.status("uid-d")
	if p.Status.Message != MessageDeadline {
		t.Errorf("message %q", p.Status.Message)
	}
	found := false
	for _, ev := range e.rec.Events("uid-d") {
		found = found || (ev.Reason == ReasonDeadlineExceeded && ev.Type == EventNormal && strings.Contains(ev.Message, "longer than the specified deadline"))
	}
	if !found {
		t.Errorf("no DeadlineExceeded event: %+v", e.rec.Events("uid-d"))
	}
	starts := len(e.rt.CallsFor("StartContainer", "uid-d"))
	time.Sleep(300 * time.Millisecond)
	e.m.Update([]*corev1.Pod{pod}) // a re-list of the same manifest does not start it again
	time.Sleep(300 * time.Millisecond)
	if n := len(e.rt.CallsFor("StartContainer", "uid-d")); n != starts {
		t.Errorf("container started again after the deadline: %d starts, was %d", n, starts)
	}
}

// A pod that finished before its deadline keeps its own end: Succeeded stays Succeeded when the
// deadline passes (the kubelet never moves a pod out of a terminal phase; found by the
// conformance scenario deadline-done, where podkeeper turned it into Failed/DeadlineExceeded).
func TestManagerActiveDeadlineAfterTheEnd(t *testing.T) {
	e := newEnv(t, slowBackoff)
	pod := withDeadline(withGrace(mgrPod("uid-s", "s", corev1.RestartPolicyNever, "main"), 0), 1)
	e.m.Update([]*corev1.Pod{pod})
	e.run(t)
	first := e.waitRunning(t, "uid-s", "main", 0)
	e.rt.Exit(t, first.ID, 0)
	waitFor(t, "Succeeded", func() bool {
		p := e.status("uid-s")
		return p != nil && p.Status.Phase == corev1.PodSucceeded
	})
	time.Sleep(1500 * time.Millisecond) // past the deadline, counted from the start
	wakeAll(e.m)
	time.Sleep(300 * time.Millisecond)
	if p := e.status("uid-s"); p.Status.Phase != corev1.PodSucceeded || p.Status.Reason != "" {
		t.Errorf("after the deadline: phase %s, reason %q; want Succeeded, no reason", p.Status.Phase, p.Status.Reason)
	}
	for _, ev := range e.rec.Events("uid-s") {
		if ev.Reason == ReasonDeadlineExceeded {
			t.Errorf("DeadlineExceeded event for a pod that had ended: %+v", ev)
		}
	}
}

// A pod found running (an agent restart) counts its deadline from its sandbox's creation, not
// from the agent's start: one past it is stopped at once.
func TestManagerActiveDeadlineAdopted(t *testing.T) {
	e := newEnv(t, slowBackoff)
	pod := withDeadline(withGrace(mgrPod("uid-o", "o", corev1.RestartPolicyAlways, "main"), 0), 30)
	started := time.Now().Add(-time.Minute)
	e.rt.Seed(ContainerRecord{ID: "sb", PodUID: "uid-o", PodName: pod.Name, PodNamespace: "default",
		Kind: KindSandbox, State: StateRunning, TaskPresent: true, CreatedAt: started, StartedAt: started})
	e.rt.Seed(ContainerRecord{ID: "main-0", PodUID: "uid-o", PodName: pod.Name, PodNamespace: "default",
		Name: "main", Kind: KindApp, State: StateRunning, TaskPresent: true, CreatedAt: started, StartedAt: started})
	e.m.Update([]*corev1.Pod{pod})
	e.run(t)
	waitFor(t, "the adopted pod failed for its deadline", func() bool {
		p := e.status("uid-o")
		return p != nil && p.Status.Phase == corev1.PodFailed && p.Status.Reason == ReasonDeadlineExceeded
	})
	p := e.status("uid-o")
	if p.Status.StartTime == nil || !p.Status.StartTime.Time.Equal(started) {
		t.Errorf("startTime %v, want the sandbox's creation %v", p.Status.StartTime, started)
	}
	if n := len(e.rt.CallsFor("StartContainer", "uid-o")); n != 0 {
		t.Errorf("%d starts of a pod past its deadline", n)
	}
}
