package runtime

import (
	"context"
	"time"
)

// A container's task can vanish from containerd without its exit being recorded: when the pod's
// runc shim dies (kill -9, the OOM killer), containerd ends the shim's processes (runc delete
// --force), publishes a /tasks/exit for each of its tasks (exit status 137 from the shim's
// clean-up) and deletes the tasks. Read from containerd alone, such a container then looks like
// one whose task was never created, which the worker would create again as the same instance:
// the run lost from the restart count and lastState, and a restartPolicy Never container run a
// second time. The runtime remembers the exits the event stream reported until they are
// recorded, which tasks it started or re-attached (running), and marks every container whose
// task started (a file beside its termination message file, ranmark.go), so that a container of any of these kinds with no task
// reads as exited: with the event's status, else (the event missed, or the agent down when the
// task went: a dead shim, a reboot) as containerd's CRI records a task it lost, exit code 255,
// reason Unknown.

// seenExit is an exit a /tasks/exit event reported.
type seenExit struct {
	code uint32
	at   time.Time
}

// maxSeenExits bounds the exits remembered; each is forgotten once recorded or its container
// removed, so in practice only those in flight are held.
const maxSeenExits = 4096

// Unknown exit, as containerd's CRI records a container whose task it lost.
const (
	lostExitCode   = 255
	lostExitReason = "Unknown"
)

// noteExit remembers the exit an event reported for container id until it is recorded.
func (r *Runtime) noteExit(id string, code uint32, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.exitsSeen == nil {
		r.exitsSeen = map[string]seenExit{}
	}
	if _, ok := r.exitsSeen[id]; ok || len(r.exitsSeen) < maxSeenExits {
		r.exitsSeen[id] = seenExit{code: code, at: at}
	}
}

// forgetExit drops what noteExit remembered of container id (its exit is recorded, or it is gone).
func (r *Runtime) forgetExit(id string) {
	r.mu.Lock()
	delete(r.exitsSeen, id)
	r.mu.Unlock()
}

// lostTaskExit is the exit to record for container id (created at createdAt; ran: it carries
// its started mark), which has no task in containerd and no recorded exit, and whether it ran at
// all (ok false: a container whose task was never made, as after a create interrupted by a kill
// -9 of the agent, or, for an agent killed in the instant between a task's start and its mark,
// that task's).
func (r *Runtime) lostTaskExit(id string, createdAt time.Time, ran bool, now time.Time) (code int32, at time.Time, reason string, ok bool) {
	r.mu.Lock()
	ex, seen := r.exitsSeen[id]
	_, ours := r.running[id]
	r.mu.Unlock()
	return lostExit(ex, seen, ours || ran, createdAt, now)
}

// lostExitEventWait is how long recordExit waits for the exit event of a task of its own that
// is gone: containerd may delete the tasks of a dead shim before their events reach podkeeper.
const lostExitEventWait = 2 * time.Second

// awaitExitEvent waits, at most lostExitEventWait or until ctx ends, for the exit event of
// container id (created at createdAt) to be seen.
func (r *Runtime) awaitExitEvent(ctx context.Context, id string, createdAt time.Time) {
	deadline := time.Now().Add(lostExitEventWait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if _, _, reason, _ := r.lostTaskExit(id, createdAt, true, time.Now()); reason != lostExitReason {
			return // an event of this container's came
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lostExit decides lostTaskExit: the event's exit when one was seen since the container's
// creation, else the unknown exit when its task is known to have started (this runtime's, or
// marked), else none. An exit from before the creation is of an earlier container of the same
// ID (a create retried as the same instance), whose event came after that container's removal.
func lostExit(ex seenExit, seen, started bool, createdAt, now time.Time) (code int32, at time.Time, reason string, ok bool) {
	if seen && !createdAt.IsZero() && !ex.at.IsZero() && ex.at.Before(createdAt) {
		seen = false
	}
	switch {
	case seen:
		at = ex.at
		if at.IsZero() || at.Year() < 2000 {
			at = now
		}
		return int32(ex.code), at, exitReason(int32(ex.code)), true
	case started:
		return lostExitCode, now, lostExitReason, true
	default:
		return 0, time.Time{}, "", false
	}
}
