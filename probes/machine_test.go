package probes

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// simulate drives a Machine with a fake clock: each due run gets the raw result script(at)
// (the run takes no time). It returns the times the result changed and to what, until `until`.
// gate says whether the startup probe has passed at a time (nil: always).
func simulate(m *Machine, until time.Time, script func(at time.Time) Result, gate func(at time.Time) bool) (changes []change, runs int) {
	for !m.Done() && !m.Due().After(until) {
		at := m.Due()
		if gate != nil && !gate(at) {
			m.Skip(at)
			continue
		}
		runs++
		if r, changed := m.Record(at, script(at)); changed {
			changes = append(changes, change{at.Sub(t0), r})
		}
	}
	return changes, runs
}

type change struct {
	At     time.Duration
	Result Result
}

func TestSpecOfDefaults(t *testing.T) {
	got := SpecOf(Liveness, &corev1.Probe{SuccessThreshold: 5})
	want := Spec{Period: 10 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}
	if got != want {
		t.Fatalf("SpecOf(defaults) = %+v, want %+v", got, want)
	}
	got = SpecOf(Readiness, &corev1.Probe{InitialDelaySeconds: 2, PeriodSeconds: 1, TimeoutSeconds: 3, SuccessThreshold: 2, FailureThreshold: 4})
	want = Spec{InitialDelay: 2 * time.Second, Period: time.Second, Timeout: 3 * time.Second, SuccessThreshold: 2, FailureThreshold: 4}
	if got != want {
		t.Fatalf("SpecOf = %+v, want %+v", got, want)
	}
}

func TestMachineThresholds(t *testing.T) {
	sec := func(n int) time.Duration { return time.Duration(n) * time.Second }
	failFrom := func(d time.Duration) func(time.Time) Result {
		return func(at time.Time) Result {
			if at.Sub(t0) >= d {
				return Failure
			}
			return Success
		}
	}
	cases := []struct {
		name    string
		kind    Kind
		spec    Spec
		made    time.Duration // when the machine is made, after t0 (the container's start)
		lag     time.Duration
		until   time.Duration
		script  func(time.Time) Result
		gate    func(time.Time) bool
		want    []change
		wantRun int
		done    bool
	}{{
		name: "readiness is false until its first success, then true at once",
		kind: Readiness, spec: Spec{Period: sec(10), SuccessThreshold: 1, FailureThreshold: 3},
		until: sec(25), script: failFrom(sec(1000)),
		want: []change{{0, Success}}, wantRun: 3,
	}, {
		name: "initial delay moves the first run; a readiness probe ignores the lag",
		kind: Readiness, spec: Spec{InitialDelay: sec(5), Period: sec(10), SuccessThreshold: 1, FailureThreshold: 3},
		lag: 300 * time.Millisecond, until: sec(30), script: failFrom(sec(1000)),
		want: []change{{sec(5), Success}}, wantRun: 3,
	}, {
		name: "a liveness probe's first run waits its lag after the initial delay",
		kind: Liveness, spec: Spec{InitialDelay: sec(5), Period: sec(10), SuccessThreshold: 1, FailureThreshold: 1},
		lag: 300 * time.Millisecond, until: sec(30), script: failFrom(0),
		want: []change{{sec(5) + 300*time.Millisecond, Failure}}, wantRun: 1, done: true,
	}, {
		name: "a liveness probe with no initial delay waits its lag from when it is made",
		kind: Liveness, spec: Spec{Period: sec(1), SuccessThreshold: 1, FailureThreshold: 1},
		made: 200 * time.Millisecond, lag: 700 * time.Millisecond, until: sec(10), script: failFrom(0),
		want: []change{{900 * time.Millisecond, Failure}}, wantRun: 1, done: true,
	}, {
		name: "a container adopted after its initial delay is probed when the machine is made",
		kind: Readiness, spec: Spec{InitialDelay: sec(5), Period: sec(10), SuccessThreshold: 1, FailureThreshold: 3},
		made: sec(3600), until: sec(3600), script: failFrom(sec(100000)),
		want: []change{{sec(3600), Success}}, wantRun: 1,
	}, {
		name: "a container seen before its initial delay ran out is probed when it does",
		kind: Startup, spec: Spec{InitialDelay: sec(5), Period: sec(10), SuccessThreshold: 1, FailureThreshold: 3},
		made: sec(2), lag: sec(1), until: sec(6), script: failFrom(sec(100000)),
		want: []change{{sec(5), Success}}, wantRun: 1, done: true,
	}, {
		name: "readiness needs successThreshold successes in a row",
		kind: Readiness, spec: Spec{Period: sec(1), SuccessThreshold: 3, FailureThreshold: 1},
		until: sec(10), script: func(at time.Time) Result {
			if at.Sub(t0) == sec(1) {
				return Failure
			}
			return Success
		},
		want: []change{{sec(4), Success}}, wantRun: 11,
	}, {
		name: "readiness goes false after failureThreshold failures and back on success, never done",
		kind: Readiness, spec: Spec{Period: sec(1), SuccessThreshold: 1, FailureThreshold: 3},
		until: sec(12), script: func(at time.Time) Result {
			if d := at.Sub(t0); d >= sec(3) && d < sec(9) {
				return Failure
			}
			return Success
		},
		want: []change{{0, Success}, {sec(5), Failure}, {sec(9), Success}}, wantRun: 13,
	}, {
		name: "liveness starts as success; fails after failureThreshold periods, then stops",
		kind: Liveness, spec: Spec{Period: sec(1), SuccessThreshold: 1, FailureThreshold: 3},
		until: sec(60), script: failFrom(sec(4)),
		want: []change{{sec(6), Failure}}, wantRun: 7, done: true,
	}, {
		name: "failures that are not consecutive never fail liveness",
		kind: Liveness, spec: Spec{Period: sec(1), SuccessThreshold: 1, FailureThreshold: 2},
		until: sec(9), script: func(at time.Time) Result {
			if int(at.Sub(t0)/time.Second)%2 == 0 {
				return Failure
			}
			return Success
		},
		want: nil, wantRun: 10,
	}, {
		name: "startup probe: unknown until success, then done",
		kind: Startup, spec: Spec{Period: sec(1), SuccessThreshold: 1, FailureThreshold: 30},
		until: sec(60), script: func(at time.Time) Result {
			if at.Sub(t0) >= sec(7) {
				return Success
			}
			return Failure
		},
		want: []change{{sec(7), Success}}, wantRun: 8, done: true,
	}, {
		name: "startup probe fails after failureThreshold x period",
		kind: Startup, spec: Spec{Period: sec(2), SuccessThreshold: 1, FailureThreshold: 5},
		until: sec(60), script: failFrom(0),
		want: []change{{sec(8), Failure}}, wantRun: 5, done: true,
	}, {
		name: "liveness gated by the startup probe does not run before it passed",
		kind: Liveness, spec: Spec{Period: sec(1), SuccessThreshold: 1, FailureThreshold: 1},
		until: sec(10), script: failFrom(0),
		gate: func(at time.Time) bool { return at.Sub(t0) >= sec(5) },
		want: []change{{sec(5), Failure}}, wantRun: 1, done: true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(tc.kind, tc.spec, t0, t0.Add(tc.made), tc.lag)
			if m.Result() != InitialResult(tc.kind) {
				t.Fatalf("initial result %v", m.Result())
			}
			got, runs := simulate(m, t0.Add(tc.until), tc.script, tc.gate)
			if len(got) != len(tc.want) {
				t.Fatalf("changes = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("changes = %v, want %v", got, tc.want)
				}
			}
			if runs != tc.wantRun {
				t.Fatalf("runs = %d, want %d", runs, tc.wantRun)
			}
			if m.Done() != tc.done {
				t.Fatalf("done = %v, want %v", m.Done(), tc.done)
			}
		})
	}
}

func TestMachineSlowRunDoesNotCatchUp(t *testing.T) {
	m := NewMachine(Readiness, Spec{Period: time.Second, SuccessThreshold: 1, FailureThreshold: 3}, t0, t0, 0)
	// A run due at 0 finishing at 3.5 s (a long timeout): the next is due at 4 s, not at 1 s.
	m.Record(t0.Add(3500*time.Millisecond), Success)
	if got := m.Due().Sub(t0); got != 4*time.Second {
		t.Fatalf("next due %v after a slow run, want 4s", got)
	}
	// Unknown (container gone) counts as a skip: no change, schedule moves on.
	if _, changed := m.Record(t0.Add(4*time.Second), Unknown); changed || m.Due().Sub(t0) != 5*time.Second {
		t.Fatalf("unknown changed the result or schedule: due %v", m.Due().Sub(t0))
	}
}

func TestGracePeriod(t *testing.T) {
	g := int64(3)
	if got := GracePeriod(&corev1.Probe{TerminationGracePeriodSeconds: &g}, 30*time.Second); got != 3*time.Second {
		t.Fatalf("probe grace = %v", got)
	}
	if got := GracePeriod(&corev1.Probe{}, 30*time.Second); got != 30*time.Second {
		t.Fatalf("pod grace = %v", got)
	}
}

func TestMachineRunNow(t *testing.T) {
	m := NewMachine(Readiness, Spec{Period: 10 * time.Second, SuccessThreshold: 1, FailureThreshold: 3}, t0, t0, 0)
	m.Skip(t0) // gated: next due at 10 s
	m.RunNow(t0.Add(3 * time.Second))
	if got := m.Due().Sub(t0); got != 3*time.Second {
		t.Fatalf("due %v after RunNow at 3s", got)
	}
	if r, changed := m.Record(t0.Add(3*time.Second), Success); r != Success || !changed || m.Due().Sub(t0) != 13*time.Second {
		t.Fatalf("record after RunNow: %v %v due %v", r, changed, m.Due().Sub(t0))
	}
	m.RunNow(t0.Add(20 * time.Second)) // already due earlier: unchanged
	if got := m.Due().Sub(t0); got != 13*time.Second {
		t.Fatalf("RunNow moved a due time later: %v", got)
	}

	// A liveness probe gated by a startup probe runs its lag after the startup probe passed.
	l := NewMachine(Liveness, Spec{Period: 10 * time.Second, SuccessThreshold: 1, FailureThreshold: 3}, t0, t0, 400*time.Millisecond)
	l.Skip(t0.Add(400 * time.Millisecond)) // gated: next due at 10.4 s
	l.RunNow(t0.Add(3 * time.Second))
	if got := l.Due().Sub(t0); got != 3400*time.Millisecond {
		t.Fatalf("liveness due %v after RunNow at 3s with a 400ms lag, want 3.4s", got)
	}
}
