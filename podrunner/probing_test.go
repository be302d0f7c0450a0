package podrunner

import (
	"context"
	"io"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func execProbe(cmd string, failureThreshold int32) *corev1.Probe {
	return &corev1.Probe{PeriodSeconds: 1, FailureThreshold: failureThreshold, ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{cmd}}}}
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func hasEvent(e *testEnv, uid, typ, reason, msg string) bool {
	for _, ev := range e.rec.Events("") {
		if string(ev.InvolvedObject.UID) == uid && ev.Type == typ && ev.Reason == reason && ev.Message == msg {
			return true
		}
	}
	return false
}

// Liveness failure kills the instance with the probe's grace and the restart policy restarts
// it (no backoff charged for the first restart), with the kubelet's events.
func TestLivenessFailureRestartsContainer(t *testing.T) {
	e := newEnv(t, DefaultBackoff)
	var healthy atomic.Bool
	healthy.Store(true)
	e.rt.SetExec(func(ctx context.Context, id string, req ExecRequest) (int, error) {
		if healthy.Load() {
			return 0, nil
		}
		_, _ = io.WriteString(req.Stdout, "boom")
		return 1, nil
	})
	pod := withGrace(mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main"), 30)
	grace := int64(2)
	lp := execProbe("check", 2)
	lp.TerminationGracePeriodSeconds = &grace
	pod.Spec.Containers[0].LivenessProbe = lp
	e.run(t)
	e.m.Update([]*corev1.Pod{pod})
	first := e.waitRunning(t, "uid-a", "main", 0)
	healthy.Store(false)
	e.waitRunning(t, "uid-a", "main", 1)
	var stop *fakeCall
	for _, c := range e.rt.CallsFor("StopContainer", "uid-a") {
		if c.ID == first.ID {
			stop = &c
		}
	}
	if stop == nil || stop.Grace != 2e9 {
		t.Fatalf("unhealthy container not stopped with the probe's grace: %+v", stop)
	}
	waitFor(t, "events", func() bool {
		return hasEvent(e, "uid-a", EventWarning, "Unhealthy", "Liveness probe failed: boom") &&
			hasEvent(e, "uid-a", EventNormal, ReasonKilling, "Container main failed liveness probe, will be restarted")
	})
}

// Readiness gates Ready (container, ContainersReady, Ready) without restarts; a startup probe
// keeps the container not started (and not ready) until it passes.
func TestReadinessAndStartupFeedStatus(t *testing.T) {
	e := newEnv(t, slowBackoff)
	var ready, started atomic.Bool
	e.rt.SetExec(func(ctx context.Context, id string, req ExecRequest) (int, error) {
		ok := ready.Load()
		if req.Cmd[0] == "startup" {
			ok = started.Load()
		}
		if ok {
			return 0, nil
		}
		return 1, nil
	})
	pod := mgrPod("uid-r", "r", corev1.RestartPolicyAlways, "main")
	pod.Spec.Containers[0].ReadinessProbe = execProbe("ready", 1)
	pod.Spec.Containers[0].StartupProbe = execProbe("startup", 100)
	ready.Store(true)
	e.run(t)
	e.m.Update([]*corev1.Pod{pod})
	e.waitRunning(t, "uid-r", "main", 0)
	check := func(what string, wantStarted, wantReady bool) {
		t.Helper()
		waitFor(t, what, func() bool {
			cs, ok := e.containerStatus("uid-r", "main")
			p := e.status("uid-r")
			want := corev1.ConditionFalse
			if wantReady {
				want = corev1.ConditionTrue
			}
			return ok && cs.State.Running != nil && cs.Started != nil && *cs.Started == wantStarted && cs.Ready == wantReady &&
				podCondition(p, corev1.PodReady) == want && podCondition(p, corev1.ContainersReady) == want
		})
	}
	check("running, not started, not ready", false, false)
	started.Store(true)
	check("started and ready", true, true)
	ready.Store(false)
	check("not ready", true, false)
	ready.Store(true)
	check("ready again", true, true)
	if n := len(e.starts("uid-r", "main")); n != 1 {
		t.Fatalf("readiness changes restarted the container: %d starts", n)
	}
}
