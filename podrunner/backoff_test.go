package podrunner

import (
	"reflect"
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	p := DefaultBackoff
	want := []time.Duration{
		0,
		10 * time.Second,
		20 * time.Second,
		40 * time.Second,
		80 * time.Second,
		160 * time.Second,
		300 * time.Second, // 320s capped
		300 * time.Second,
		300 * time.Second,
	}
	for n, w := range want {
		if got := p.Delay(n); got != w {
			t.Errorf("Delay(%d) = %s, want %s", n, got, w)
		}
	}
	if got := p.Delay(-1); got != 0 {
		t.Errorf("Delay(-1) = %s, want 0", got)
	}
	if got := p.Delay(1000); got != 300*time.Second {
		t.Errorf("Delay(1000) = %s, want the cap 300s (no overflow)", got)
	}
	small := BackoffPolicy{Initial: 200 * time.Millisecond, Max: time.Second, ResetAfter: time.Minute}
	for n, w := range []time.Duration{0, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second} {
		if got := small.Delay(n); got != w {
			t.Errorf("small.Delay(%d) = %s, want %s", n, got, w)
		}
	}
}

func TestBackoffNext(t *testing.T) {
	p := DefaultBackoff
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		st        BackoffState
		started   time.Time
		finished  time.Time
		wantDelay time.Duration
		wantState BackoffState
	}{
		{"first crash restarts at once", BackoffState{}, t0, t0.Add(time.Second), 0, BackoffState{Restarts: 1}},
		{"second crash waits Initial", BackoffState{Restarts: 1}, t0, t0.Add(time.Second), 10 * time.Second, BackoffState{Restarts: 2}},
		{"third crash doubles", BackoffState{Restarts: 2}, t0, t0.Add(time.Second), 20 * time.Second, BackoffState{Restarts: 3}},
		{"capped", BackoffState{Restarts: 20}, t0, t0.Add(time.Second), 300 * time.Second, BackoffState{Restarts: 21}},
		{"ran 10 minutes: reset", BackoffState{Restarts: 5}, t0, t0.Add(10 * time.Minute), 0, BackoffState{Restarts: 1}},
		{"ran longer than 10 minutes: reset", BackoffState{Restarts: 5}, t0, t0.Add(time.Hour), 0, BackoffState{Restarts: 1}},
		{"ran just under 10 minutes: no reset", BackoffState{Restarts: 2}, t0, t0.Add(10*time.Minute - time.Second), 20 * time.Second, BackoffState{Restarts: 3}},
		{"unknown start: no reset", BackoffState{Restarts: 2}, time.Time{}, t0, 20 * time.Second, BackoffState{Restarts: 3}},
		{"unknown finish: no reset", BackoffState{Restarts: 2}, t0, time.Time{}, 20 * time.Second, BackoffState{Restarts: 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, st := p.Next(tc.st, tc.started, tc.finished)
			if d != tc.wantDelay || st != tc.wantState {
				t.Errorf("Next(%+v) = %s, %+v; want %s, %+v", tc.st, d, st, tc.wantDelay, tc.wantState)
			}
		})
	}
}

func TestBackoffNextSequence(t *testing.T) {
	p := DefaultBackoff
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	var st BackoffState
	var got []time.Duration
	for i := 0; i < 8; i++ {
		var d time.Duration
		d, st = p.Next(st, t0, t0.Add(time.Second))
		got = append(got, d)
	}
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delays = %v, want %v", got, want)
		}
	}
	if st.Restarts != 8 {
		t.Fatalf("state after 8 exits = %+v, want Restarts 8", st)
	}
}

// Probe kills are paced as the kubelet paces them (its restart is checked in the same sync as the
// kill, against the exit before). Each run lasts 6 s until its liveness probe kills it; lag is
// how late a restart after a wait comes. With the kubelet's lag in the conformance scenario
// liveness-ignores-term (about 4 s: its restarts came at +7, +12, +32, +38 s), the sequence is
// the one measured against the real kubelet 1.37: at once, at once, after 10 s, at once, after
// 40 s.
func TestProbeKillDelayAsTheKubelet(t *testing.T) {
	p := DefaultBackoff
	base := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		lag  time.Duration
		want []time.Duration
	}{
		{0, []time.Duration{0, 0, 10 * time.Second, 20 * time.Second, 40 * time.Second}},
		{4 * time.Second, []time.Duration{0, 0, 10 * time.Second, 0, 40 * time.Second}},
	} {
		var st BackoffState
		var prev *ContainerRecord
		start := base
		var got []time.Duration
		for i := 0; i < 5; i++ {
			end := start.Add(6 * time.Second)
			delay, next := ProbeKillDelay(p, st, start, end, prev)
			got = append(got, delay)
			st, prev = next, &ContainerRecord{FinishedAt: end}
			start = end.Add(delay)
			if delay > 0 {
				start = start.Add(tc.lag)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("lag %v: delays %v, want %v", tc.lag, got, tc.want)
		}
	}
	// A run longer than ResetAfter starts the count again, as for a crash.
	if d, next := ProbeKillDelay(p, BackoffState{Restarts: 5}, base, base.Add(700*time.Second), &ContainerRecord{FinishedAt: base.Add(-5 * time.Second)}); d != 0 || next.Restarts != 1 {
		t.Errorf("after a long run: delay %v, restarts %d; want 0 and 1", d, next.Restarts)
	}
}
