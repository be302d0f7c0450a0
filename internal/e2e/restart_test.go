package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// 5. `kill -9` of podkeeper with pods running, then a restart: the same task PIDs, restart counts
// unchanged, no duplicate containers; and the adopted pods are still looked after.
func TestAgentKill9AndRestartAdoptsPods(t *testing.T) {
	a := startAgent(t, "pk-e2e-restart")
	a.write("keep.yaml", strings.Join([]string{
		podYAML("keep", "Always", 1, "", shContainer("a", "while true; do echo tick; sleep 1; done", ""), shContainer("b", "sleep 3600", "")),
		podYAML("bumped", "Always", 1, "", shContainer("c", "sleep 3600", "")),
	}, "---\n"))
	keep := a.waitPod(30*time.Second, "keep-e2e", "Running", running)
	bumped := a.waitPod(30*time.Second, "bumped-e2e", "Running", running)
	if err := syscall.Kill(int(a.runningPID(string(bumped.UID), "c")), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	bumped = a.waitPod(30*time.Second, "bumped-e2e", "restarted once", func(p *corev1.Pod) bool {
		return status(p, "c").RestartCount == 1 && running(p)
	})

	pids := map[string]uint32{
		"keep/a":   a.runningPID(string(keep.UID), "a"),
		"keep/b":   a.runningPID(string(keep.UID), "b"),
		"bumped/c": a.runningPID(string(bumped.UID), "c"),
	}
	nrecs := len(a.records(string(keep.UID))) + len(a.records(string(bumped.UID)))

	a.kill9()
	a.start()

	keep2 := a.waitPod(30*time.Second, "keep-e2e", "Running after restart", running)
	bumped2 := a.waitPod(30*time.Second, "bumped-e2e", "Running after restart", running)
	if keep2.UID != keep.UID || bumped2.UID != bumped.UID {
		t.Fatalf("UIDs changed across an agent restart: %s->%s %s->%s", keep.UID, keep2.UID, bumped.UID, bumped2.UID)
	}
	after := map[string]uint32{
		"keep/a":   a.runningPID(string(keep.UID), "a"),
		"keep/b":   a.runningPID(string(keep.UID), "b"),
		"bumped/c": a.runningPID(string(bumped.UID), "c"),
	}
	for k, pid := range pids {
		if after[k] != pid {
			t.Fatalf("%s: task PID %d before the agent restart, %d after (the container was restarted)", k, pid, after[k])
		}
	}
	if got := status(bumped2, "c").RestartCount; got != 1 {
		t.Fatalf("restart count after adoption = %d, want 1", got)
	}
	if got := status(keep2, "a").RestartCount; got != 0 {
		t.Fatalf("restart count after adoption = %d, want 0", got)
	}
	if n := len(a.records(string(keep.UID))) + len(a.records(string(bumped.UID))); n != nrecs {
		t.Fatalf("containers before restart %d, after %d (duplicates?)", nrecs, n)
	}
	// The adopted container's output is still collected.
	a.eventually(10*time.Second, "output after restart", func() (bool, string) {
		out, err := a.cli("logs", "keep", "-c", "a", "--since", "2s")
		return err == nil && strings.Contains(out, "tick"), out
	})
	// And its exits are still handled.
	if err := syscall.Kill(int(after["bumped/c"]), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.waitPod(30*time.Second, "bumped-e2e", "restarted by the new agent", func(p *corev1.Pod) bool {
		return status(p, "c").RestartCount == 2 && running(p)
	})
}
