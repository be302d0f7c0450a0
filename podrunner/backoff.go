package podrunner

import "time"

// BackoffPolicy is the kubelet's CrashLoopBackOff: the first restart happens at once, the next
// after Initial, doubling each time up to Max; a container that ran for ResetAfter before it
// exited starts again from the beginning.
type BackoffPolicy struct {
	Initial    time.Duration
	Max        time.Duration
	ResetAfter time.Duration
}

// DefaultBackoff is the kubelet's: 10 s doubling to 300 s, reset after 10 minutes of running.
var DefaultBackoff = BackoffPolicy{Initial: 10 * time.Second, Max: 300 * time.Second, ResetAfter: 10 * time.Minute}

// VolumeBackoff spaces the tries to set up a volume that failed (VolumeError): the kubelet's
// volume operations' backoff, 500 ms doubling to 2 m 2 s.
var VolumeBackoff = BackoffPolicy{Initial: 500 * time.Millisecond, Max: 2*time.Minute + 2*time.Second}

// BackoffState counts the restarts charged to one container since the last reset.
type BackoffState struct {
	Restarts int
}

// Next decides, for a container instance that ran from startedAt to finishedAt, how long after
// its exit it may be restarted, and returns the state to keep for the next exit. Pure.
func (p BackoffPolicy) Next(st BackoffState, startedAt, finishedAt time.Time) (time.Duration, BackoffState) {
	if !startedAt.IsZero() && !finishedAt.IsZero() && finishedAt.Sub(startedAt) >= p.ResetAfter {
		st = BackoffState{}
	}
	delay := p.Delay(st.Restarts)
	return delay, BackoffState{Restarts: st.Restarts + 1}
}

// Delay is the wait before restart number n+1 (n restarts already charged): 0, Initial,
// 2*Initial, ... capped at Max.
func (p BackoffPolicy) Delay(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	d := p.Initial
	for i := 1; i < n; i++ {
		d *= 2
		if d >= p.Max {
			return p.Max
		}
	}
	if d > p.Max {
		return p.Max
	}
	return d
}

// ProbeKillDelay is Next for an instance stopped because its liveness or startup probe failed,
// as the kubelet paces those restarts: it kills the container and starts the next one in the
// same sync, and checks the back-off there against the exit before the killed one (prev; nil:
// none), which its status still shows. So the first such restart is immediate and charges
// nothing; a later one is immediate (and charged) when prev ended at least the current back-off
// before this exit, and otherwise waits the back-off from this exit, as a crash would. Pure.
func ProbeKillDelay(p BackoffPolicy, st BackoffState, startedAt, finishedAt time.Time, prev *ContainerRecord) (time.Duration, BackoffState) {
	delay, next := p.Next(st, startedAt, finishedAt)
	if prev == nil {
		return 0, st
	}
	if finishedAt.Sub(prev.FinishedAt) >= delay {
		return 0, next
	}
	return delay, next
}
