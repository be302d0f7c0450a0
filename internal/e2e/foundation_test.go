package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/podrunner"
	"github.com/podkeeper/podkeeper/podrunner/crilog"
)

// The Foundation issue's "what must be shown", one test each, against one shared agent (and a
// second one for the agent-restart test).

func TestFoundation(t *testing.T) {
	a := startAgent(t, "pk-e2e")
	t.Run("ManifestDroppedRuns", func(t *testing.T) { t.Parallel(); manifestDroppedRuns(t, a) })
	t.Run("RestartPolicies", func(t *testing.T) { t.Parallel(); restartPolicies(t, a) })
	t.Run("CrashLoopBackOff", func(t *testing.T) { t.Parallel(); crashLoopBackOff(t, a) })
	t.Run("RemoveManifestTerminatesGracefully", func(t *testing.T) { t.Parallel(); removeTerminates(t, a) })
	t.Run("EditReplacesPod", func(t *testing.T) { t.Parallel(); editReplaces(t, a) })
	t.Run("Logs", func(t *testing.T) { t.Parallel(); logs(t, a) })
	t.Run("PodNetworkNamespaces", func(t *testing.T) { t.Parallel(); networkNamespaces(t, a) })
	t.Run("RemovedAndRestoredWhileTerminating", func(t *testing.T) { t.Parallel(); removeRestore(t, a) })
	t.Run("BrokenManifestBesideGoodOne", func(t *testing.T) { t.Parallel(); brokenManifest(t, a) })
}

func sub(t *testing.T, a *agent) *agent {
	c := *a
	c.t = t
	return &c
}

// 1. A manifest dropped into the directory runs.
func manifestDroppedRuns(t *testing.T, shared *agent) {
	a := sub(t, shared)
	a.write("hello.yaml", podYAML("hello", "Always", 2, "", shContainer("main", "echo hi; sleep 3600", "")))
	p := a.waitPod(30*time.Second, "hello-e2e", "Running", running)
	if p.Namespace != "default" || p.Spec.NodeName != node || p.Annotations["kubernetes.io/config.source"] != "file" {
		t.Fatalf("static pod identity wrong: ns=%q node=%q annotations=%v", p.Namespace, p.Spec.NodeName, p.Annotations)
	}
	cs := status(p, "main")
	if !strings.HasPrefix(cs.ContainerID, "containerd://") || cs.RestartCount != 0 || !cs.Ready || cs.ImageID == "" {
		t.Fatalf("container status = %+v", cs)
	}
	conds := map[corev1.PodConditionType]corev1.ConditionStatus{}
	for _, c := range p.Status.Conditions {
		conds[c.Type] = c.Status
	}
	for _, c := range []corev1.PodConditionType{corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		if conds[c] != corev1.ConditionTrue {
			t.Fatalf("condition %s = %q, want True (all: %v)", c, conds[c], conds)
		}
	}
	if p.Status.StartTime == nil {
		t.Fatal("no startTime")
	}
	out, err := a.cli("get", "pods")
	if err != nil || !strings.Contains(out, "hello-e2e") || !strings.Contains(out, "Running") || !strings.Contains(out, "NAME") {
		t.Fatalf("get pods table: %v\n%s", err, out)
	}
	desc, err := a.cli("describe", "pod", "hello")
	if err != nil || !strings.Contains(desc, "Started container main") || !strings.Contains(desc, "podkeeper, e2e") {
		t.Fatalf("describe pod by manifest name: %v\n%s", err, desc)
	}
}

// 2. Killing a container's process: restarted with restartCount 1 (Always), not restarted
// (Never), restarted only on a non-zero exit (OnFailure).
func restartPolicies(t *testing.T, shared *agent) {
	a := sub(t, shared)
	a.write("policies.yaml", strings.Join([]string{
		podYAML("always", "Always", 1, "", shContainer("c", "echo instance-$(cat /proc/sys/kernel/random/uuid); sleep 3600", "")),
		podYAML("never", "Never", 1, "", shContainer("c", "sleep 3600", "")),
		podYAML("onfailure", "OnFailure", 1, "", shContainer("c", "sleep 3600", "")),
		podYAML("onfailure-ok", "OnFailure", 1, "", shContainer("c", "sleep 1; exit 0", "")),
	}, "---\n"))
	pods := map[string]*corev1.Pod{}
	for _, n := range []string{"always", "never", "onfailure"} {
		pods[n] = a.waitPod(30*time.Second, n+"-e2e", "Running", running)
	}
	for _, n := range []string{"always", "never", "onfailure"} {
		pid := a.runningPID(string(pods[n].UID), "c")
		if err := syscall.Kill(int(pid), syscall.SIGKILL); err != nil {
			t.Fatalf("kill %s: %v", n, err)
		}
	}
	p := a.waitPod(30*time.Second, "always-e2e", "restarted once", func(p *corev1.Pod) bool {
		cs := status(p, "c")
		return cs.RestartCount == 1 && cs.State.Running != nil
	})
	if lt := status(p, "c").LastTerminationState.Terminated; lt == nil || lt.ExitCode != 137 || lt.Reason != "Error" {
		t.Fatalf("always: lastState = %+v, want terminated 137 Error", lt)
	}
	var cur, prev string
	a.eventually(10*time.Second, "logs of both instances", func() (bool, string) {
		var err1, err2 error
		cur, err1 = a.cli("logs", "always")
		prev, err2 = a.cli("logs", "always", "--previous")
		return err1 == nil && err2 == nil && strings.HasPrefix(cur, "instance-") && strings.HasPrefix(prev, "instance-"), fmt.Sprint(cur, prev, err1, err2)
	})
	if cur == prev {
		t.Fatalf("logs --previous shows the current instance's output %q", cur)
	}
	a.waitPod(30*time.Second, "onfailure-e2e", "restarted after a non-zero exit", func(p *corev1.Pod) bool {
		cs := status(p, "c")
		return cs.RestartCount == 1 && cs.State.Running != nil
	})
	p = a.waitPod(30*time.Second, "never-e2e", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if cs := status(p, "c"); cs.RestartCount != 0 || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 137 {
		t.Fatalf("never: status = %+v", cs)
	}
	p = a.waitPod(30*time.Second, "onfailure-ok-e2e", "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if cs := status(p, "c"); cs.RestartCount != 0 || cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" {
		t.Fatalf("onfailure-ok: status = %+v", cs)
	}
	// Never and a finished OnFailure stay as they are.
	time.Sleep(2 * time.Second)
	for _, n := range []string{"never-e2e", "onfailure-ok-e2e"} {
		p := a.waitPod(5*time.Second, n, "listed", func(*corev1.Pod) bool { return true })
		if cs := status(p, "c"); cs.RestartCount != 0 {
			t.Fatalf("%s was restarted: %+v", n, cs)
		}
	}
}

// 2b. The second and later restarts follow the kubelet's backoff: at once, then 10 s, then 20 s.
func crashLoopBackOff(t *testing.T, shared *agent) {
	a := sub(t, shared)
	a.write("crash.yaml", podYAML("crash", "Always", 1, "", shContainer("c", "exit 1", "")))
	p := a.waitPod(30*time.Second, "crash-e2e", "listed", func(p *corev1.Pod) bool { return p.UID != "" })
	uid := string(p.UID)
	// gap[n] = start of attempt n - finish of attempt n-1, read from containerd's records.
	gaps := map[int]time.Duration{}
	sawBackOff := false
	a.eventually(60*time.Second, "three restarts", func() (bool, string) {
		v := podrunner.NewPodView(a.records(uid))
		rs := v.Containers["c"]
		for i := 0; i+1 < len(rs); i++ {
			newer, older := rs[i], rs[i+1]
			if newer.Attempt == older.Attempt+1 && !older.FinishedAt.IsZero() {
				gaps[newer.Attempt] = newer.StartedAt.Sub(older.FinishedAt)
			}
		}
		if pods, err := a.pods(); err == nil {
			for _, q := range pods {
				if q.Name == "crash-e2e" {
					if w := status(&q, "c").State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
						sawBackOff = true
					}
				}
			}
		}
		_, ok := gaps[3]
		return ok, ""
	})
	if gaps[1] > 3*time.Second {
		t.Fatalf("first restart after %v, want at once", gaps[1])
	}
	if gaps[2] < 9500*time.Millisecond || gaps[2] > 14*time.Second {
		t.Fatalf("second restart after %v, want ~10s", gaps[2])
	}
	if gaps[3] < 19500*time.Millisecond || gaps[3] > 25*time.Second {
		t.Fatalf("third restart after %v, want ~20s", gaps[3])
	}
	if !sawBackOff {
		t.Fatal("status never showed CrashLoopBackOff while backing off")
	}
	desc, _ := a.cli("describe", "pod", "crash")
	if !strings.Contains(desc, "Back-off restarting failed container c") {
		t.Fatalf("no BackOff event in describe:\n%s", desc)
	}
}

// 3. Removing the manifest: SIGTERM first (a trap writes a marker into a hostPath), gone within
// the grace period; a container that ignores SIGTERM is killed when the grace period ends.
func removeTerminates(t *testing.T, shared *agent) {
	a := sub(t, shared)
	host := t.TempDir()
	vol := "  volumes:\n  - name: host\n    hostPath:\n      path: " + host + "\n      type: Directory\n"
	mount := "    volumeMounts:\n    - name: host\n      mountPath: /host\n"
	a.write("polite.yaml", podYAML("polite", "Always", 20, vol,
		shContainer("c", "trap 'echo got-term > /host/marker; exit 0' TERM; echo ready > /host/ready; while true; do sleep 0.2; done", mount)))
	a.write("stubborn.yaml", podYAML("stubborn", "Always", 3, "",
		shContainer("c", "trap '' TERM; while true; do sleep 0.2; done", "")))
	polite := a.waitPod(30*time.Second, "polite-e2e", "Running", running)
	stubborn := a.waitPod(30*time.Second, "stubborn-e2e", "Running", running)
	a.eventually(10*time.Second, "trap installed", func() (bool, string) {
		_, err := os.Stat(filepath.Join(host, "ready"))
		return err == nil, ""
	})
	time.Sleep(300 * time.Millisecond)

	start := time.Now()
	a.remove("polite.yaml")
	a.remove("stubborn.yaml")
	a.waitGone(20*time.Second, "polite-e2e", "")
	politeTook := time.Since(start)
	b, err := os.ReadFile(filepath.Join(host, "marker"))
	if err != nil || strings.TrimSpace(string(b)) != "got-term" {
		t.Fatalf("no SIGTERM marker: %v %q", err, b)
	}
	if politeTook > 15*time.Second {
		t.Fatalf("polite pod took %v to go, grace 20s but it exits on TERM", politeTook)
	}
	a.waitGone(20*time.Second, "stubborn-e2e", "")
	stubbornTook := time.Since(start)
	if stubbornTook < 3*time.Second {
		t.Fatalf("stubborn pod gone after %v, before its 3s grace period", stubbornTook)
	}
	for _, p := range []*corev1.Pod{polite, stubborn} {
		if recs := a.records(string(p.UID)); len(recs) != 0 {
			t.Fatalf("%s left containers: %+v", p.Name, recs)
		}
	}
	if _, err := os.Stat(filepath.Join(a.logs, "default_polite-e2e_"+string(polite.UID))); !os.IsNotExist(err) {
		t.Fatalf("log dir of the removed pod still there: %v", err)
	}
}

// 4. Editing the manifest replaces the pod (new UID) and the old containers are gone.
func editReplaces(t *testing.T, shared *agent) {
	a := sub(t, shared)
	a.write("edit.yaml", podYAML("edit", "Always", 1, "", shContainer("c", "echo v1; sleep 3600", "")))
	old := a.waitPod(30*time.Second, "edit-e2e", "Running", running)
	a.write("edit.yaml", podYAML("edit", "Always", 1, "", shContainer("c", "echo v2; sleep 3600", "")))
	p := a.waitPod(40*time.Second, "edit-e2e", "replaced", func(p *corev1.Pod) bool { return p.UID != old.UID && running(p) })
	if recs := a.records(string(old.UID)); len(recs) != 0 {
		t.Fatalf("old instance left containers: %+v", recs)
	}
	out, err := a.cli("logs", "edit")
	if err != nil || !strings.Contains(out, "v2") {
		t.Fatalf("new instance logs: %v %q", err, out)
	}
	if status(p, "c").RestartCount != 0 {
		t.Fatal("replacement starts with restart count 0 (a new pod)")
	}
}

// 6. Logs: `podkeeper logs` returns what the container printed; the file is in CRI format at
// <log-dir>/<namespace>_<pod>_<uid>/<container>/<restartCount>.log.
func logs(t *testing.T, shared *agent) {
	a := sub(t, shared)
	a.write("logs.yaml", podYAML("logs", "Always", 1, "",
		shContainer("c", "echo line-one; echo line-two >&2; sleep 3600", ""),
		shContainer("d", "echo from-d; sleep 3600", "")))
	p := a.waitPod(30*time.Second, "logs-e2e", "Running", running)
	var out string
	a.eventually(10*time.Second, "logs", func() (bool, string) {
		var err error
		out, err = a.cli("logs", "logs", "-c", "c")
		return err == nil && strings.Contains(out, "line-one\n") && strings.Contains(out, "line-two\n"), out
	})
	if _, err := a.cli("logs", "logs"); err == nil || !strings.Contains(err.Error(), "choose one of") {
		t.Fatalf("logs of a two-container pod without -c: %v", err)
	}
	if out, err := a.cli("logs", "logs", "-c", "c", "--tail", "1"); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("--tail 1: %v %q", err, out)
	}
	path := filepath.Join(a.logs, "default_logs-e2e_"+string(p.UID), "c", "0.log")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	streams := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		e, err := crilog.ParseLine(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: line %q: %v", path, sc.Text(), err)
		}
		if e.Partial {
			t.Fatalf("unexpected partial line %q", sc.Text())
		}
		streams[string(e.Text)] = e.Stream
	}
	if streams["line-one"] != "stdout" || streams["line-two"] != "stderr" {
		t.Fatalf("CRI log content by stream: %v", streams)
	}
}

// 7. Containers of one pod share its network namespace; another pod has its own.
func networkNamespaces(t *testing.T, shared *agent) {
	a := sub(t, shared)
	a.write("net.yaml", strings.Join([]string{
		podYAML("net-a", "Always", 1, "",
			shContainer("server", "mkdir -p /www && echo pod-a-content > /www/index.html && httpd -f -p 127.0.0.1:8089 -h /www", ""),
			shContainer("client", "until wget -q -O - http://127.0.0.1:8089/index.html; do sleep 0.2; done; sleep 3600", "")),
		podYAML("net-b", "Always", 1, "",
			shContainer("client", "sleep 2; wget -q -T 2 -O - http://127.0.0.1:8089/index.html || echo unreachable; sleep 3600", "")),
	}, "---\n"))
	a.waitPod(30*time.Second, "net-a-e2e", "Running", running)
	a.waitPod(30*time.Second, "net-b-e2e", "Running", running)
	a.eventually(20*time.Second, "pod a's client reaches its server on loopback", func() (bool, string) {
		out, err := a.cli("logs", "net-a", "-c", "client")
		return err == nil && strings.Contains(out, "pod-a-content"), out
	})
	a.eventually(20*time.Second, "pod b cannot reach pod a's loopback", func() (bool, string) {
		out, err := a.cli("logs", "net-b")
		return err == nil && strings.Contains(out, "unreachable"), out
	})
	if out, _ := a.cli("logs", "net-b"); strings.Contains(out, "pod-a-content") {
		t.Fatalf("pod b reached pod a's loopback: %q", out)
	}
}

// 8. A broken manifest next to a good one: the good pod runs, the agent keeps running, and the
// error is shown.
func brokenManifest(t *testing.T, shared *agent) {
	a := sub(t, shared)
	a.write("zz-broken.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: broken\nspec:\n  containers:\n  - name: c\n    imagee: busybox\n")
	a.write("zz-notapod.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n")
	a.write("zz-garbage.yaml", "{{{{ not yaml")
	a.write("good.yaml", podYAML("good", "Always", 1, "", shContainer("c", "sleep 3600", "")))
	a.waitPod(30*time.Second, "good-e2e", "Running", running)
	a.eventually(10*time.Second, "errors shown by get pods", func() (bool, string) {
		out, err := a.cli("get", "pods")
		return err == nil && strings.Contains(out, "zz-broken.yaml") && strings.Contains(out, "imagee") &&
			strings.Contains(out, "zz-notapod.yaml") && strings.Contains(out, "zz-garbage.yaml"), out
	})
	if _, err := a.cli("get", "pods"); err != nil {
		t.Fatalf("agent stopped answering: %v", err)
	}
}

// A manifest removed and put back while its pod is still terminating: the pod comes back (same
// UID, as the content is the same) once the old instance is gone.
func removeRestore(t *testing.T, shared *agent) {
	a := sub(t, shared)
	// The old instance ignores SIGTERM, so it is terminating for its whole grace period: long
	// enough (10 s) for the test to see it so and put the manifest back meanwhile, on a loaded
	// machine too.
	m := podYAML("phoenix", "Always", 10, "", shContainer("c", "trap '' TERM; sleep 3600", ""))
	a.write("phoenix.yaml", m)
	old := a.waitPod(30*time.Second, "phoenix-e2e", "Running", running)
	oldPID := a.runningPID(string(old.UID), "c")
	a.remove("phoenix.yaml")
	a.eventually(10*time.Second, "terminating", func() (bool, string) {
		pods, _ := a.pods()
		for _, p := range pods {
			if p.Name == "phoenix-e2e" && p.DeletionTimestamp != nil {
				return true, ""
			}
		}
		return false, ""
	})
	a.write("phoenix.yaml", m)
	p := a.waitPod(45*time.Second, "phoenix-e2e", "Running again", func(p *corev1.Pod) bool {
		return running(p) && p.UID == old.UID && a.pidOf(string(p.UID), "c") != oldPID
	})
	if status(p, "c").RestartCount != 0 {
		t.Fatalf("restored pod restart count %d, want 0 (a new instance)", status(p, "c").RestartCount)
	}
}
