package probes

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestManagerStartupGatesAndResults(t *testing.T) {
	var mu sync.Mutex
	runs := map[string]int{}
	var early []string // liveness/readiness runs before the startup probe had passed
	ex := fakeExec(func(ctx context.Context, id string, cmd []string, out io.Writer) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		runs[cmd[0]]++
		if cmd[0] != "startup" && runs["startup"] < 2 {
			early = append(early, cmd[0])
		}
		switch cmd[0] {
		case "startup": // passes on its second run
			if runs["startup"] >= 2 {
				return 0, nil
			}
			_, _ = io.WriteString(out, "not yet")
			return 1, nil
		case "live":
			_, _ = io.WriteString(out, "dead")
			return 1, nil
		}
		return 0, nil
	})
	var evMu sync.Mutex
	var events []Event
	m := NewManager(Config{Exec: ex, LivenessLag: func(time.Duration) time.Duration { return 0 }, Events: func(e Event) {
		evMu.Lock()
		events = append(events, e)
		evMu.Unlock()
	}})
	probe := func(cmd string, fail int32) *corev1.Probe {
		return &corev1.Probe{PeriodSeconds: 1, FailureThreshold: fail, ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{cmd}}}}
	}
	ready := probe("ready", 1)
	ready.PeriodSeconds = 3600 // it runs at once when the startup probe passes, not an hour later
	c := &corev1.Container{Name: "app", StartupProbe: probe("startup", 10), LivenessProbe: probe("live", 1), ReadinessProbe: ready}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if started, ready := m.Status("c1", c); started || ready {
		t.Fatalf("before Start: started %v ready %v", started, ready)
	}
	m.Start(ctx, "pod1", c, Target{ContainerID: "c1"}, time.Now())
	m.Start(ctx, "pod1", c, Target{ContainerID: "c1"}, time.Now()) // idempotent

	var got []Update
	deadline := time.After(20 * time.Second)
	for len(got) < 3 {
		select {
		case u := <-m.Updates():
			got = append(got, u)
		case <-deadline:
			t.Fatalf("updates so far: %+v", got)
		}
	}
	want := map[Kind]Result{Startup: Success, Readiness: Success, Liveness: Failure}
	for _, u := range got {
		if want[u.Kind] != u.Result || u.ContainerID != "c1" || u.PodUID != "pod1" || u.Container != "app" {
			t.Fatalf("unexpected update %+v (all: %+v)", u, got)
		}
		delete(want, u.Kind)
	}
	mu.Lock()
	if len(early) > 0 {
		t.Errorf("liveness/readiness ran before the startup probe passed: %v (runs %v)", early, runs)
	}
	mu.Unlock()
	if got[0].Kind != Startup {
		t.Fatalf("first update %+v, want the startup probe's", got[0])
	}
	if k, failed := m.Failed("c1"); !failed || k != Liveness {
		t.Fatalf("Failed = %v %v", k, failed)
	}
	if started, ready := m.Status("c1", c); !started || !ready {
		t.Fatalf("Status = started %v ready %v", started, ready)
	}
	evMu.Lock()
	var sawStartup, sawLive bool
	for _, e := range events {
		sawStartup = sawStartup || (e.Kind == Startup && e.Reason == ReasonUnhealthy && e.Message == "Startup probe failed: not yet")
		sawLive = sawLive || (e.Kind == Liveness && e.Message == "Liveness probe failed: dead")
	}
	evMu.Unlock()
	if !sawStartup || !sawLive {
		t.Fatalf("events %+v", events)
	}
	m.StopPod("pod1", nil)
	if _, failed := m.Failed("c1"); failed {
		t.Fatal("results kept after StopPod")
	}
	// No more updates once stopped (only results changing would send any).
	select {
	case u := <-m.Updates():
		t.Fatalf("update after stop: %+v", u)
	case <-time.After(1500 * time.Millisecond):
	}
}
