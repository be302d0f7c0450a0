package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/podrunner"
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

// Dead-container GC on the real containerd: a container killed twice has three instances; the
// oldest is removed with its log, the one before the running instance is kept, and `logs
// --previous` shows it.
func TestDeadContainerGCKeepsOne(t *testing.T) {
	a := startAgent(t, "pk-e2e-deadgc")
	a.write("crashy.yaml", podYAML("crashy", "Always", 1, "", shContainer("c", "echo instance-$(cat /proc/sys/kernel/random/uuid); sleep 3600", "")))
	p := a.waitPod(30*time.Second, "crashy-e2e", "Running", running)
	uid := string(p.UID)
	for kill := 1; kill <= 2; kill++ {
		if err := syscall.Kill(int(a.runningPID(uid, "c")), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		a.waitPod(60*time.Second, "crashy-e2e", fmt.Sprintf("restarted %d times", kill), func(p *corev1.Pod) bool {
			return status(p, "c").RestartCount == int32(kill) && running(p)
		})
	}
	var recs []string
	a.eventually(30*time.Second, "exactly one dead instance kept", func() (bool, string) {
		recs = nil
		dead := 0
		for _, r := range a.records(uid) {
			if r.Name != "c" {
				continue
			}
			recs = append(recs, fmt.Sprintf("attempt %d %s", r.Attempt, r.State))
			if r.State != podrunner.StateRunning {
				dead++
				if r.Attempt != 1 {
					return false, fmt.Sprintf("dead instance of attempt %d kept: %v", r.Attempt, recs)
				}
			}
		}
		return dead == 1 && len(recs) == 2, strings.Join(recs, ", ")
	})
	logDir := filepath.Join(a.logs, fmt.Sprintf("default_crashy-e2e_%s", uid), "c")
	ents, err := os.ReadDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range ents {
		files = append(files, e.Name())
	}
	if strings.Join(files, " ") != "1.log 2.log" {
		t.Errorf("log files %v, want [1.log 2.log] (the removed instance's log removed with it)", files)
	}
	prev, err := a.cli("logs", "crashy-e2e", "--previous")
	cur, err2 := a.cli("logs", "crashy-e2e")
	if err != nil || err2 != nil || !strings.HasPrefix(prev, "instance-") || prev == cur {
		t.Errorf("logs --previous = %q (%v), current %q (%v)", prev, err, cur, err2)
	}
}
