package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/internal/ociimage"
	"github.com/podkeeper/podkeeper/podrunner/api"
)

// memTotal reads MemTotal from /proc/meminfo in bytes.
func memTotal(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb * 1024
		}
	}
	t.Fatal("no MemTotal")
	return 0
}

// A memory.available hard threshold above all the node's memory evicts the BestEffort pod
// first, then the Burstable one using more than it requests, one per monitoring interval, never
// the critical one; MemoryPressure shows in describe node. With the threshold lowered again
// (the agent restarted with new flags, adopting its pods) the evicted static pods run again.
func TestEvictionMemoryPressure(t *testing.T) {
	privateCgroupParent(t, "pke-evict")
	a := startAgentAt(t, "pk-e2e-evict", env.Address, "--eviction-monitoring-interval", "1s", "--eviction-pressure-transition-period", "2s")
	hold := func(bytes int) string {
		return fmt.Sprintf("x=$(head -c %d /dev/zero | tr '\\000' a); echo ready; sleep 3600", bytes)
	}
	a.write("be.yaml", podYAML("be", "Always", 1, "", shContainer("be", hold(16<<20), "")))
	a.write("bu.yaml", podYAML("bu", "Always", 1, "", shContainer("bu", hold(6<<20),
		"    resources:\n      requests:\n        memory: 2Mi\n")))
	a.write("crit.yaml", podYAML("crit", "Always", 1, "  priority: 2000001000\n", shContainer("crit", hold(32<<20), "")))
	a.write("optout.yaml", strings.Replace(podYAML("optout", "Always", 1, "", shContainer("optout", hold(32<<20), "")),
		"metadata:\n", "metadata:\n  annotations:\n    podkeeper.io/never-evict: \"true\"\n", 1))
	names := []string{"be", "bu", "crit", "optout"}
	for _, n := range names {
		a.waitPod(60*time.Second, n+"-"+node, n+" running", running)
		a.eventually(30*time.Second, n+" holds its memory", func() (bool, string) {
			out, err := a.cli("logs", n+"-"+node)
			return err == nil && strings.Contains(out, "ready"), out
		})
	}

	// Pressure: the agent restarts with a threshold no node can meet.
	a.kill9()
	huge := memTotal(t) + 1<<30
	a.extra = append(a.extra, "--eviction-hard", fmt.Sprintf("memory.available<%d", huge))
	a.start()
	evictedAt := a.waitEvicted(60*time.Second, "be and bu evicted", func(m map[string]time.Time) bool {
		_, be := m["be"]
		_, bu := m["bu"]
		return be && bu
	}, func(n string, e eviction, _ bool) {
		if !strings.HasPrefix(e.Message, "The node was low on resource: memory. Threshold quantity: ") {
			t.Errorf("%s: message %q", n, e.Message)
		}
	})
	if order := a.evictionOrder(); !evictedBefore(order, "be", "bu") {
		t.Errorf("eviction order %v, want be before bu", order)
	}
	for _, n := range []string{"crit", "optout"} {
		if _, ok := evictedAt[n]; ok {
			t.Errorf("%s was evicted", n)
		}
	}
	out, err := a.cli("describe", "node")
	if err != nil || !strings.Contains(out, "KubeletHasInsufficientMemory") {
		t.Errorf("describe node shows no MemoryPressure (%v):\n%s", err, out)
	}
	// Stays so: the critical pods keep running through several more intervals.
	time.Sleep(3 * time.Second)
	for _, n := range []string{"crit", "optout"} {
		a.waitPod(10*time.Second, n+"-"+node, n+" still running", running)
	}
	evs, _ := a.cli("get", "events")
	if !strings.Contains(evs, "Evicted") {
		t.Errorf("no Evicted event:\n%s", evs)
	}

	// Pressure gone: back to the default threshold; the evicted pods run again.
	a.kill9()
	a.extra = a.extra[:len(a.extra)-2]
	a.start()
	for _, n := range []string{"be", "bu"} {
		a.waitPod(60*time.Second, n+"-"+node, n+" running again", running)
	}
	out, err = a.cli("describe", "node")
	if err != nil || !strings.Contains(out, "KubeletHasSufficientMemory") {
		t.Errorf("describe node still shows MemoryPressure (%v):\n%s", err, out)
	}
}

// pidAvailable is pid.available as podkeeper observes it: pid_max - processes.
func pidAvailable(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	max, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	ents, _ := os.ReadDir("/proc")
	var n int64
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			n++
		}
	}
	return max - n
}

// PIDPressure made by the test (3000 sleeping processes) evicts the evictable pod; once the test's
// processes are gone the condition clears and podkeeper starts the evicted static pod again, in
// the same agent process.
func TestEvictionPIDPressureComesBack(t *testing.T) {
	privateCgroupParent(t, "pke-evpid")
	threshold := pidAvailable(t) - 1500
	a := startAgentAt(t, "pk-e2e-evpid", env.Address, "--eviction-monitoring-interval", "1s", "--eviction-pressure-transition-period", "2s",
		"--eviction-hard", fmt.Sprintf("pid.available<%d", threshold))
	a.write("web.yaml", podYAML("web", "Never", 1, "", shContainer("web", "sleep 3600", "")))
	a.write("crit.yaml", podYAML("crit", "Never", 1, "  priority: 2000001000\n", shContainer("crit", "sleep 3600", "")))
	first := a.waitPod(60*time.Second, "web-"+node, "web running", running)
	a.waitPod(60*time.Second, "crit-"+node, "crit running", running)

	var procs []*exec.Cmd
	stopProcs := func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
		procs = nil
	}
	t.Cleanup(stopProcs)
	for i := 0; i < 3000; i++ {
		c := exec.Command("sleep", "600")
		if err := c.Start(); err != nil {
			t.Fatalf("start process %d: %v", i, err)
		}
		procs = append(procs, c)
	}
	p := a.waitPod(60*time.Second, "web-"+node, "web evicted", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted"
	})
	if !strings.HasPrefix(p.Status.Message, "The node was low on resource: pids. Threshold quantity: ") {
		t.Errorf("message %q", p.Status.Message)
	}
	out, err := a.cli("describe", "node")
	if err != nil || !strings.Contains(out, "KubeletHasInsufficientPID") {
		t.Errorf("describe node shows no PIDPressure (%v):\n%s", err, out)
	}
	a.waitPod(10*time.Second, "crit-"+node, "crit still running", running)

	stopProcs()
	again := a.waitPod(60*time.Second, "web-"+node, "web running again", running)
	if again.Status.StartTime != nil && first.Status.StartTime != nil && !again.Status.StartTime.After(first.Status.StartTime.Time) {
		t.Errorf("web not started anew: start time %v, before %v", again.Status.StartTime, first.Status.StartTime)
	}
	evs, _ := a.cli("get", "events")
	if !strings.Contains(evs, "Restarted") {
		t.Errorf("no Restarted event:\n%s", evs)
	}
	out, _ = a.cli("describe", "node")
	if !strings.Contains(out, "KubeletHasSufficientPID") {
		t.Errorf("PIDPressure not cleared:\n%s", out)
	}
}

// DiskPressure (a nodefs.available threshold no disk meets) first reclaims at node level (an
// unused image is removed), then evicts by ephemeral storage: the BestEffort pod that wrote the
// most first, then the other BestEffort one, then the pod under its ephemeral-storage request;
// never the critical one. The evictions survive a kill -9 of the agent while the pressure lasts
// (the evicted pods are not started again at its restart); with the threshold back to normal they
// all run again.
func TestEvictionDiskPressureRemembered(t *testing.T) {
	privateCgroupParent(t, "pke-evdisk")
	ns := "pk-e2e-evdisk"
	a := startAgentAt(t, ns, env.Address, "--eviction-monitoring-interval", "1s", "--eviction-pressure-transition-period", "2s",
		"--image-minimum-gc-age", "0s")
	write := func(path string, mib int) string {
		return fmt.Sprintf("dd if=/dev/zero of=%s bs=1M count=%d 2>/dev/null; sync; echo ready; sleep 3600", path, mib)
	}
	vol := "  volumes:\n  - name: scratch\n    emptyDir: {}\n"
	mount := "    volumeMounts:\n    - name: scratch\n      mountPath: /scratch\n"
	a.write("hog.yaml", podYAML("hog", "Always", 1, "", shContainer("hog", write("/hog", 24), "")))
	a.write("small.yaml", podYAML("small", "Always", 1, "", shContainer("small", "echo ready; sleep 3600", "")))
	a.write("req.yaml", podYAML("req", "Always", 1, vol, shContainer("req", write("/scratch/f", 32), mount+
		"    resources:\n      requests:\n        ephemeral-storage: 1Gi\n")))
	a.write("crit.yaml", podYAML("crit", "Always", 1, "  priority: 2000001000\n", shContainer("crit", write("/crit", 40), "")))
	names := []string{"hog", "small", "req", "crit"}
	uids := map[string]string{}
	for _, n := range names {
		p := a.waitPod(60*time.Second, n+"-"+node, n+" running", running)
		uids[n] = string(p.UID)
		a.eventually(30*time.Second, n+" wrote its data", func() (bool, string) {
			out, err := a.cli("logs", n+"-"+node)
			return err == nil && strings.Contains(out, "ready"), out
		})
	}
	ctr := func(args ...string) (string, error) {
		out, err := exec.Command("ctr", append([]string{"-a", env.Address, "-n", ns}, args...)...).CombinedOutput()
		return string(out), err
	}
	if err := ociimage.WriteBusyboxImageFile(filepath.Join(a.root, "images", "reclaim-me.tar"), ociimage.Config{Name: "docker.io/library/reclaim-me:1", Labels: map[string]string{"reclaim": "me"}}); err != nil {
		t.Fatal(err)
	}
	a.eventually(30*time.Second, "reclaim-me imported", func() (bool, string) {
		out, err := ctr("images", "ls", "-q")
		return err == nil && strings.Contains(out, "reclaim-me"), out
	})

	// Pressure: restart with a threshold no disk meets.
	a.kill9()
	pressure := []string{"--eviction-hard", "nodefs.available<100%"}
	base := a.extra
	a.extra = append(append([]string{}, base...), pressure...)
	a.start()
	evictedAt := a.waitEvicted(60*time.Second, "hog, small and req evicted", func(m map[string]time.Time) bool { return len(m) >= 3 },
		func(n string, e eviction, first bool) {
			if !first {
				return
			}
			if !strings.HasPrefix(e.Message, "The node was low on resource: ephemeral-storage. Threshold quantity: ") {
				t.Errorf("%s: message %q", n, e.Message)
			}
			t.Logf("%s evicted: %s", n, e.Message)
			if n == "hog" && !strings.Contains(e.Message, "Container hog was using") {
				t.Errorf("hog: message names no container: %q", e.Message)
			}
		})
	if _, ok := evictedAt["crit"]; ok {
		t.Fatalf("critical pod evicted: %v", evictedAt)
	}
	if order := a.evictionOrder(); !evictedBefore(order, "hog", "small") || !evictedBefore(order, "small", "req") {
		t.Errorf("eviction order %v, want hog, small, req", order)
	}
	if out, _ := ctr("images", "ls", "-q"); strings.Contains(out, "reclaim-me") || !strings.Contains(out, "docker.io/library/busybox:latest") {
		t.Errorf("node-level reclaim: want reclaim-me removed and busybox kept:\n%s", out)
	}
	logb, _ := os.ReadFile(filepath.Join(a.dir, "agent.log"))
	agentLog := string(logb)
	if r, e := strings.Index(agentLog, "reclaim-me"), strings.Index(agentLog, "evicting pod"); r < 0 || e < 0 || strings.LastIndex(agentLog, "image gc: removed unused image") > e {
		t.Errorf("the unused image was not removed before the first eviction (reclaim at %d, evict at %d)", r, e)
	}
	out, err := a.cli("describe", "node")
	if err != nil || !strings.Contains(out, "KubeletHasDiskPressure") {
		t.Errorf("describe node shows no DiskPressure (%v):\n%s", err, out)
	}

	// kill -9 under pressure: the restarted agent remembers the evictions.
	a.kill9()
	a.start()
	a.waitPod(30*time.Second, "hog-"+node, "hog still evicted after the restart", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted"
	})
	time.Sleep(3 * time.Second)
	for _, n := range []string{"hog", "small", "req"} {
		if pid := a.pidOf(uids[n], n); pid != 0 {
			t.Errorf("%s started again at the restart although still evicted (pid %d)", n, pid)
		}
	}
	a.waitPod(10*time.Second, "crit-"+node, "crit still running", running)

	// Pressure gone: the evicted pods run again.
	a.kill9()
	a.extra = base
	a.start()
	for _, n := range []string{"hog", "small", "req"} {
		a.waitPod(60*time.Second, n+"-"+node, n+" running again", running)
	}
}

// A soft threshold acts only once it has been met for its grace period: MemoryPressure turns True
// at once, the pod is evicted no sooner than the grace period later.
func TestEvictionSoftThresholdWaitsForGrace(t *testing.T) {
	privateCgroupParent(t, "pke-evsoft")
	a := startAgentAt(t, "pk-e2e-evsoft", env.Address, "--eviction-monitoring-interval", "1s", "--eviction-pressure-transition-period", "2s")
	a.write("be.yaml", podYAML("be", "Always", 1, "", shContainer("be", "sleep 3600", "")))
	a.waitPod(60*time.Second, "be-"+node, "be running", running)

	a.kill9()
	const grace = 4 * time.Second
	a.extra = append(a.extra, "--eviction-hard", "", "--eviction-soft", fmt.Sprintf("memory.available<%d", memTotal(t)+1<<30),
		"--eviction-soft-grace-period", "memory.available="+grace.String())
	started := time.Now()
	a.start()
	a.eventually(20*time.Second, "MemoryPressure True", func() (bool, string) {
		out, err := a.cli("describe", "node")
		return err == nil && strings.Contains(out, "KubeletHasInsufficientMemory"), out
	})
	sawPressure := time.Since(started)
	if p := a.waitPod(10*time.Second, "be-"+node, "be", func(*corev1.Pod) bool { return true }); p.Status.Reason == "Evicted" && sawPressure < grace-time.Second {
		t.Fatalf("evicted %v after the start, within the %v grace period", sawPressure, grace)
	}
	a.waitPod(30*time.Second, "be-"+node, "be evicted after the grace period", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted"
	})
	evs, _ := a.cli("get", "events")
	if !strings.Contains(evs, "Evicted") {
		t.Errorf("no Evicted event:\n%s", evs)
	}
	b, _ := os.ReadFile(filepath.Join(a.dir, "agent.log"))
	logText := string(b)
	i := strings.LastIndex(logText, "node condition changed")
	j := strings.LastIndex(logText, "evicting pod")
	if i < 0 || j < 0 || j < i {
		t.Fatalf("agent log: condition change at %d, eviction at %d", i, j)
	}
	ti, tj := logTime(t, logText[max(0, i-200):i]), logTime(t, logText[max(0, j-200):j])
	if d := tj.Sub(ti); d < grace-500*time.Millisecond {
		t.Errorf("evicted %v after MemoryPressure turned True, want at least the %v grace period", d, grace)
	} else {
		t.Logf("evicted %v after MemoryPressure turned True (grace %v)", d.Round(time.Millisecond), grace)
	}
}

// logTime is the time= of the last slog text line that starts in before.
func logTime(t *testing.T, before string) time.Time {
	k := strings.LastIndex(before, "time=")
	if k < 0 {
		t.Fatalf("no time= in %q", before)
	}
	v := before[k+len("time="):]
	if sp := strings.IndexByte(v, ' '); sp > 0 {
		v = v[:sp]
	}
	ts, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		t.Fatalf("log time %q: %v", v, err)
	}
	return ts
}

// evictionOrder is the pods (names without the node suffix) in the order the agent's log says it
// first evicted them: the order of the polls that saw them can differ (two evictions seen by one
// poll, a status missed and its event seen later).
func (a *agent) evictionOrder() []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(a.agentLog(), "\n") {
		if !strings.Contains(l, `msg="evicting pod"`) {
			continue
		}
		_, rest, ok := strings.Cut(l, " pod=default/")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, " ")
		n = strings.TrimSuffix(n, "-"+node)
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// evictedBefore says whether first comes before second in order, both in it.
func evictedBefore(order []string, first, second string) bool {
	i, j := slices.Index(order, first), slices.Index(order, second)
	return i >= 0 && j >= 0 && i < j
}

// eviction is what a poll saw of a pod's eviction: the message, the pod instance's UID, and its
// status when the poll saw it Failed/Evicted (nil when only its Evicted event showed it).
type eviction struct {
	Message, UID string
	Pod          *corev1.Pod
}

// waitEvicted polls the pods and the events until done says so of the pods evicted so far (name
// without the node suffix -> when first seen so), calling seen for every such pod at every poll
// (first: the poll that first saw it). It returns the times. A pod counts as evicted when a poll
// sees it Failed/Evicted or an Evicted event names it: an evicted static pod starts again after one
// monitoring interval, and with a 1 s interval on a loaded machine its Failed status can come and
// go between two polls (TestEvictionLocalStorageLimits missed one so, docs/reliability.md bug 9);
// the event stays.
func (a *agent) waitEvicted(timeout time.Duration, what string, done func(map[string]time.Time) bool, seen func(name string, e eviction, first bool)) map[string]time.Time {
	evictedAt := map[string]time.Time{}
	note := func(n string, e eviction) {
		_, had := evictedAt[n]
		if !had {
			evictedAt[n] = time.Now()
		}
		seen(n, e, !had)
	}
	a.eventually(timeout, what, func() (bool, string) {
		pods, err := a.pods()
		if err != nil {
			return false, err.Error()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		events, err := api.NewClient(a.sock).Events(ctx, "")
		cancel()
		if err != nil {
			return false, err.Error()
		}
		var st []string
		shown := map[string]bool{}
		for i := range pods {
			p := &pods[i]
			n := strings.TrimSuffix(p.Name, "-"+node)
			if p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted" {
				shown[n] = true
				note(n, eviction{Message: p.Status.Message, UID: string(p.UID), Pod: p})
			}
			st = append(st, n+"="+string(p.Status.Phase)+"/"+p.Status.Reason)
		}
		for _, e := range events.Items {
			n := strings.TrimSuffix(e.InvolvedObject.Name, "-"+node)
			if e.Reason != "Evicted" || shown[n] {
				continue
			}
			if _, had := evictedAt[n]; !had { // the status already told the rest
				note(n, eviction{Message: e.Message, UID: string(e.InvolvedObject.UID)})
			}
		}
		return done(evictedAt), strings.Join(st, " ")
	})
	return evictedAt
}

// Local storage limits, with no node pressure at all (no thresholds): an emptyDir over its
// sizeLimit, a pod over the sum of its containers' ephemeral-storage limits and a container over
// its own limit are each evicted with the kubelet's message; a pod within its limits and a
// critical pod over them are not. The evicted pod's emptyDir is freed at once, and the pod starts
// again after its backoff with an empty one.
func TestEvictionLocalStorageLimits(t *testing.T) {
	privateCgroupParent(t, "pke-evls")
	a := startAgentAt(t, "pk-e2e-evls", env.Address, "--eviction-monitoring-interval", "1s", "--eviction-hard", "")
	hostVol, hostMount, hostPath := hostDir(t)
	// dd writes real blocks; sync makes the usage visible to the block counts at once.
	write := func(path string, kib int) string {
		return fmt.Sprintf("dd if=/dev/zero of=%s bs=1k count=%d 2>/dev/null; sync", path, kib)
	}
	limit := func(q string) string {
		return "    resources:\n      limits:\n        ephemeral-storage: " + q + "\n"
	}
	scratch := func(sizeLimit string) (string, string) {
		v := "  - name: scratch\n    emptyDir: {}\n"
		if sizeLimit != "" {
			v = "  - name: scratch\n    emptyDir:\n      sizeLimit: " + sizeLimit + "\n"
		}
		return v, "    - name: scratch\n      mountPath: /scratch\n"
	}
	// dir writes 3 MiB into its 1Mi emptyDir on its first run only (a marker on the host), then
	// reports what its emptyDir holds.
	v, m := scratch("1Mi")
	t.Cleanup(func() { // before the agent stops: what dir did, when it was not evicted in time
		if t.Failed() {
			out, err := a.cli("logs", "dir-"+node)
			t.Logf("dir's log (%v): %s", err, out)
			desc, _ := a.cli("describe", "pod", "dir-"+node)
			t.Logf("dir: %s", desc)
		}
	})
	a.write("dir.yaml", podYAML("dir", "Always", 1, hostVol+v, shContainer("dir",
		"if [ ! -e /host/dir-wrote ]; then touch /host/dir-wrote; "+write("/scratch/f", 3072)+"; fi; echo scratch: $(ls /scratch | wc -l) files; sleep 3600",
		hostMount+m)))
	// pod: 1.5 MiB in its root fs and 1.5 MiB in an emptyDir without a limit, against a 2Mi limit.
	v, m = scratch("")
	a.write("pod.yaml", podYAML("pod", "Always", 1, "  volumes:\n"+v, shContainer("pod",
		write("/big", 1536)+"; "+write("/scratch/f", 1536)+"; sleep 3600", "    volumeMounts:\n"+m+limit("2Mi"))))
	// ctr: container w writes 3 MiB against its 1Mi, its pod's total limit (101Mi) is far off.
	a.write("ctr.yaml", podYAML("ctr", "Always", 1, "",
		shContainer("w", write("/big", 3072)+"; sleep 3600", limit("1Mi")),
		shContainer("idle", "sleep 3600", limit("100Mi"))))
	a.write("ok.yaml", podYAML("ok", "Always", 1, "", shContainer("ok", write("/big", 1024)+"; echo written; sleep 3600", limit("50Mi"))))
	a.write("crit.yaml", podYAML("crit", "Always", 1, "  priority: 2000001000\n", shContainer("crit", write("/big", 3072)+"; echo written; sleep 3600", limit("1Mi"))))

	want := map[string]string{
		"dir": `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `,
		"pod": "Pod ephemeral local storage usage exceeds the total limit of containers 2Mi. ",
		"ctr": `Container w exceeded its local ephemeral storage limit "1Mi". `,
	}
	var dirUID string
	condChecked := map[string]bool{} // an evicted pod's status seen and checked
	a.waitEvicted(90*time.Second, "dir, pod and ctr evicted", func(m map[string]time.Time) bool { return len(m) >= 3 },
		func(n string, e eviction, first bool) {
			if first {
				t.Logf("%s evicted: %s (status seen: %t)", n, e.Message, e.Pod != nil)
				if e.Message != want[n] {
					t.Errorf("%s: message %q, want %q", n, e.Message, want[n])
				}
				if n == "dir" {
					dirUID = e.UID
				}
			}
			if e.Pod == nil || condChecked[n] {
				return
			}
			condChecked[n] = true
			for _, c := range e.Pod.Status.Conditions {
				if c.Type == "DisruptionTarget" {
					t.Errorf("%s: DisruptionTarget condition on a local storage eviction", n)
				}
			}
		})
	if !condChecked["pod"] {
		// Seen by its event only: pod is evicted again on every run, its Failed spells growing
		// with its backoff (one interval, doubling), so a later one is seen.
		p := a.waitPod(60*time.Second, "pod-"+node, "pod seen Failed/Evicted", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted"
		})
		if p.Status.Message != want["pod"] {
			t.Errorf("pod: message %q, want %q", p.Status.Message, want["pod"])
		}
		for _, c := range p.Status.Conditions {
			if c.Type == "DisruptionTarget" {
				t.Errorf("pod: DisruptionTarget condition on a local storage eviction")
			}
		}
	}
	for _, n := range []string{"ok", "crit"} {
		p := a.waitPod(10*time.Second, n+"-"+node, n+" still running", running)
		if out, _ := a.cli("logs", n+"-"+node); !strings.Contains(out, "written") {
			t.Errorf("%s never wrote its data: %q", n, out)
		}
		if p.Status.Reason == "Evicted" {
			t.Errorf("%s evicted", n)
		}
	}
	// The evicted pod's emptyDir is gone from the node (freed at the eviction).
	a.eventually(10*time.Second, "dir's emptyDir freed", func() (bool, string) {
		_, err := os.Stat(filepath.Join(a.root, "pods", dirUID, "volumes", "empty-dir", "scratch", "f"))
		return os.IsNotExist(err), fmt.Sprint(err)
	})
	if _, err := os.Stat(filepath.Join(hostPath, "dir-wrote")); err != nil {
		t.Fatalf("dir never ran its first write: %v", err)
	}
	// After its backoff (one interval) dir runs again, from scratch: an empty emptyDir.
	a.waitPod(60*time.Second, "dir-"+node, "dir running again", running)
	a.eventually(20*time.Second, "dir's new emptyDir empty", func() (bool, string) {
		out, err := a.cli("logs", "dir-"+node)
		return err == nil && strings.Contains(out, "scratch: 0 files"), out
	})
	out, err := a.cli("describe", "pod", "dir-"+node)
	if err != nil || !strings.Contains(out, "Evicted") || !strings.Contains(out, "its backoff has passed") {
		t.Errorf("describe shows no Evicted and Restarted events (%v):\n%s", err, out)
	}
}
