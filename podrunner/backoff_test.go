package podrunner

import (
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
