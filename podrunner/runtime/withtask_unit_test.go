package runtime

import (
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"

	"github.com/podkeeper/podkeeper/podrunner"
)

// A record's state comes from its task; an exit already recorded in its labels wins over the
// stopped task's status (which cannot tell OOMKilled from any other SIGKILL).
func TestWithTask(t *testing.T) {
	exited := time.Date(2026, 12, 3, 21, 0, 0, 0, time.UTC)
	recorded := time.Date(2026, 12, 3, 20, 59, 59, 0, time.UTC)
	labelsOOM := map[string]string{
		LabelFinishedAt: formatTime(recorded),
		LabelExitCode:   "137",
		LabelReason:     "OOMKilled",
	}
	cases := []struct {
		name    string
		labels  map[string]string
		task    *taskInfo
		state   podrunner.ContainerState
		code    int32
		reason  string
		fin     time.Time
		hasTask bool
	}{
		{"no task, nothing recorded: created", nil, nil, podrunner.StateCreated, 0, "", time.Time{}, false},
		{"no task, exit recorded", labelsOOM, nil, podrunner.StateExited, 137, "OOMKilled", recorded, false},
		{"running", nil, &taskInfo{pid: 42, status: containerd.Running}, podrunner.StateRunning, 0, "", time.Time{}, true},
		{"paused counts as running", nil, &taskInfo{pid: 42, status: containerd.Paused}, podrunner.StateRunning, 0, "", time.Time{}, true},
		{"created task", nil, &taskInfo{pid: 42, status: containerd.Created}, podrunner.StateCreated, 0, "", time.Time{}, true},
		{"stopped, not recorded: from the task, code 0", nil, &taskInfo{status: containerd.Stopped, exitStatus: 0, exitedAt: exited}, podrunner.StateExited, 0, "Completed", exited, true},
		{"stopped, not recorded: from the task, code 137", nil, &taskInfo{status: containerd.Stopped, exitStatus: 137, exitedAt: exited}, podrunner.StateExited, 137, "Error", exited, true},
		{"stopped, recorded OOMKilled: the labels stand", labelsOOM, &taskInfo{status: containerd.Stopped, exitStatus: 137, exitedAt: exited}, podrunner.StateExited, 137, "OOMKilled", recorded, true},
		{"unknown status", nil, &taskInfo{status: containerd.Unknown}, podrunner.StateUnknown, 0, "", time.Time{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := recordFromLabels("id", c.labels)
			rec.ExitRecorded = c.labels[LabelFinishedAt] != ""
			got := withTask(rec, c.task)
			if got.State != c.state || got.ExitCode != c.code || got.Reason != c.reason || !got.FinishedAt.Equal(c.fin) || got.TaskPresent != c.hasTask {
				t.Errorf("got state %v code %d reason %q finished %v task %v; want %v %d %q %v %v",
					got.State, got.ExitCode, got.Reason, got.FinishedAt, got.TaskPresent, c.state, c.code, c.reason, c.fin, c.hasTask)
			}
			if c.task != nil && got.PID != c.task.pid {
				t.Errorf("pid %d, want %d", got.PID, c.task.pid)
			}
		})
	}
}

func TestProcesslessSandboxState(t *testing.T) {
	alive := func(map[string]string) bool { return true }
	gone := func(map[string]string) bool { return false }
	cases := []struct {
		name     string
		recorded bool
		alive    func(map[string]string) bool
		want     podrunner.ContainerState
	}{
		{"pins alive, not stopped: running", false, alive, podrunner.StateRunning},
		{"stopped (exit recorded), pins released", true, gone, podrunner.StateExited},
		{"stopped, pins still there (a release to retry)", true, alive, podrunner.StateExited},
		{"pins gone without a stop (a reboot): ended", false, gone, podrunner.StateExited},
	}
	for _, tc := range cases {
		rec := podrunner.ContainerRecord{ID: "s", Kind: podrunner.KindSandbox, State: podrunner.StateCreated, ExitRecorded: tc.recorded}
		if got := processlessSandbox(rec, map[string]string{}, tc.alive); got.State != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got.State, tc.want)
		}
	}
}
