package e2e

// The fault suite (`make chaos`; the same cases at small sizes run in `make test`). Every case
// says what it does and then checks, through the agent's API and straight in containerd, that
// nothing is lost: no pod missing, no duplicate container, no leaked container, task, snapshot
// or mount, and every manifest honoured. PODKEEPER_CHAOS_FULL=1 runs the full sizes of the
// issue (110 pods, a 30 s containerd outage, 1000 edits).

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/internal/testenv"
	"github.com/podkeeper/podkeeper/podrunner"
	pkruntime "github.com/podkeeper/podkeeper/podrunner/runtime"
)

func chaosFull() bool { return os.Getenv("PODKEEPER_CHAOS_FULL") != "" }

// size returns full under PODKEEPER_CHAOS_FULL, else short.
func size(short, full int) int {
	if chaosFull() {
		return full
	}
	return short
}

// chaosSleeper runs until SIGTERM and exits at once on it.
const chaosSleeper = `trap "exit 0" TERM; sleep 3600 & wait`

func chaosPod(name, env string) string {
	extra := ""
	if env != "" {
		extra = fmt.Sprintf("    env:\n    - name: GEN\n      value: %q\n", env)
	}
	return podYAML(name, "Always", 1, "", shContainer("c", chaosSleeper, extra))
}

// writeN writes n one-container pods c<prefix>-<i> into their own files.
func (a *agent) writeN(prefix string, n int) []string {
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		a.write(name+".yaml", chaosPod(name, ""))
		names = append(names, name+"-"+node)
	}
	return names
}

// waitAllRunning waits until exactly the pods named run, each with all its containers running,
// and returns them by name.
func (a *agent) waitAllRunning(timeout time.Duration, names []string) map[string]corev1.Pod {
	a.t.Helper()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var got map[string]corev1.Pod
	a.eventually(timeout, fmt.Sprintf("%d pods Running", len(names)), func() (bool, string) {
		pods, err := a.pods()
		if err != nil {
			return false, err.Error()
		}
		got = map[string]corev1.Pod{}
		notRunning := 0
		for _, p := range pods {
			if !want[p.Name] {
				return false, "unexpected pod " + p.Name
			}
			if !running(&p) || p.DeletionTimestamp != nil {
				notRunning++
			}
			got[p.Name] = p
		}
		return len(got) == len(want) && notRunning == 0, fmt.Sprintf("%d listed of %d, %d not running", len(got), len(want), notRunning)
	})
	return got
}

// kill9MidStart kills the agent (kill -9) once containerd runs the first of its pods' tasks,
// usually before all of them, and returns what containerd held right after.
func (a *agent) kill9MidStart(t *testing.T, stateDir string) audit {
	t.Helper()
	a.eventually(2*time.Minute, "first tasks running", func() (bool, string) {
		au := takeAudit(t, a.address, stateDir, a.ns)
		return len(au.tasks) >= 1, fmt.Sprintf("%d tasks", len(au.tasks))
	})
	a.kill9()
	return takeAudit(t, a.address, stateDir, a.ns)
}

// podCgroups are the pod cgroup directories under the agent's cgroup parent (memory hierarchy).
func (a *agent) podCgroups() []string {
	var dirs []string
	for _, level := range []string{"", "burstable", "besteffort"} {
		dir := filepath.Join("/sys/fs/cgroup/memory", a.cgroupParent, level)
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), "pod") {
				dirs = append(dirs, filepath.Join(dir, e.Name()))
			}
		}
	}
	return dirs
}

// audit is what containerd holds for one namespace, read without the agent.
type audit struct {
	containers map[string]containers.Container
	tasks      map[string]uint32 // container ID -> PID of its running task
	// running: container IDs that run: a running task, or a sandbox without a process (its
	// label says so, no exit recorded) whose namespaces are still pinned (nsfs mounts).
	running map[string]bool
	stopped map[string]bool // container IDs whose task exists but is not running
	active  map[string]bool // active snapshot keys
	mounts  []string        // rootfs mounts of the namespace's task bundles
}

// dialContainerd is a containerd client on address and a context in namespace ns bounded by
// timeout; both end with the returned close.
func dialContainerd(t *testing.T, address, ns string, timeout time.Duration) (context.Context, *containerd.Client, func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	cl, err := containerd.New(address)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	return namespaces.WithNamespace(ctx, ns), cl, func() { cl.Close(); cancel() }
}

func takeAudit(t *testing.T, address, stateDir, ns string) audit {
	t.Helper()
	ctx, cl, closeCl := dialContainerd(t, address, ns, 30*time.Second)
	defer closeCl()
	au := audit{containers: map[string]containers.Container{}, tasks: map[string]uint32{}, running: map[string]bool{}, stopped: map[string]bool{}, active: map[string]bool{}}
	cs, err := cl.ContainerService().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		au.containers[c.ID] = containers.Container{ID: c.ID, Labels: c.Labels, SnapshotKey: c.SnapshotKey}
	}
	ts, err := cl.TaskService().List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range ts.Tasks {
		if tk.Status.String() == "RUNNING" {
			au.tasks[tk.ID] = tk.Pid
			au.running[tk.ID] = true
		} else {
			au.stopped[tk.ID] = true
		}
	}
	err = cl.SnapshotService("overlayfs").Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if info.Kind == snapshots.KindActive {
			au.active[info.Name] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(stateDir, "io.containerd.runtime.v2.task", ns) + "/"
	var nsPins []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && strings.HasPrefix(f[4], prefix) {
			au.mounts = append(au.mounts, strings.TrimPrefix(f[4], prefix))
		}
		if sep := slices.Index(f, "-"); sep > 4 && sep+1 < len(f) && f[sep+1] == "nsfs" {
			nsPins = append(nsPins, f[4])
		}
	}
	for id, c := range au.containers {
		if c.Labels[pkruntime.LabelNoProcess] == "true" && c.Labels[pkruntime.LabelFinishedAt] == "" &&
			slices.ContainsFunc(nsPins, func(mp string) bool { return strings.Contains(mp, id) }) {
			au.running[id] = true
		}
	}
	return au
}

// checkNothingLost asserts the containerd side of "nothing lost" for the pods the API lists:
// every listed pod has one running sandbox and one running instance of each container; no
// container, task, snapshot or mount belongs to anything else.
func checkNothingLost(t *testing.T, a *agent, stateDir string, pods map[string]corev1.Pod) audit {
	t.Helper()
	au := takeAudit(t, a.address, stateDir, a.ns)
	uids := map[string]string{}
	for name, p := range pods {
		uids[string(p.UID)] = name
	}
	runningOf := map[string]int{} // "<uid>/<container>" -> running instances
	for id, c := range au.containers {
		uid := c.Labels[pkruntime.LabelPodUID]
		if _, ok := uids[uid]; !ok {
			t.Errorf("leaked container %s of pod %s (uid %s), not listed by the API", id, c.Labels[pkruntime.LabelPodName], uid)
			continue
		}
		if au.running[id] {
			runningOf[uid+"/"+c.Labels[pkruntime.LabelContainerName]+"/"+c.Labels[pkruntime.LabelKind]]++
		}
		if c.SnapshotKey != "" && !au.active[c.SnapshotKey] {
			t.Errorf("container %s lost its snapshot %s", id, c.SnapshotKey)
		}
	}
	for uid, name := range uids {
		p := pods[name]
		if n := runningOf[uid+"//"+string(podrunner.KindSandbox)]; n != 1 {
			t.Errorf("pod %s: %d running sandboxes, want 1", name, n)
		}
		for _, c := range p.Spec.Containers {
			if n := runningOf[uid+"/"+c.Name+"/"+string(podrunner.KindApp)]; n != 1 {
				t.Errorf("pod %s container %s: %d running instances, want 1", name, c.Name, n)
			}
		}
	}
	for key := range au.active {
		owned := false
		for _, c := range au.containers {
			if c.SnapshotKey == key {
				owned = true
			}
		}
		if !owned {
			t.Errorf("leaked snapshot %s (no container)", key)
		}
	}
	for id := range au.tasks {
		if _, ok := au.containers[id]; !ok {
			t.Errorf("leaked task %s (no container)", id)
		}
	}
	for _, m := range au.mounts {
		id := strings.SplitN(m, "/", 2)[0]
		_, run := au.tasks[id]
		if !run && !au.stopped[id] {
			t.Errorf("leaked mount %s (no task)", m)
		}
	}
	checkNoLeakedIPsOrCgroups(t, a, au, uids, pods)
	checkNoLeakedNamespaces(t, a, au, uids, pods)
	return au
}

// checkNoLeakedIPsOrCgroups asserts that every IP the agent's host-local IPAM holds belongs to a
// listed pod's running sandbox, and every pod cgroup under the agent's parent to a listed pod.
func checkNoLeakedIPsOrCgroups(t *testing.T, a *agent, au audit, uids map[string]string, pods map[string]corev1.Pod) {
	t.Helper()
	ipDir := a.network().Default.DataDir
	held := 0
	_ = filepath.WalkDir(ipDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || net.ParseIP(d.Name()) == nil {
			return nil
		}
		held++
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		id := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
		c, ok := au.containers[id]
		running := au.running[id]
		if !ok || !running || c.Labels[pkruntime.LabelKind] != string(podrunner.KindSandbox) {
			t.Errorf("leaked IP %s (held by %q, not a running sandbox)", d.Name(), id)
		} else if _, listed := uids[c.Labels[pkruntime.LabelPodUID]]; !listed {
			t.Errorf("leaked IP %s of an unlisted pod %s", d.Name(), c.Labels[pkruntime.LabelPodName])
		}
		return nil
	})
	want := 0
	for _, p := range pods {
		if !p.Spec.HostNetwork {
			want++
		}
	}
	if held != want {
		t.Errorf("host-local holds %d pod IPs, want %d (one per listed pod network)", held, want)
	}
	if a.cgroupParent == "" {
		return
	}
	seen := map[string]bool{}
	for _, dir := range a.podCgroups() {
		uid := strings.TrimPrefix(filepath.Base(dir), "pod")
		seen[uid] = true
		if _, listed := uids[uid]; !listed {
			t.Errorf("leaked pod cgroup %s", strings.TrimPrefix(dir, "/sys/fs/cgroup/memory/"))
		}
	}
	if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/memory", a.cgroupParent)); err == nil {
		for uid, name := range uids {
			if !seen[uid] {
				t.Errorf("pod %s has no pod cgroup under %s", name, a.cgroupParent)
			}
		}
	}
}

// checkNoLeakedNamespaces asserts that every namespace pinned under the agent's root and netns
// dirs belongs to a listed pod's running sandbox, and that each such sandbox has its own: network
// and UTS unless hostNetwork, IPC unless hostIPC.
func checkNoLeakedNamespaces(t *testing.T, a *agent, au audit, uids map[string]string, pods map[string]corev1.Pod) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{a.root + "/", a.network().NetnsDir + "/"}
	pins := map[string]int{} // sandbox ID -> its pinned namespaces
	for _, l := range strings.Split(string(b), "\n") {
		// ID parent major:minor root mount-point options [optional...] - fstype source super-options
		f := strings.Fields(l)
		sep := slices.Index(f, "-")
		if sep < 0 || sep+1 >= len(f) || f[sep+1] != "nsfs" || len(f) < 5 {
			continue
		}
		mp := f[4]
		if !slices.ContainsFunc(dirs, func(d string) bool { return strings.HasPrefix(mp, d) }) {
			continue
		}
		owner := ""
		for id, c := range au.containers {
			if c.Labels[pkruntime.LabelKind] == string(podrunner.KindSandbox) && strings.Contains(mp, id) {
				owner = id
			}
		}
		running := au.running[owner]
		_, listed := uids[au.containers[owner].Labels[pkruntime.LabelPodUID]]
		if owner == "" || !running || !listed {
			t.Errorf("leaked pinned namespace %s (sandbox %q, running %v, pod listed %v)", mp, owner, running, listed)
			continue
		}
		pins[owner]++
	}
	for id, c := range au.containers {
		if !au.running[id] || c.Labels[pkruntime.LabelKind] != string(podrunner.KindSandbox) {
			continue
		}
		p, ok := pods[uids[c.Labels[pkruntime.LabelPodUID]]]
		if !ok {
			continue
		}
		want := 0
		if !p.Spec.HostNetwork {
			want += 2 // network, UTS
		}
		if !p.Spec.HostIPC {
			want++
		}
		if pins[id] != want {
			t.Errorf("sandbox %s of pod %s has %d pinned namespaces, want %d", id, p.Name, pins[id], want)
		}
	}
}

// pidsOf maps "<pod>/<container-id>" to the running task PID of every container and sandbox.
func pidsOf(au audit) map[string]uint32 {
	out := map[string]uint32{}
	for id, pid := range au.tasks {
		out[id] = pid
	}
	return out
}

func samePIDs(t *testing.T, before, after map[string]uint32, what string) {
	t.Helper()
	for id, pid := range before {
		if after[id] != pid {
			t.Errorf("%s: task %s PID %d before, %d after (restarted or lost)", what, id, pid, after[id])
		}
	}
	for id := range after {
		if _, ok := before[id]; !ok {
			t.Errorf("%s: new task %s (a restart or a duplicate)", what, id)
		}
	}
}

func noRestarts(t *testing.T, pods map[string]corev1.Pod, what string) {
	t.Helper()
	for name, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount != 0 {
				t.Errorf("%s: pod %s container %s restartCount %d, want 0", what, name, cs.Name, cs.RestartCount)
			}
		}
	}
}

// chaosLog records a case's result line for docs/reliability.md (printed with -v).
func chaosLog(t *testing.T, format string, args ...any) {
	t.Logf("RESULT %s: "+format, append([]any{t.Name()}, args...)...)
}

// kill -9 of the agent while it starts many pods, then again at steady state: the restarted
// agent adopts what runs (same task PIDs, no restarts, no duplicates) and finishes the start.
func TestChaosKill9DuringStart(t *testing.T) {
	n := size(8, 110)
	a := startAgent(t, "pk-chaos-kill")
	stateDir := filepath.Join(env.Dir, "state")
	names := a.writeN("k", n)
	mid := a.kill9MidStart(t, stateDir)
	a.start()
	pods := a.waitAllRunning(time.Duration(n)*2*time.Second+time.Minute, names)
	noRestarts(t, pods, "after kill -9 during start")
	au := checkNothingLost(t, a, stateDir, pods)
	// Everything that ran when the agent died runs on, untouched.
	for id, pid := range mid.tasks {
		if au.tasks[id] != pid {
			t.Errorf("task %s ran with PID %d when the agent died, now %d", id, pid, au.tasks[id])
		}
	}
	chaosLog(t, "%d pods; %d tasks running at the kill; after restart %d/%d pods Running, %d tasks, 0 restarts, no leaks: %v", n, len(mid.tasks), len(pods), n, len(au.tasks), !t.Failed())

	// Steady state: kill -9 again, nothing may change.
	a.kill9()
	a.start()
	pods = a.waitAllRunning(time.Minute, names)
	noRestarts(t, pods, "after kill -9 at steady state")
	after := checkNothingLost(t, a, stateDir, pods)
	samePIDs(t, pidsOf(au), pidsOf(after), "kill -9 at steady state")
	chaosLog(t, "steady state: %d pods adopted, %d task PIDs unchanged, no leaks: %v", len(pods), len(after.tasks), !t.Failed())
}

// kill -9 during a start, and the manifests removed while the agent is down: at its start it
// finds pods half made (sandboxes with their network, snapshots, containers created or not) that
// nothing asks for any more, and must remove all of it.
func TestChaosKill9DuringStartThenRemoved(t *testing.T) {
	n := size(40, 110) // 8 pods all run before the first task is seen: no kill mid-start
	a := startAgent(t, "pk-chaos-killrm")
	stateDir := filepath.Join(env.Dir, "state")
	names := a.writeN("g", n)
	mid := a.kill9MidStart(t, stateDir)
	for _, name := range names {
		a.remove(strings.TrimSuffix(name, "-"+node) + ".yaml")
	}
	a.start()
	a.waitAllRunning(time.Minute, nil)
	a.eventually(time.Minute, "no container left", func() (bool, string) {
		au := takeAudit(t, a.address, stateDir, a.ns)
		return len(au.containers) == 0, fmt.Sprintf("%d containers", len(au.containers))
	})
	// A pod cgroup still busy at the pod's removal (a process of an interrupted create that
	// containerd or podkeeper ends only then) is removed in the background, every second.
	a.eventually(30*time.Second, "no pod cgroup left", func() (bool, string) {
		var left []string
		for _, dir := range a.podCgroups() {
			// What keeps it busy: each process and its parent.
			out, _ := exec.Command("sh", "-c", "for f in "+dir+"/*/cgroup.procs; do echo $f; for p in $(cat $f); do ps -o pid,ppid,stat,cmd -p $p; pp=$(ps -o ppid= -p $p); ps -o pid,cmd -p $pp; done; done").CombinedOutput()
			left = append(left, dir, string(out))
		}
		return len(left) == 0, strings.Join(left, " ")
	})
	checkNothingLost(t, a, stateDir, map[string]corev1.Pod{})
	chaosLog(t, "%d pods written; kill -9 with %d containers, %d tasks, %d snapshots; manifests removed; after restart no pod, no container, no leaks: %v",
		n, len(mid.containers), len(mid.tasks), len(mid.active), !t.Failed())
}

// "Reboot": while the agent is down every task is gone (killed and deleted, as after a reboot),
// and so are the namespaces the sandboxes pinned (a reboot takes every mount), and for half of
// the pods the containers too. At its start the agent brings every pod back with one running
// instance of each container (in a new sandbox) and leaves nothing behind.
func TestChaosReboot(t *testing.T) {
	n := size(4, 20)
	a := startAgent(t, "pk-chaos-reboot")
	stateDir := filepath.Join(env.Dir, "state")
	names := a.writeN("r", n)
	a.waitAllRunning(time.Duration(n)*2*time.Second+time.Minute, names)
	a.kill9()

	nctx, cl, closeCl := dialContainerd(t, a.address, a.ns, time.Minute)
	defer closeCl()
	cs, err := cl.Containers(nctx)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].ID() < cs[j].ID() })
	deleted := 0
	for i, c := range cs {
		endTask(t, nctx, c)
		if i%2 == 0 {
			if err := c.Delete(nctx, containerd.WithSnapshotCleanup); err != nil {
				t.Fatal(err)
			}
			deleted++
		}
	}
	unpinned := unmountPins(t, a)
	a.start()
	pods := a.waitAllRunning(time.Duration(n)*2*time.Second+time.Minute, names)
	au := checkNothingLost(t, a, stateDir, pods)
	chaosLog(t, "%d pods, %d containers: all tasks removed, %d pinned namespaces unmounted, %d containers deleted while the agent was down; after its start %d/%d pods Running, %d tasks, no leaks: %v",
		n, len(cs), unpinned, deleted, len(pods), n, len(au.tasks), !t.Failed())
}

// endTask kills container c's task, if it has one, waits for its exit and deletes it, as a
// reboot takes it.
func endTask(t *testing.T, ctx context.Context, c containerd.Container) {
	t.Helper()
	tk, err := c.Task(ctx, nil)
	if err != nil {
		return
	}
	ch, _ := tk.Wait(ctx)
	_ = tk.Kill(ctx, syscall.SIGKILL)
	<-ch
	if _, err := tk.Delete(ctx); err != nil {
		t.Fatal(err)
	}
}

// endPodTasks kills and deletes the task of every container in recs (endTask), straight through
// containerd, as a reboot or a dead shim would end them.
func endPodTasks(t *testing.T, ctx context.Context, cl *containerd.Client, recs []podrunner.ContainerRecord) {
	t.Helper()
	for _, r := range recs {
		if c, err := cl.LoadContainer(ctx, r.ID); err == nil {
			endTask(t, ctx, c)
		}
	}
}

// unmountPins unmounts every namespace pinned under the agent's root and netns dirs (as a reboot
// would) and returns how many.
func unmountPins(t *testing.T, a *agent) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		sep := slices.Index(f, "-")
		if sep <= 4 || sep+1 >= len(f) || f[sep+1] != "nsfs" {
			continue
		}
		if mp := f[4]; strings.HasPrefix(mp, a.root+"/") || strings.HasPrefix(mp, a.network().NetnsDir+"/") {
			if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil {
				t.Fatalf("unmount %s: %v", mp, err)
			}
			n++
		}
	}
	return n
}

// containerd stopped (SIGTERM) for a while, then started again on the same root and state: the
// agent's API keeps answering, the pods keep running (same PIDs, no restarts), and the agent
// reconnects, still reacts to exits, and catches up on an exit whose event was lost in an outage.
func TestChaosContainerdRestart(t *testing.T) {
	outage := time.Duration(size(3, 30)) * time.Second
	n := size(3, 20)
	dir, err := os.MkdirTemp("/tmp", "pkc-")
	if err != nil {
		t.Fatal(err)
	}
	cfg := pkruntime.ManagedConfig{
		Address: filepath.Join(dir, "c.sock"), Root: filepath.Join(dir, "root"), State: filepath.Join(dir, "state"),
		LogFile: filepath.Join(dir, "containerd.log"), Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	m, err := pkruntime.StartManaged(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop(); testenv.UnmountUnder(cfg.State); testenv.UnmountUnder(cfg.Root); os.RemoveAll(dir) })
	// No safety-net relist within the test: what the agent does after the reconnect, it does because
	// the event stream came back.
	a := startAgentAt(t, "pk-chaos-ctrd", cfg.Address, "--sync-frequency", "1h") // cleaned up before containerd stops
	names := a.writeN("d", n)
	pods := a.waitAllRunning(time.Minute+time.Duration(n)*2*time.Second, names)
	before := checkNothingLost(t, a, cfg.State, pods)

	m.Stop()
	t0 := time.Now()
	for time.Since(t0) < outage {
		if _, err := a.cli("get", "pods"); err != nil {
			t.Fatalf("API during the containerd outage: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if m, err = pkruntime.StartManaged(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // a restart storm would show within the agent's next syncs
	pods = a.waitAllRunning(time.Minute, names)
	noRestarts(t, pods, "after the containerd restart")
	after := checkNothingLost(t, a, cfg.State, pods)
	samePIDs(t, pidsOf(before), pidsOf(after), "containerd restart")

	// The agent is reconnected: it sees an exit and restarts the container.
	a.killOnceRestarted(pods[names[0]], "restarted after the reconnect")

	// A container that exits while containerd is down is restarted once containerd is back. The
	// outage outlasts the shim's retries of its exit event (about 15 s in containerd 1.6), so the
	// event is lost and the restart comes from the agent re-reading every pod on reconnect.
	pid := a.runningPID(string(pods[names[1]].UID), "c") // (read from containerd)
	m.Stop()
	if err := syscall.Kill(int(pid), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Second)
	if m, err = pkruntime.StartManaged(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	a.waitPod(time.Minute, names[1], "restarted after an exit during the outage", func(p *corev1.Pod) bool {
		return running(p) && status(p, "c").RestartCount == 1
	})
	chaosLog(t, "%d pods; containerd down %v; API answered throughout; after restart %d/%d Running, %d task PIDs unchanged, 0 restarts; exit handled after reconnect, and an exit during a second, 20 s outage (its event lost) on reconnect: %v",
		n, outage, len(pods), n, len(after.tasks), !t.Failed())
}

// The agent's own containerd (--containerd managed) killed (kill -9, as by the OOM killer)
// while the agent starts many pods, and again at steady state: the agent starts it again, the
// pods keep running (same PIDs, no restarts), the interrupted start completes, nothing leaks,
// and exits are seen again. Before 2026-12-07 nothing started a crashed managed containerd: the
// agent waited for it for good (no restarts, no exec probes) until the agent itself restarted.
func TestChaosManagedContainerdKill9(t *testing.T) {
	n := size(8, 110)
	dir, err := os.MkdirTemp("/tmp", "pkc-")
	if err != nil {
		t.Fatal(err)
	}
	address, stateDir := filepath.Join(dir, "c.sock"), filepath.Join(dir, "state") // the agent's managed layout
	var cleanupCtrd *pkruntime.Managed
	t.Cleanup(func() { // last: after the agent's clean-up removed its pods through it
		if cleanupCtrd != nil {
			cleanupCtrd.Stop()
		}
		testenv.UnmountUnder(dir)
		os.RemoveAll(dir)
	})
	a := startAgentAt(t, "pk-chaos-managed", address, "--containerd", "managed")
	t.Cleanup(func() {
		// The agent stops its containerd when it stops: start one on the same root and state
		// for the agent's clean-up (which runs next) to remove the pods through.
		a.stop()
		m, err := pkruntime.StartManaged(context.Background(), pkruntime.ManagedConfig{
			Address: address, Root: filepath.Join(a.root, "containerd"), State: stateDir,
			LogFile: filepath.Join(dir, "cleanup-containerd.log"), Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		})
		if err != nil {
			t.Errorf("containerd for the clean-up: %v", err)
		}
		cleanupCtrd = m
	})
	ctrd := a.managedContainerdPID()
	names := a.writeN("m", n)
	var atKill audit
	a.eventually(2*time.Minute, "first tasks running", func() (bool, string) {
		atKill = takeAudit(t, address, stateDir, a.ns)
		return len(atKill.tasks) >= 1, fmt.Sprintf("%d tasks", len(atKill.tasks))
	})
	if err := syscall.Kill(ctrd, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	mid := time.Now()
	var again int
	a.eventually(30*time.Second, "containerd started again by the agent", func() (bool, string) {
		again = a.managedContainerdPID()
		return again != 0 && again != ctrd && pkruntime.Answers(address), fmt.Sprintf("pid %d", again)
	})
	back := time.Since(mid)
	pods := a.waitAllRunning(time.Duration(n)*2*time.Second+time.Minute, names)
	noRestarts(t, pods, "after containerd's kill -9 during the start")
	au := checkNothingLost(t, a, stateDir, pods)
	for id, pid := range atKill.tasks { // what ran at the kill runs on, untouched
		if au.tasks[id] != pid {
			t.Errorf("task %s ran with PID %d when containerd died, now %d", id, pid, au.tasks[id])
		}
	}
	chaosLog(t, "%d pods; containerd killed mid-start (%d containers, %d tasks running), answering again %v later; %d/%d pods Running, %d tasks, 0 restarts, no leaks: %v",
		n, len(atKill.containers), len(atKill.tasks), back.Round(time.Millisecond), len(pods), n, len(au.tasks), !t.Failed())

	// Steady state: the same again, nothing may change.
	if err := syscall.Kill(again, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.eventually(30*time.Second, "containerd started again by the agent", func() (bool, string) {
		pid := a.managedContainerdPID()
		return pid != 0 && pid != again && pkruntime.Answers(address), fmt.Sprintf("pid %d", pid)
	})
	time.Sleep(3 * time.Second) // a restart storm would show within the agent's next syncs
	pods = a.waitAllRunning(time.Minute, names)
	noRestarts(t, pods, "after containerd's kill -9 at steady state")
	after := checkNothingLost(t, a, stateDir, pods)
	samePIDs(t, pidsOf(au), pidsOf(after), "containerd kill -9 at steady state")

	// Exits are seen again: a killed container is restarted.
	a.killOnceRestarted(pods[names[0]], "restarted after containerd came back")
	b, _ := os.ReadFile(filepath.Join(a.dir, "agent.log"))
	if got := strings.Count(string(b), "managed containerd exited; starting it again"); got != 2 {
		t.Errorf("the agent logged %d restarts of its containerd, want 2", got)
	}
	chaosLog(t, "steady state: containerd killed again and started again; %d pods, %d task PIDs unchanged, 0 restarts, no leaks; a container killed afterwards restarted: %v",
		len(pods), len(after.tasks), !t.Failed())
}

// killOnceRestarted kills (SIGKILL) container c of p, which has not restarted yet, and waits
// until the agent has restarted it (restartCount 1, Running).
func (a *agent) killOnceRestarted(p corev1.Pod, why string) {
	a.t.Helper()
	if err := syscall.Kill(int(a.runningPID(string(p.UID), "c")), syscall.SIGKILL); err != nil {
		a.t.Fatal(err)
	}
	a.waitPod(time.Minute, p.Name, why, func(p *corev1.Pod) bool {
		return running(p) && status(p, "c").RestartCount == 1
	})
}

// managedContainerdPID is the PID of the containerd the agent runs as its child (0: none).
func (a *agent) managedContainerdPID() int {
	a.mu.Lock()
	agent := a.cmd.Process.Pid
	a.mu.Unlock()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		if end < 0 || !strings.HasSuffix(s[:end], "(containerd") {
			continue
		}
		if f := strings.Fields(s[end+1:]); len(f) > 1 && f[1] == strconv.Itoa(agent) {
			return pid
		}
	}
	return 0
}

// A pod's runc shim killed (kill -9): containerd reports its containers' tasks exited (and
// ends their processes); the agent restarts them in the same sandbox, as after any exit, and
// their exec probes answer again; the other pods are untouched and nothing leaks.
func TestChaosShimKill9(t *testing.T) {
	n := 3
	metricsAddr := freeAddr(t)
	a := startAgentAt(t, "pk-chaos-shim", env.Address, "--metrics-address", metricsAddr)
	stateDir := filepath.Join(env.Dir, "state")
	probe := "    readinessProbe:\n      exec:\n        command: [\"true\"]\n      periodSeconds: 1\n"
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("sh-%d", i)
		a.write(name+".yaml", podYAML(name, "Always", 1, "", shContainer("a", chaosSleeper, probe), shContainer("b", chaosSleeper, "")))
		names = append(names, name+"-"+node)
	}
	a.waitAllReady(time.Minute, names)
	pods := a.waitAllRunning(time.Minute, names)
	before := checkNothingLost(t, a, stateDir, pods)

	victim := pods[names[0]]
	killed := time.Now()
	a.killPodShim(string(victim.UID))
	a.waitPod(time.Minute, names[0], "both containers restarted", func(p *corev1.Pod) bool {
		return running(p) && status(p, "a").RestartCount == 1 && status(p, "b").RestartCount == 1
	})
	back := time.Since(killed)
	a.waitAllReady(30*time.Second, names) // the victim's exec probe answers through its new shim
	ready := time.Since(killed)
	pods = a.waitAllRunning(time.Minute, names)
	if got := status(ptr(pods[names[0]]), "a").LastTerminationState.Terminated; got == nil {
		t.Errorf("container a of %s: no last termination state after its shim's death", names[0])
	} else {
		t.Logf("container a's last state after its shim's death: exit code %d, reason %s", got.ExitCode, got.Reason)
	}
	after := checkNothingLost(t, a, stateDir, pods)
	others := map[string]uint32{}
	for id, pid := range pidsOf(before) {
		if before.containers[id].Labels[pkruntime.LabelPodUID] != string(victim.UID) {
			others[id] = pid
		}
	}
	for id, pid := range others {
		if after.tasks[id] != pid {
			t.Errorf("task %s of another pod: PID %d before the shim's death, %d after", id, pid, after.tasks[id])
		}
	}
	delete(pods, names[0])
	noRestarts(t, pods, "the other pods, after a shim's death")
	if got := len(pkruntime.RuncShimPIDs(a.address, a.ns)); got != n {
		t.Errorf("%d runc shims of the namespace run, want %d (one per pod)", got, n)
	}
	if got := metricLine(t, metricsAddr, "podkeeper_container_tasks_lost_total"); got != "podkeeper_container_tasks_lost_total 2" {
		t.Errorf("metrics: %q, want the 2 lost tasks counted", got)
	}
	chaosLog(t, "%d pods of 2 containers; one pod's shim killed: its 2 containers Running again (restartCount 1) after %v, Ready after %v; %d tasks of the other pods unchanged, 0 restarts, %d shims, no leaks: %v",
		n, back.Round(time.Millisecond), ready.Round(time.Millisecond), len(others), n, !t.Failed())
}

// Tasks gone while the agent is down: (1) the shims of two pods killed (an Always pod and a
// restartPolicy Never one), (2) then, as a reboot does, a Never pod's task killed and deleted and
// every pinned namespace unmounted. The restarted agent, which saw none of it, reads each
// container its mark says had started as exited (255, Unknown, as containerd's CRI records a
// task it lost): the Always pod restarts (restartCount 1) in its sandbox, the Never pods end
// Failed and never run again, a completed Never pod stays Succeeded. Before the marks, each was
// run again as the same instance (restartCount 0), the Never ones a second time.
func TestChaosTasksGoneWhileAgentDown(t *testing.T) {
	a := startAgent(t, "pk-chaos-gone")
	stateDir := filepath.Join(env.Dir, "state")
	a.write("always.yaml", podYAML("always", "Always", 1, "", shContainer("c", chaosSleeper, "")))
	a.write("never.yaml", podYAML("never", "Never", 1, "", shContainer("c", chaosSleeper, "")))
	a.write("done.yaml", podYAML("done", "Never", 1, "", shContainer("c", "echo hi", "")))
	a.waitPod(time.Minute, "done-"+node, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	pods := map[string]corev1.Pod{}
	for _, name := range []string{"always-" + node, "never-" + node} {
		pods[name] = *a.waitPod(time.Minute, name, "Running", running)
	}
	a.waitRanMarks(3) // done's too: it started

	// (1) Shims killed while the agent is down; containerd cleans up after them.
	a.kill9()
	a.killPodShim(string(pods["always-"+node].UID))
	a.killPodShim(string(pods["never-"+node].UID))
	a.eventually(30*time.Second, "containerd has deleted the dead shims' tasks", func() (bool, string) {
		au := takeAudit(t, a.address, stateDir, a.ns)
		return len(au.tasks)+len(au.stopped) == 0, fmt.Sprintf("%d tasks", len(au.tasks)+len(au.stopped))
	})
	a.start()
	always := a.waitPod(time.Minute, "always-"+node, "restarted (restartCount 1)", func(p *corev1.Pod) bool {
		return running(p) && status(p, "c").RestartCount == 1
	})
	// containerd may clean up after a dead shim only once asked about it, after the agent is
	// back: then the exit event (137) comes too and is used; else 255 Unknown.
	lostCode := func(c int32) bool { return c == 137 || c == 255 }
	if lt := status(always, "c").LastTerminationState.Terminated; lt == nil || !lostCode(lt.ExitCode) {
		t.Errorf("always: lastState %+v, want terminated 137 (event) or 255 (Unknown)", lt)
	}
	never := a.waitPod(time.Minute, "never-"+node, "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if st := status(never, "c"); st.State.Terminated == nil || !lostCode(st.State.Terminated.ExitCode) || st.RestartCount != 0 {
		t.Errorf("never: %+v restartCount %d, want terminated 137 or 255, 0 restarts", st.State, st.RestartCount)
	}

	// (2) A reboot: a Never pod's task and every pin gone while the agent is down.
	a.write("rebooted.yaml", podYAML("rebooted", "Never", 1, "", shContainer("c", chaosSleeper, "")))
	rb := a.waitPod(time.Minute, "rebooted-"+node, "Running", running)
	a.waitRanMarks(5) // (always has two instances now)
	a.kill9()
	nctx, cl, closeCl := dialContainerd(t, a.address, a.ns, time.Minute)
	defer closeCl()
	endPodTasks(t, nctx, cl, a.records(string(rb.UID)))
	unmountPins(t, a)
	a.start()
	rb = a.waitPod(time.Minute, "rebooted-"+node, "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if st := status(rb, "c"); st.State.Terminated == nil || st.State.Terminated.ExitCode != 255 || st.RestartCount != 0 {
		t.Errorf("rebooted: %+v restartCount %d, want terminated 255, 0 restarts", st.State, st.RestartCount)
	}
	// (3) A Never pod's task ended and deleted at once after its start, the agent down (no exit
	// event reaches it): the mark is made as the task's start returns, so the pod is not run
	// again. (Its first form, a containerd label written a second after the start, left that
	// second open: run again.)
	a.write("quick.yaml", podYAML("quick", "Never", 1, "", shContainer("c", chaosSleeper, "")))
	qk := a.waitPod(time.Minute, "quick-"+node, "Running", running)
	seenRunning := time.Now()
	a.kill9()
	endPodTasks(t, nctx, cl, a.records(string(qk.UID)))
	killedAfter := time.Since(seenRunning)
	a.start()
	qk = a.waitPod(time.Minute, "quick-"+node, "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if st := status(qk, "c"); st.State.Terminated == nil || !lostCode(st.State.Terminated.ExitCode) || st.RestartCount != 0 {
		t.Errorf("quick: %+v restartCount %d, want terminated 137 or 255, 0 restarts", st.State, st.RestartCount)
	}

	time.Sleep(2 * time.Second)
	for name, uid := range map[string]string{"never": string(never.UID), "rebooted": string(rb.UID), "quick": string(qk.UID)} {
		if r, ok := podrunner.NewPodView(a.records(uid)).Latest("c"); !ok || r.Attempt != 0 || r.State == podrunner.StateRunning {
			t.Errorf("%s: latest instance %+v, want attempt 0, not running (never run again)", name, r)
		}
	}
	done, err := a.pods()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range done {
		if p.Name == "done-"+node && p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("done: phase %s after the restarts, want Succeeded", p.Status.Phase)
		}
	}
	// Nothing left of the ended pods once their files go.
	for _, f := range []string{"never.yaml", "done.yaml", "rebooted.yaml", "quick.yaml"} {
		a.remove(f)
	}
	pods = a.waitAllRunning(time.Minute, []string{"always-" + node})
	checkNothingLost(t, a, stateDir, pods)
	chaosLog(t, "shims of an Always and a Never pod killed while the agent was down: restartCount 1 (lastState %d) and Failed (%d, not run again); a Never pod's task and pins gone as in a reboot: Failed (%d), not run again; a Never pod's task ended %v after it was seen Running, the agent down: Failed (%d), not run again; a completed Never pod still Succeeded; no leaks: %v",
		exitOf(corev1.ContainerStatus{State: status(always, "c").LastTerminationState}), exitOf(status(never, "c")), exitOf(status(rb, "c")), killedAfter.Round(time.Millisecond), exitOf(status(qk, "c")), !t.Failed())
}

// waitRanMarks waits until n container instances of the agent carry the started mark (made
// as their task's start returns).
func (a *agent) waitRanMarks(n int) {
	a.t.Helper()
	a.eventually(30*time.Second, fmt.Sprintf("%d containers marked as started", n), func() (bool, string) {
		marks, _ := filepath.Glob(filepath.Join(a.root, "pods", "*", "containers", "*", "*-ran"))
		return len(marks) >= n, fmt.Sprintf("%d marked", len(marks))
	})
}

// killPodShim kills (kill -9) the runc shim of pod uid: the one started for one of its
// containers (its -id), which serves them all.
func (a *agent) killPodShim(uid string) {
	a.t.Helper()
	shim := 0
	for _, r := range a.records(uid) {
		for _, pid := range pkruntime.RuncShimPIDs(a.address, a.ns) {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.Contains(string(b), "\x00"+r.ID+"\x00") {
				shim = pid
			}
		}
	}
	if shim == 0 {
		a.t.Fatalf("no runc shim of pod %s among this namespace's", uid)
	}
	if err := syscall.Kill(shim, syscall.SIGKILL); err != nil { // this test's pod's shim
		a.t.Fatal(err)
	}
}

// The same with restartPolicy Never, and with a pause process in the sandbox (--always-pause,
// whose task the shim serves too): the Never pod ends Failed with its container's exit, never
// run again (before the fix it was run a second time, as if never started); the other pod comes
// back in a new sandbox, as after its pause process's death.
func TestChaosShimKill9NeverAndPause(t *testing.T) {
	a := startAgentAt(t, "pk-chaos-shim2", env.Address, "--always-pause")
	a.write("never.yaml", podYAML("never", "Never", 1, "", shContainer("c", chaosSleeper, "")))
	a.write("paused.yaml", podYAML("paused", "Always", 1, "", shContainer("c", chaosSleeper, "")))
	pods := a.waitAllRunning(time.Minute, []string{"never-" + node, "paused-" + node})
	a.killPodShim(string(pods["never-"+node].UID))
	a.killPodShim(string(pods["paused-"+node].UID))
	p := a.waitPod(time.Minute, "never-"+node, "Failed with its container's exit", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed
	})
	cs := status(p, "c")
	if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 137 || cs.RestartCount != 0 {
		t.Errorf("never: container state %+v, restartCount %d; want terminated with 137, 0 restarts", cs.State, cs.RestartCount)
	}
	a.waitPod(time.Minute, "paused-"+node, "Running again in a new sandbox", func(p *corev1.Pod) bool {
		return running(p) && status(p, "c").RestartCount == 1
	})
	v := podrunner.NewPodView(a.records(string(pods["paused-"+node].UID)))
	if sb, _ := v.Sandbox(); sb.Attempt != 1 || sb.State != podrunner.StateRunning {
		t.Errorf("paused: sandbox %+v, want attempt 1 running", sb)
	}
	time.Sleep(3 * time.Second) // the Never pod is not run again
	v = podrunner.NewPodView(a.records(string(pods["never-"+node].UID)))
	if r, ok := v.Latest("c"); !ok || r.Attempt != 0 || r.State != podrunner.StateExited {
		t.Errorf("never: latest instance %+v, want attempt 0 exited", r)
	}
	chaosLog(t, "shims killed: the restartPolicy Never pod Failed (exit %d, 0 restarts, not run again); the --always-pause pod Running in a new sandbox (restartCount 1): %v",
		exitOf(cs), !t.Failed())
}

func exitOf(cs corev1.ContainerStatus) int32 {
	if cs.State.Terminated == nil {
		return -1
	}
	return cs.State.Terminated.ExitCode
}

func ptr[T any](v T) *T { return &v }

// metricLine is the line of the agent's /metrics at addr that starts with name and a space.
func metricLine(t *testing.T, addr, name string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, name+" ") {
			return l
		}
	}
	return ""
}

// Pod IPs run out (a /29: 5 addresses for pods): the pods beyond wait as the kubelet's do
// (FailedCreatePodSandBox, retried with backoff), the running ones are untouched, and once two
// pods are removed the waiting ones get their addresses and run; no address or namespace leaks.
func TestChaosPodIPsExhausted(t *testing.T) {
	a := startAgentAt(t, "pk-chaos-ipam", env.Address, "--pod-subnet", "/29")
	stateDir := filepath.Join(env.Dir, "state")
	names := a.writeN("ip", 7)
	var waiting []string
	a.eventually(time.Minute, "5 pods Running, 2 waiting for an address", func() (bool, string) {
		pods, err := a.pods()
		if err != nil {
			return false, err.Error()
		}
		run := 0
		waiting = nil
		for _, p := range pods {
			if running(&p) {
				run++
			} else {
				waiting = append(waiting, p.Name)
			}
		}
		return run == 5 && len(waiting) == 2, fmt.Sprintf("%d running, waiting %v", run, waiting)
	})
	a.waitEvent(30*time.Second, "FailedCreatePodSandBox", "no IP addresses available")
	time.Sleep(3 * time.Second) // retries meanwhile change nothing for the running pods
	pods, err := a.pods()
	if err != nil {
		t.Fatal(err)
	}
	run := map[string]corev1.Pod{}
	for _, p := range pods {
		if running(&p) {
			run[p.Name] = p
		}
	}
	if len(run) != 5 {
		t.Fatalf("%d pods running while the addresses are out, want 5", len(run))
	}
	noRestarts(t, run, "while the addresses are out")
	var removed []string
	for name := range run {
		if len(removed) == 2 {
			break
		}
		a.remove(strings.TrimSuffix(name, "-"+node) + ".yaml")
		removed = append(removed, name)
	}
	var rest []string
	for _, n := range names {
		if !slices.Contains(removed, n) {
			rest = append(rest, n)
		}
	}
	freed := time.Now()
	pods2 := a.waitAllRunning(2*time.Minute, rest)
	took := time.Since(freed)
	au := checkNothingLost(t, a, stateDir, pods2)
	chaosLog(t, "7 pods on 5 addresses: 5 Running, 2 waiting (FailedCreatePodSandBox: no IP addresses available), the 5 untouched; 2 removed: the 2 waiting Running %v later; %d tasks, no leaks: %v",
		took.Round(time.Millisecond), len(au.tasks), !t.Failed())
}

// Crash storm: many pods whose container exits at once, for a while. Each backs off as the
// kubelet's (10 s, doubling), keeps at most one dead instance beside its newest, and leaves
// no task, mount or snapshot of the instances it removed; the agent stays responsive.
func TestChaosCrashStorm(t *testing.T) {
	n := size(10, 40)
	window := time.Duration(size(25, 45)) * time.Second
	a := startAgent(t, "pk-chaos-crash")
	stateDir := filepath.Join(env.Dir, "state")
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("cr-%d", i)
		a.write(name+".yaml", podYAML(name, "Always", 1, "", shContainer("c", "echo crash; exit 3", "")))
		names = append(names, name+"-"+node)
	}
	start := time.Now()
	slowest := time.Duration(0)
	for time.Since(start) < window {
		t0 := time.Now()
		if _, err := a.cli("get", "pods"); err != nil {
			t.Fatalf("API during the crash storm: %v", err)
		}
		slowest = max(slowest, time.Since(t0))
		time.Sleep(500 * time.Millisecond)
	}
	pods, err := a.pods()
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != n {
		t.Fatalf("%d pods listed, want %d", len(pods), n)
	}
	uids := map[string]string{}
	minRestarts, maxRestarts := int32(1<<30), int32(0)
	for _, p := range pods {
		uids[string(p.UID)] = p.Name
		cs := status(&p, "c")
		minRestarts, maxRestarts = min(minRestarts, cs.RestartCount), max(maxRestarts, cs.RestartCount)
		// 10 s, 20 s, 40 s: within the window, 2 or 3 restarts; never a tight loop.
		if cs.RestartCount < 1 || cs.RestartCount > 4 {
			t.Errorf("pod %s: restartCount %d after %v of crashing, want the kubelet's back-off (1-4)", p.Name, cs.RestartCount, window)
		}
	}
	// The pods go on crashing while containerd is read, and its lists are not one snapshot: an
	// instance removed between them, or a new one started before the oldest goes, shows for a
	// moment. What is wrong stays: the audit is taken again until it is clean, for 30 s at most.
	var au audit
	a.eventually(30*time.Second, "no leak, at most 2 instances a pod", func() (bool, string) {
		au = takeAudit(t, a.address, stateDir, a.ns)
		problems := crashStormProblems(au, uids)
		return len(problems) == 0, strings.Join(problems, "; ")
	})
	chaosLog(t, "%d pods crashing at once for %v: restartCount %d-%d (back-off), %d containers (at most 2 instances a pod), %d tasks, no leaks; API answered throughout (slowest %v): %v",
		n, window, minRestarts, maxRestarts, len(au.containers), len(au.tasks), slowest.Round(time.Millisecond), !t.Failed())
}

// crashStormProblems lists what is wrong in au for the crash storm's pods (uid -> name): a
// container of no listed pod, more than 2 instances of a pod's container, a container without
// its snapshot, a snapshot without its container, a task mount without its container.
func crashStormProblems(au audit, uids map[string]string) []string {
	var out []string
	perPod := map[string]int{}
	for id, c := range au.containers {
		uid := c.Labels[pkruntime.LabelPodUID]
		if _, ok := uids[uid]; !ok {
			out = append(out, "container of no listed pod: "+id)
		}
		if c.Labels[pkruntime.LabelKind] == string(podrunner.KindApp) {
			perPod[uid]++
		}
		if c.SnapshotKey != "" && !au.active[c.SnapshotKey] {
			out = append(out, "container without its snapshot: "+id)
		}
	}
	for uid, k := range perPod {
		if k > 2 {
			out = append(out, fmt.Sprintf("pod %s keeps %d instances of its container", uids[uid], k))
		}
	}
	for key := range au.active {
		owned := false
		for _, c := range au.containers {
			owned = owned || c.SnapshotKey == key
		}
		if !owned {
			out = append(out, "snapshot without its container: "+key)
		}
	}
	for _, m := range au.mounts {
		if _, ok := au.containers[strings.SplitN(m, "/", 2)[0]]; !ok {
			out = append(out, "mount without its container: "+m)
		}
	}
	return out
}

// Log flood: containers writing their output as fast as they can, one of them a single line of
// 64 MiB without a newline. The writers are never blocked (each finishes its output), the log
// files keep to their size and count, the agent's memory stays bounded (a line is written in
// 16 KiB partial chunks, never held whole), and a probed pod beside them stays Ready.
func TestChaosLogFlood(t *testing.T) {
	a := startAgentAt(t, "pk-chaos-flood", env.Address, "--container-log-max-size", "4Mi", "--container-log-max-files", "3")
	probe := "    readinessProbe:\n      exec:\n        command: [\"true\"]\n      periodSeconds: 1\n"
	a.write("calm.yaml", podYAML("calm", "Always", 1, "", shContainer("c", chaosSleeper, probe)))
	a.waitAllReady(time.Minute, []string{"calm-" + node})
	rss0 := a.rssKiB()
	// 64 MiB in one line, then a mark; 64 MiB of short lines, then a mark.
	a.write("oneline.yaml", podYAML("oneline", "Always", 1, "", shContainer("c",
		`trap "exit 0" TERM; head -c 67108864 /dev/zero | tr '\0' 'a'; echo; echo done-oneline; sleep 3600 & wait`, "")))
	a.write("lines.yaml", podYAML("lines", "Always", 1, "", shContainer("c",
		`trap "exit 0" TERM; head -c 67108864 /dev/zero | tr '\0' 'a' | fold -w 100; echo done-lines; sleep 3600 & wait`, "")))
	start := time.Now()
	peak := rss0
	notReady := 0
	for _, name := range []string{"oneline", "lines"} {
		a.eventually(3*time.Minute, name+" wrote all its output", func() (bool, string) {
			peak = max(peak, a.rssKiB())
			pods, err := a.pods()
			if err != nil {
				return false, err.Error()
			}
			for _, p := range pods {
				if p.Name == "calm-"+node && podReady(&p) != corev1.ConditionTrue {
					notReady++
				}
			}
			// Read from the files (the live one, or the last rotated one, plain), not through
			// the agent: its own memory is what this case watches.
			found := false
			_ = filepath.WalkDir(a.logs, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && strings.Contains(p, "_"+name+"-") && !strings.HasSuffix(p, ".gz") {
					b, _ := os.ReadFile(p)
					found = found || bytes.Contains(b, []byte("done-"+name))
				}
				return nil
			})
			return found, "no done-" + name + " in its log files yet"
		})
	}
	took := time.Since(start)
	peak = max(peak, a.rssKiB())
	// The tail of the long line through the agent: printed whole (all of it the files kept),
	// streamed, not held in the agent's memory (before 2026-12-07 each such call took ~30 MiB).
	beforeTail := a.rssKiB()
	tailBytes := 0
	for i := 0; i < 3; i++ {
		out, err := a.cli("logs", "oneline", "--tail", "2")
		if err != nil || !strings.HasSuffix(out, "aaaa\ndone-oneline\n") || len(out) < 4<<20 {
			t.Errorf("logs --tail 2 of the long line: %d bytes ending %q (%v), want the kept part of the line and the mark", len(out), out[max(0, len(out)-30):], err)
		}
		tailBytes = len(out)
	}
	tailPeak := a.rssKiB()
	if grew := (tailPeak - beforeTail) / 1024; grew > 16 {
		t.Errorf("agent RSS grew by %d MiB over 3 `logs --tail 2` of a %d-byte line (from %d MiB), want it bounded", grew, tailBytes, beforeTail/1024)
	}
	if notReady > 0 {
		t.Errorf("the probed pod was not Ready in %d of the looks during the flood", notReady)
	}
	if grew := (peak - rss0) / 1024; grew > 40 {
		t.Errorf("agent RSS grew by %d MiB during the flood (from %d MiB), want it bounded", grew, rss0/1024)
	}
	var files []string
	var total int64
	_ = filepath.WalkDir(a.logs, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(p, "_oneline-") && !strings.Contains(p, "_lines-") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		files = append(files, strings.TrimPrefix(p, a.logs+"/"))
		total += info.Size()
		return nil
	})
	if len(files) > 6 || total > 2*3*5<<20 {
		t.Errorf("log files of the flooding pods: %d files, %d bytes (max 3 x 4 MiB each): %v", len(files), total, files)
	}
	chaosLog(t, "2 pods wrote 64 MiB each (one line; 100-byte lines) in %v: not blocked, logs kept to %d files / %d MiB, agent RSS %d -> peak %d MiB, the probed pod Ready throughout: %v; 3 `logs --tail 2` of the long line (%d bytes each): agent RSS %d -> %d MiB",
		took.Round(time.Millisecond), len(files), total>>20, rss0/1024, peak/1024, notReady == 0, tailBytes, beforeTail/1024, tailPeak/1024)
}

// rssKiB is the agent process's resident set size in KiB.
func (a *agent) rssKiB() int {
	a.mu.Lock()
	pid := a.cmd.Process.Pid
	a.mu.Unlock()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			v, _ := strconv.Atoi(f[1])
			return v
		}
	}
	return 0
}

// kill -9 of the agent while pods terminate: one pod's manifest removed, another's edited (a
// new pod of the same name), both with containers that ignore SIGTERM and a 10 s grace period.
// The restarted agent finishes both terminations (the grace counted again from its start, as
// the kubelet's for a pod it finds running but no longer wanted), never starts the removed pod
// again, and starts the edited one only once the old one is gone: never two of one name.
func TestChaosKill9DuringTermination(t *testing.T) {
	a := startAgent(t, "pk-chaos-term")
	stateDir := filepath.Join(env.Dir, "state")
	stubborn := `trap "" TERM; sleep 3600 & wait`
	a.write("gone.yaml", podYAML("gone", "Always", 10, "", shContainer("c", stubborn, "")))
	a.write("edited.yaml", podYAML("edited", "Always", 10, "", shContainer("c", stubborn, "")))
	pods := a.waitAllRunning(time.Minute, []string{"gone-" + node, "edited-" + node})
	oldEdited := string(pods["edited-"+node].UID)
	goneUID := string(pods["gone-"+node].UID)
	a.remove("gone.yaml")
	a.write("edited.yaml", podYAML("edited", "Always", 10, "", shContainer("c", stubborn, "    env:\n    - name: GEN\n      value: \"2\"\n")))
	a.eventually(20*time.Second, "both terminating", func() (bool, string) {
		ps, err := a.pods()
		if err != nil {
			return false, err.Error()
		}
		term := 0
		for _, p := range ps {
			if p.DeletionTimestamp != nil {
				term++
			}
		}
		return term >= 2, fmt.Sprintf("%d terminating", term)
	})
	time.Sleep(2 * time.Second) // SIGTERM sent and ignored
	a.kill9()
	killed := time.Now()
	a.start()
	// Until the old pods are gone: never a new instance of the removed pod, never the new
	// edited pod running beside the old one.
	var goneAfter, editedAfter time.Duration
	a.eventually(60*time.Second, "old pods gone, the edited one Running", func() (bool, string) {
		au := takeAudit(t, a.address, stateDir, a.ns)
		oldRunning, newRunning, goneRunning := false, false, false
		for id, c := range au.containers {
			if c.Labels[pkruntime.LabelKind] != string(podrunner.KindApp) || !au.running[id] {
				continue
			}
			switch uid := c.Labels[pkruntime.LabelPodUID]; {
			case uid == goneUID:
				goneRunning = true
				if c.Labels[pkruntime.LabelAttempt] != "0" {
					t.Errorf("the removed pod was started again: %s", id)
				}
			case uid == oldEdited:
				oldRunning = true
			case c.Labels[pkruntime.LabelPodName] == "edited-"+node:
				newRunning = true
			}
		}
		if oldRunning && newRunning {
			t.Errorf("the edited pod's new instance runs beside the old one")
		}
		if !goneRunning && goneAfter == 0 {
			goneAfter = time.Since(killed)
		}
		if newRunning && editedAfter == 0 {
			editedAfter = time.Since(killed)
		}
		return !goneRunning && !oldRunning && newRunning, fmt.Sprintf("removed pod running %v, old edited %v, new edited %v", goneRunning, oldRunning, newRunning)
	})
	pods = a.waitAllRunning(time.Minute, []string{"edited-" + node})
	if got := envOf(ptr(pods["edited-"+node]), "GEN"); got != "2" {
		t.Errorf("edited pod runs GEN=%q, want the edited file's 2", got)
	}
	checkNothingLost(t, a, stateDir, pods)
	chaosLog(t, "agent killed 2 s into two terminations (grace 10 s, SIGTERM ignored): the removed pod gone %v after the kill, the edited pod's new instance Running %v after it, never beside the old one; no leaks: %v",
		goneAfter.Round(time.Millisecond), editedAfter.Round(time.Millisecond), !t.Failed())
}

// Disk full under containerd (its root on a small tmpfs, filled): the running pods keep running
// and the agent keeps answering; a container that exits meanwhile, and a new pod, cannot be
// created and wait (tried again with back-off); once space returns both run, and what the failed
// creates began (snapshots, containers) is not left behind.
func TestChaosContainerdDiskFull(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "pkc-")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(root, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m", "pkdiskfull", root).Run(); err != nil {
		t.Fatalf("mount a tmpfs for containerd's root: %v", err)
	}
	cfg := pkruntime.ManagedConfig{
		Address: filepath.Join(dir, "c.sock"), Root: root, State: filepath.Join(dir, "state"),
		LogFile: filepath.Join(dir, "containerd.log"), Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	m, err := pkruntime.StartManaged(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop(); testenv.UnmountUnder(cfg.State); testenv.UnmountUnder(dir); os.RemoveAll(dir) })
	a := startAgentAt(t, "pk-chaos-full", cfg.Address) // cleaned up before containerd stops
	names := a.writeN("f", 3)
	pods := a.waitAllRunning(time.Minute, names)
	before := takeAudit(t, cfg.Address, cfg.State, a.ns)

	filler := filepath.Join(root, "filler")
	out, _ := exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=64k").CombinedOutput()
	if !strings.Contains(string(out), "No space left") {
		t.Fatalf("dd did not fill containerd's root: %s", out)
	}
	victim := pods[names[0]]
	if err := syscall.Kill(int(a.runningPID(string(victim.UID), "c")), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// containerd's metadata database reuses its free pages first: a create fails only once it
	// must grow. New pods are written, one every 500 ms (10 at most), until one fails so.
	var lates, states []string
	a.eventually(30*time.Second, "a create failing for the full disk", func() (bool, string) {
		if len(lates) < 10 {
			name := fmt.Sprintf("late-%d", len(lates))
			a.write(name+".yaml", chaosPod(name, ""))
			lates = append(lates, name+"-"+node)
		}
		time.Sleep(500 * time.Millisecond)
		ps, err := a.pods()
		if err != nil {
			t.Fatalf("API while containerd's disk is full: %v", err)
		}
		states = nil
		failed := false
		for _, p := range ps {
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil && w.Reason != "ContainerCreating" && w.Reason != "" {
					states = append(states, p.Name+" waiting "+w.Reason+": "+w.Message)
					if !strings.Contains(w.Message, "no space left on device") {
						continue // (CrashLoopBackOff of the killed container, between attempts)
					}
					// As the kubelet's when its CRI's CreateContainer fails.
					if w.Reason != "CreateContainerError" || !strings.HasPrefix(w.Message, "failed to create containerd container: ") {
						t.Errorf("while full: %s waits as %s (%s); want CreateContainerError with containerd's words", p.Name, w.Reason, w.Message)
					}
					failed = true
				}
			}
		}
		return failed, strings.Join(states, "; ")
	})
	during := takeAudit(t, cfg.Address, cfg.State, a.ns)
	for id, pid := range before.tasks {
		if c := before.containers[id]; c.Labels[pkruntime.LabelPodUID] == string(victim.UID) {
			continue
		}
		if during.tasks[id] != pid {
			t.Errorf("task %s: PID %d before the disk filled, %d while full", id, pid, during.tasks[id])
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	all := append(slices.Clone(names), lates...)
	pods = a.waitAllRunning(2*time.Minute, all)
	took := time.Since(freed)
	if n := status(ptr(pods[names[0]]), "c").RestartCount; n != 1 {
		t.Errorf("the killed container: restartCount %d once space returned, want 1", n)
	}
	au := checkNothingLost(t, a, cfg.State, pods)
	chaosLog(t, "containerd's root full (64 MiB tmpfs): 2 pods untouched; a container killed and %d pods written, creates failing once the metadata had to grow (%s); space back: all Running %v later, %d tasks, no leaks: %v",
		len(lates), strings.Join(states, "; "), took.Round(time.Millisecond), len(au.tasks), !t.Failed())
}

// Manifest storm: many edits (each a new pod identity) across 20 files in a few seconds, at
// random; the agent converges to exactly the final files and leaves no old instance behind.
func TestChaosManifestStorm(t *testing.T) {
	files, edits := 20, size(200, 1000)
	window := time.Duration(size(3, 10)) * time.Second
	a := startAgent(t, "pk-chaos-storm")
	stateDir := filepath.Join(env.Dir, "state")
	final := map[string]string{}
	rng := rand.New(rand.NewSource(1))
	gap := window / time.Duration(edits)
	for e := 0; e < edits; e++ {
		i := rng.Intn(files)
		if e < files {
			i = e // every file exists
		}
		name := fmt.Sprintf("s-%d", i)
		gen := fmt.Sprintf("gen-%d", e)
		a.write(name+".yaml", chaosPod(name, gen))
		final[name+"-"+node] = gen
		time.Sleep(gap)
	}
	var names []string
	for n := range final {
		names = append(names, n)
	}
	var pods map[string]corev1.Pod
	a.eventually(3*time.Minute, "convergence to the final files", func() (bool, string) {
		pods = a.waitAllRunningOnce(names)
		if pods == nil {
			return false, "not all running"
		}
		for name, p := range pods {
			if got := envOf(&p, "GEN"); got != final[name] {
				return false, fmt.Sprintf("%s runs %s, final file says %s", name, got, final[name])
			}
		}
		au := takeAudit(t, a.address, stateDir, a.ns)
		if len(au.containers) != 2*files || len(au.running) != 2*files {
			return false, fmt.Sprintf("%d containers, %d running (tasks and sandboxes without a process); want %d each", len(au.containers), len(au.running), 2*files)
		}
		return true, ""
	})
	au := checkNothingLost(t, a, stateDir, pods)
	chaosLog(t, "%d edits across %d files in %v; converged: %d pods on their final files, %d containers, %d tasks, no leaks: %v", edits, files, window, len(pods), len(au.containers), len(au.tasks), !t.Failed())
}

// waitAllRunningOnce is one look of waitAllRunning: the pods when exactly names run, else nil.
func (a *agent) waitAllRunningOnce(names []string) map[string]corev1.Pod {
	pods, err := a.pods()
	if err != nil || len(pods) != len(names) {
		return nil
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]corev1.Pod{}
	for _, p := range pods {
		if !want[p.Name] || !running(&p) || p.DeletionTimestamp != nil {
			return nil
		}
		out[p.Name] = p
	}
	return out
}

func envOf(p *corev1.Pod, name string) string {
	for _, c := range p.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value
			}
		}
	}
	return ""
}

// Disk full on the log directory (a small tmpfs mounted for the test): the container keeps
// running, the agent stays up, and logging resumes once space returns.
func TestChaosLogDiskFull(t *testing.T) {
	// Small log files: rotations, and compressions of the rotated ones, also meet the full disk.
	a := startAgentAt(t, "pk-chaos-disk", env.Address, "--container-log-max-size", "4Ki", "--container-log-max-files", "3")
	if err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "pkchaos", a.logs).Run(); err != nil {
		t.Fatalf("mount a tmpfs on the log dir: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(a.logs, syscall.MNT_DETACH) }) // before the dir removal
	a.write("talk.yaml", podYAML("talk", "Always", 1, "", shContainer("c", `trap "exit 0" TERM; i=0; while true; do echo "line $i"; i=$((i+1)); usleep 20000; done`, "")))
	p := a.waitPod(30*time.Second, "talk-"+node, "Running", running)
	a.eventually(10*time.Second, "first log lines", func() (bool, string) {
		out, err := a.cli("logs", "talk", "--tail", "1")
		return err == nil && strings.Contains(out, "line"), out
	})
	filler := filepath.Join(a.logs, "filler")
	out, _ := exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=64k").CombinedOutput()
	if !strings.Contains(string(out), "No space left") {
		t.Fatalf("dd did not fill the log tmpfs: %s", out)
	}
	pid := a.runningPID(string(p.UID), "c")
	time.Sleep(3 * time.Second) // the container writes ~150 lines into a full disk
	if got := a.runningPID(string(p.UID), "c"); got != pid {
		t.Fatalf("container restarted while the log disk was full: PID %d -> %d", pid, got)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	mark := time.Now()
	var last string
	a.eventually(20*time.Second, "logging to resume", func() (bool, string) {
		out, err := a.cli("logs", "talk", "--tail", "1", "--timestamps")
		if err != nil {
			return false, err.Error()
		}
		last = strings.TrimSpace(out)
		ts, err := time.Parse(time.RFC3339Nano, strings.SplitN(last, " ", 2)[0])
		return err == nil && ts.After(mark), out
	})
	pp := a.waitPod(10*time.Second, "talk-"+node, "still Running", running)
	if rc := status(pp, "c").RestartCount; rc != 0 || a.runningPID(string(p.UID), "c") != pid {
		t.Fatalf("restartCount %d, want 0 and the same task", rc)
	}
	// Compressions that failed for the full disk left no temporary file, and once there is room
	// the next rotations leave the files as ever: the live one, the newest rotated one plain,
	// the older one compressed.
	dir := filepath.Join(a.logs, fmt.Sprintf("default_%s_%s", p.Name, p.UID), "c")
	var files []string
	a.eventually(20*time.Second, "the log files as ever after the recovery", func() (bool, string) {
		ents, _ := os.ReadDir(dir)
		files = files[:0]
		gz, tmp := 0, 0
		for _, e := range ents {
			files = append(files, e.Name())
			switch {
			case strings.HasSuffix(e.Name(), ".tmp"):
				tmp++
			case strings.HasSuffix(e.Name(), ".gz"):
				gz++
			}
		}
		return len(files) == 3 && gz == 1 && tmp == 0, fmt.Sprint(files)
	})
	chaosLog(t, "1 MiB tmpfs log dir filled for 3 s, 4 KiB log files: container kept running (same PID, 0 restarts), agent up, logging resumed: %q; files after: %v", last, files)
}

// The agent stopped (SIGTERM, as by an upgrade) while its exec probes run: every pod's runc
// shim still answers at once. An exec's output FIFOs are the agent's; a shim starting an exec
// opens their write ends while it holds its locks, and an agent that exits before that leaves
// the open waiting for a reader, 30 s in containerd 1.6's shim, in which the pod's every other
// call (a kill, a state, an exit) waits too. So the agent lets the exec starts in flight end
// before it exits. (Before it did, this test failed 4 runs of 4 here.)
func TestChaosStopDuringExecProbes(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "pk-e2e-stopexec")
	names := a.writeExecProbed("ex", 10)
	a.waitAllReady(90*time.Second, names)
	time.Sleep(2 * time.Second) // 10 exec probes a second
	a.stop()
	n, slowest := a.shimsAnswer(10 * time.Second)
	chaosLog(t, "%d pods, an exec readiness probe each every second; agent stopped (SIGTERM); then %d containers stopped straight through containerd, the slowest in %v (bound 10 s)",
		len(names), n, slowest.Round(time.Millisecond))
}

// The agent killed (kill -9) while its exec probes run, then started again: it cannot let the
// exec starts in flight end, so the shims that were starting one wait for a reader of its
// output FIFOs; the new agent opens the FIFOs its predecessor left, and every pod is Ready
// again soon (its readiness probe's exec is answered), instead of 30 s later (the pods'
// kills, states and exits with it). (Before the release, 3 runs of 3 failed here.)
func TestChaosKill9DuringExecProbes(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "pk-e2e-killexec")
	names := a.writeExecProbed("kx", 10)
	a.waitAllReady(90*time.Second, names)
	time.Sleep(2 * time.Second)
	a.kill9()
	restarted := time.Now()
	a.start()
	a.waitAllReady(15*time.Second, names)
	ready := time.Since(restarted)
	a.stop()
	n, slowest := a.shimsAnswer(10 * time.Second)
	chaosLog(t, "%d pods, an exec readiness probe each every second; agent kill -9 and started again: all Ready %v after the start (bound 15 s); then stopped and %d containers stopped straight through containerd, the slowest in %v (bound 10 s)",
		len(names), ready.Round(time.Millisecond), n, slowest.Round(time.Millisecond))
}

// waitAllReady waits until every pod named reports the Ready condition True.
func (a *agent) waitAllReady(timeout time.Duration, names []string) {
	a.t.Helper()
	a.eventually(timeout, fmt.Sprintf("%d pods Ready", len(names)), func() (bool, string) {
		pods, err := a.pods()
		if err != nil {
			return false, err.Error()
		}
		ready := map[string]bool{}
		for _, p := range pods {
			ready[p.Name] = podReady(&p) == corev1.ConditionTrue
		}
		var not []string
		for _, n := range names {
			if !ready[n] {
				not = append(not, n)
			}
		}
		return len(not) == 0, fmt.Sprintf("not Ready: %v", not)
	})
}

// The agent stopped (SIGTERM) while it starts pods: a task create opens the log FIFOs' write
// ends in the shim as an exec start does, so here too every shim must answer at once after the
// agent is gone. (A create the stop interrupts fails in containerd, which then deletes the task
// in the shim itself; 10 runs here stopping at 1 to 10 tasks, 0 to 4 creates interrupted each,
// all passed.)
func TestChaosStopDuringStart(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "pk-e2e-stopstart")
	a.writeN("st", 12)
	a.eventually(2*time.Minute, "first tasks created", func() (bool, string) {
		au := takeAudit(t, a.address, "", a.ns)
		return len(au.tasks) >= 2, fmt.Sprintf("%d tasks", len(au.tasks))
	})
	a.stop()
	n, slowest := a.shimsAnswer(10 * time.Second)
	chaosLog(t, "12 pods written at once, agent stopped (SIGTERM) once containerd ran 2 tasks; then %d containers stopped straight through containerd, the slowest in %v (bound 10 s)",
		n, slowest.Round(time.Millisecond))
}

// writeExecProbed writes n pods <prefix>-<i> whose container has an exec readiness probe every
// second (with a timeout of 5 s: the execs load the machine), and returns the pods' names.
func (a *agent) writeExecProbed(prefix string, n int) []string {
	const probe = "    readinessProbe:\n      exec:\n        command: [\"true\"]\n      periodSeconds: 1\n      timeoutSeconds: 5\n"
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		a.write(name+".yaml", podYAML(name, "Always", 1, "", shContainer("c", chaosSleeper, probe)))
		names = append(names, name+"-"+node)
	}
	return names
}

// shimsAnswer stops every container the agent left, each within the bound: a shim left waiting
// for a gone agent fails it (its calls wait 30 s). It returns how many it stopped and the
// slowest stop.
func (a *agent) shimsAnswer(within time.Duration) (stopped int, slowest time.Duration) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := pkruntime.Dial(ctx, pkruntime.Config{Address: a.address, Namespace: a.ns})
	if err != nil {
		a.t.Fatal(err)
	}
	defer rt.Close()
	recs, err := rt.ListContainers(ctx, "")
	if err != nil {
		a.t.Fatal(err)
	}
	for _, r := range recs {
		if r.Kind == podrunner.KindSandbox {
			continue // no process; the clean-up releases its network
		}
		start := time.Now()
		cctx, ccancel := context.WithTimeout(ctx, within)
		err := rt.StopContainer(cctx, r.ID, 0)
		ccancel()
		took := time.Since(start)
		slowest = max(slowest, took)
		if err != nil {
			a.t.Errorf("stop %s (%s) after the agent stopped: %v (%v)", r.ID, r.State, err, took.Round(time.Millisecond))
			a.logStacks()
			continue
		}
		stopped++
	}
	return stopped, slowest
}
