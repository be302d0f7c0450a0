package runtime

import (
	"testing"
	"time"
)

func TestLostExit(t *testing.T) {
	now := time.Date(2026, 12, 7, 18, 0, 0, 0, time.UTC)
	at := now.Add(-time.Second)
	for _, tc := range []struct {
		name          string
		ex            seenExit
		seen, started bool
		created       time.Time
		code          int32
		at            time.Time
		reason        string
		ok            bool
	}{
		{"the event's exit (the shim's clean-up: SIGKILL)", seenExit{137, at}, true, true, time.Time{}, 137, at, "Error", true},
		{"an event seen for a task another agent started", seenExit{0, at}, true, false, time.Time{}, 0, at, "Completed", true},
		{"an event without a time", seenExit{137, time.Time{}}, true, false, at, 137, now, "Error", true},
		{"our task, its event missed: as the CRI, 255 Unknown", seenExit{}, false, true, at, 255, now, "Unknown", true},
		{"neither: a task never made (an interrupted create)", seenExit{}, false, false, time.Time{}, 0, time.Time{}, "", false},
		{"marked as started, the agent down when it went (a dead shim, a reboot)", seenExit{}, false, true, at, 255, now, "Unknown", true},
		{"an event from before the container's creation: an earlier container of its ID", seenExit{137, at}, true, false, now, 0, time.Time{}, "", false},
		{"the same, but the task is ours: its event was missed", seenExit{137, at}, true, true, now, 255, now, "Unknown", true},
		{"an event after the creation", seenExit{1, at}, true, false, at.Add(-time.Second), 1, at, "Error", true},
	} {
		code, gotAt, reason, ok := lostExit(tc.ex, tc.seen, tc.started, tc.created, now)
		if code != tc.code || !gotAt.Equal(tc.at) || reason != tc.reason || ok != tc.ok {
			t.Errorf("%s: lostExit = %d %v %q %v, want %d %v %q %v", tc.name, code, gotAt, reason, ok, tc.code, tc.at, tc.reason, tc.ok)
		}
	}
}
