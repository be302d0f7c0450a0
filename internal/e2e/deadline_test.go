package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// activeDeadlineSeconds on a real containerd: the pod runs until its deadline, then is Failed
// with reason DeadlineExceeded, its container stopped through its preStop hook and SIGTERM and
// not restarted (restartPolicy Always notwithstanding); an agent restart keeps it so (the
// kubelet without an API server would start it again).
func TestActiveDeadline(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "pk-e2e-deadline")
	vol, mount, dir := hostDir(t)
	a.write("deadline.yaml", podYAML("deadline", "Always", 5, "  activeDeadlineSeconds: 4\n"+vol,
		shContainer("app", `trap "exit 0" TERM; sleep 3600 & wait`, mount+
			"    lifecycle:\n      preStop:\n        exec:\n          command: [\"sh\", \"-c\", \"echo prestop >> /host/log\"]\n")))
	a.waitPod(60*time.Second, "deadline-e2e", "running", running)
	failedForDeadline := func(p *corev1.Pod) bool {
		cs := status(p, "app")
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "DeadlineExceeded" &&
			p.Status.Message == "Pod was active on the node longer than the specified deadline" &&
			cs.State.Terminated != nil
	}
	p := a.waitPod(30*time.Second, "deadline-e2e", "failed for its deadline, container stopped", failedForDeadline)
	cs := status(p, "app")
	if ran := cs.State.Terminated.FinishedAt.Sub(p.Status.StartTime.Time); ran < 4*time.Second-time.Second { // times are whole seconds
		t.Errorf("stopped %v after the pod's start, before its 4 s deadline", ran)
	}
	if cs.State.Terminated.ExitCode != 0 || cs.RestartCount != 0 {
		t.Errorf("container: exit %d (want 0: SIGTERM, trapped), restartCount %d", cs.State.Terminated.ExitCode, cs.RestartCount)
	}
	if got := readLines(dir); len(got) != 1 || got[0] != "prestop" {
		t.Errorf("preStop hook log %q, want one prestop", got)
	}
	a.waitEvent(10*time.Second, "DeadlineExceeded", "longer than the specified deadline")

	// An agent restart: the pod is found past its deadline (counted from its sandbox's start) and
	// stays Failed; its container is not started again.
	a.kill9()
	a.start()
	p = a.waitPod(30*time.Second, "deadline-e2e", "still failed after the agent's restart", failedForDeadline)
	time.Sleep(3 * time.Second)
	p = a.waitPod(5*time.Second, "deadline-e2e", "still failed", failedForDeadline)
	if cs := status(p, "app"); cs.RestartCount != 0 {
		t.Errorf("restarted after the agent's restart: restartCount %d", cs.RestartCount)
	}
	for _, r := range a.records(string(p.UID)) {
		if r.Name == "app" && r.Attempt > 0 {
			t.Errorf("a new instance of app after the deadline: %+v", r)
		}
	}
	if strings.Count(strings.Join(readLines(dir), " "), "prestop") != 1 {
		t.Errorf("preStop ran again: %q", readLines(dir))
	}
}
