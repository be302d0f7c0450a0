package runtime

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	shimapi "github.com/containerd/containerd/api/runtime/task/v2"
	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
	"github.com/containerd/ttrpc"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// removeOrphanSnapshot deletes the snapshot named id when no container owns it: what a crash
// (kill -9 of podkeeper) between preparing a container's snapshot and creating the container
// leaves behind. Without this, every later create of the same container ID fails with
// "snapshot already exists". ctx carries the namespace.
func (r *Runtime) removeOrphanSnapshot(ctx context.Context, id string) {
	sn := r.client.SnapshotService(r.cfg.Snapshotter)
	if _, err := sn.Stat(ctx, id); err != nil {
		return
	}
	if err := sn.Remove(ctx, id); err != nil && !errdefs.IsNotFound(err) {
		r.log.Warn("cannot remove a leftover snapshot", "snapshot", id, "err", err)
		return
	}
	r.log.Info("removed a leftover snapshot of a container never created", "snapshot", id)
}

// ownContainerID matches the IDs podkeeper gives containers (containerID, sandboxIDFor), which
// are also their snapshots' keys.
var ownContainerID = regexp.MustCompile(`^[0-9a-f]{1,16}\.([a-z0-9]([-a-z0-9]*[a-z0-9])?\.[0-9]+|[0-9]+\.sandbox)$`)

// gcSnapshots removes the active snapshots named like podkeeper's containers that no container
// owns: a kill -9 between a container's snapshot and its create leaves one, and when the pod is
// no longer wanted at the next start (its manifest removed meanwhile), no create of the same ID
// comes to remove it (removeOrphanSnapshot). Run at the agent's start, before any create.
func (r *Runtime) gcSnapshots(ctx context.Context) {
	ctx = r.ctx(ctx)
	var orphans []string
	err := r.client.SnapshotService(r.cfg.Snapshotter).Walk(ctx, func(ctx context.Context, info snapshots.Info) error {
		if info.Kind != snapshots.KindActive || !ownContainerID.MatchString(info.Name) {
			return nil
		}
		if _, err := r.client.LoadContainer(ctx, info.Name); errdefs.IsNotFound(err) {
			orphans = append(orphans, info.Name)
		}
		return nil
	})
	if err != nil {
		r.log.Warn("list snapshots for leftovers", "err", err)
		return
	}
	for _, id := range orphans {
		r.removeOrphanSnapshot(ctx, id)
	}
}

// endOrphanTask ends what a task create of container id interrupted by podkeeper's death left
// in a runc shim without containerd knowing, and returns whether it found such a leftover.
//
// containerd 1.6 gives up a task create when its caller goes (podkeeper killed during the
// create): it drops the task from its list and asks the shim to delete it and shut down, but the
// shim may still be in its runc create then and go on to finish it, or be started and never told
// anything. The shim then holds a created container (its `runc init` process, cgroup and rootfs
// mount) or nothing at all, that no containerd call shows, and never exits. Called when a
// container whose task containerd does not know is removed: when containerd's bundle of id is
// still there, its shim is asked directly, on the socket the bundle names, to kill and delete
// the container it holds and to shut down if it serves no other; then the bundle is removed as
// containerd would have. A create containerd may still be doing (neither it nor the shim knows
// the task yet) is given orphanSettle to end first. When containerd gives that create up
// meanwhile (it removes the bundle), the shim it started is asked all the same: containerd
// removes the bundle of a create it gave up without always ending its shim.
func (r *Runtime) endOrphanTask(ctx context.Context, id string) (bool, error) {
	dir := r.bundlesDir()
	if dir == "" {
		return false, nil // no runc shim of this namespace is running: none can hold a task
	}
	bundle := filepath.Join(dir, id)
	addr, err := os.ReadFile(filepath.Join(bundle, "address"))
	if err != nil {
		return false, nil
	}
	socket := strings.TrimPrefix(strings.TrimSpace(string(addr)), "unix://")
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskDeleteTimeout)
	defer cancel()
	for settle := time.Now().Add(orphanSettle); ; time.Sleep(orphanSettle / 10) {
		final := !time.Now().Before(settle)
		_, err := os.Stat(filepath.Join(bundle, "address"))
		givenUp := err != nil // containerd removed its bundle meanwhile
		if !givenUp {
			if _, err := r.client.TaskService().Get(ctx, &tasksapi.GetRequest{ContainerID: id}); !errdefs.IsNotFound(errgrpc.ToNative(err)) {
				return false, nil // containerd's own (or containerd cannot tell)
			}
		}
		held := false
		shim, done, err := dialShim(ctx, socket)
		if err == nil { // else its shim is gone: only the bundle (if any) is left
			held, err = r.endInShim(ctx, shim, id, final || givenUp)
			done()
			if err != nil {
				return true, err
			}
		} else if givenUp {
			return false, nil // containerd ended the create and its shim
		}
		if givenUp {
			return true, nil
		}
		if held || final {
			removeBundle(bundle, id, r.cfg.Namespace)
			return true, nil
		}
	}
}

// dialShim connects to the task API a runc shim serves on the unix socket at path; done closes
// the connection.
func dialShim(ctx context.Context, path string) (api shimapi.TTRPCTaskService, done func(), err error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, "unix", path)
	if err != nil {
		return nil, nil, err
	}
	client := ttrpc.NewClient(conn)
	return shimapi.NewTTRPCTaskClient(client), func() { client.Close() }, nil
}

// orphanSettle is how long endOrphanTask lets a create in progress end before it calls a bundle
// that neither containerd nor its shim knows as a task a leftover.
const orphanSettle = 2 * time.Second

// endInShim kills and deletes container id in the shim and asks the shim to shut down (it does
// only when it serves no other container); held says whether the shim held id. When it does not,
// the shim is asked to shut down only if final (a create may still be on its way to it).
func (r *Runtime) endInShim(ctx context.Context, shim shimapi.TTRPCTaskService, id string, final bool) (held bool, err error) {
	if _, err := shim.State(ctx, &shimapi.StateRequest{ID: id}); err != nil {
		if !errdefs.IsNotFound(errgrpc.ToNative(err)) {
			return false, nil // cannot say: left alone
		}
		if final {
			r.log.Warn("shutting down an idle runc shim containerd lost track of (a create interrupted by podkeeper's death)", "container", id)
			_, _ = shim.Shutdown(ctx, &shimapi.ShutdownRequest{ID: id})
		}
		return false, nil
	}
	r.log.Warn("ending a task containerd lost track of (a create interrupted by podkeeper's death)", "container", id)
	_, _ = shim.Kill(ctx, &shimapi.KillRequest{ID: id, Signal: uint32(syscall.SIGKILL), All: true})
	var derr error
	for i := 0; i < 50; i++ { // the kill's exit reaches the shim's state first
		if _, derr = shim.Delete(ctx, &shimapi.DeleteRequest{ID: id}); derr == nil || errdefs.IsNotFound(errgrpc.ToNative(derr)) {
			derr = nil
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if derr != nil {
		return true, fmt.Errorf("delete the lost task %s in its shim: %w", id, errgrpc.ToNative(derr))
	}
	_, _ = shim.Shutdown(ctx, &shimapi.ShutdownRequest{ID: id}) // exits unless it serves others
	return true, nil
}

// removeBundle removes a task's bundle and its work directory, as containerd's own delete does,
// once its rootfs is no longer mounted.
func removeBundle(bundle, id, ns string) {
	rootfs := filepath.Join(bundle, "rootfs")
	if err := os.Remove(rootfs); err != nil && !os.IsNotExist(err) {
		return // still mounted (or not empty): containerd's restart deals with it
	}
	if work, err := os.Readlink(filepath.Join(bundle, "work")); err == nil &&
		filepath.Base(work) == id && filepath.Base(filepath.Dir(work)) == ns {
		_ = os.RemoveAll(work)
	}
	_ = os.RemoveAll(bundle)
}

// bundlesDir is containerd's directory of the task bundles of r's namespace
// (<state>/io.containerd.runtime.v2.task/<ns>), found from a runc shim that containerd started
// for the namespace: a shim runs in the bundle of the task that started it. "" while no such shim
// runs.
func (r *Runtime) bundlesDir() string {
	r.mu.Lock()
	dir := r.bundles
	r.mu.Unlock()
	if dir != "" {
		return dir
	}
	for _, sh := range r.ownShims() {
		cwd, err := os.Readlink(filepath.Join("/proc", sh.pid, "cwd"))
		if err != nil || filepath.Base(filepath.Dir(cwd)) != r.cfg.Namespace {
			continue
		}
		dir = filepath.Dir(cwd)
		r.mu.Lock()
		r.bundles = dir
		r.mu.Unlock()
		return dir
	}
	return ""
}

// samePath is p with symbolic links resolved (p when that fails).
func samePath(p string) string {
	if q, err := filepath.EvalSymlinks(p); err == nil {
		return q
	}
	return filepath.Clean(p)
}

// flagValue is the value after flag in args ("" when absent).
func flagValue(args []string, flag string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}

// endPodLeftovers ends what still runs in the cgroup of pod uid once all of the pod's containers
// are removed (its cgroup's removal failed: busy). First a container that a create interrupted by
// podkeeper's death left created in its runc shim after containerd gave it up and removed its
// bundle, so that neither containerd nor endOrphanTask can find it. Its process's parent is the
// shim (a subreaper); the shim is asked on its listening socket to kill and delete the
// container (the cgroup's name is its ID) and to shut down if it serves nothing else. Only
// processes whose parent is a runc shim of this containerd and namespace are considered. It
// returns how many containers it ended.
func (r *Runtime) endPodLeftovers(uid string) int { return r.endLeftovers(uid, "") }

// endLeftovers is endPodLeftovers for the cgroups of pod uid's containers, or only of
// container only when it is not "" (its create failed on what an interrupted create left).
func (r *Runtime) endLeftovers(uid, only string) int {
	m := r.cfg.Cgroups
	if m == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(r.ctx(context.Background()), taskDeleteTimeout)
	defer cancel()
	ended := 0
	for _, qos := range []corev1.PodQOSClass{corev1.PodQOSGuaranteed, corev1.PodQOSBurstable, corev1.PodQOSBestEffort} {
		var ents []os.DirEntry
		var podDir string
		for _, ctrl := range []string{"pids", "memory", "cpu"} {
			podDir = m.Dir(ctrl, m.Layout().PodDir(qos, types.UID(uid)))
			var err error
			if ents, err = os.ReadDir(podDir); err == nil {
				break
			}
		}
		for _, e := range ents {
			id := cgroupContainerID(e.Name())
			if !e.IsDir() || !ownContainerID.MatchString(id) || only != "" && id != only {
				continue
			}
			procs := filepath.Join(podDir, e.Name(), "cgroup.procs")
			b, err := os.ReadFile(procs)
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				shim := parentPid(f)
				if shim == "" || !r.isOwnShim(shim) {
					continue
				}
				api, done, err := r.dialShimProcess(ctx, shim)
				if err != nil {
					continue
				}
				held, err := r.endInShim(ctx, api, id, false)
				if err != nil {
					r.log.Warn("end a leftover container of a removed pod", "pod", uid, "container", id, "err", err)
				}
				if !held {
					// The shim's runc create was killed midway (its caller gone): the shim holds
					// no container and its `runc init` waits forever. Nothing owns it any more.
					r.log.Warn("killing the leftover process of an interrupted container create", "pod", uid, "container", id, "pid", f)
					if pid, err := strconv.Atoi(f); err == nil {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
					for i := 0; i < 50 && cgroupHasProcs(procs); i++ {
						time.Sleep(20 * time.Millisecond)
					}
					_, _ = api.Shutdown(ctx, &shimapi.ShutdownRequest{ID: id}) // exits unless it serves others
				}
				done()
				ended++
				break
			}
		}
		// What is left has no shim any more (`runc init` of a create whose shim is gone, now a
		// child of init): nothing will ever end it. As the kubelet does with an orphaned pod
		// cgroup, every process still in it is killed.
		_ = filepath.WalkDir(podDir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			if only != "" && cgroupContainerID(filepath.Base(filepath.Dir(path))) != only {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return nil
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
					r.log.Warn("killing a process left in the cgroup of a removed pod", "pod", uid, "pid", pid, "cgroup", filepath.Dir(path))
					_ = syscall.Kill(pid, syscall.SIGKILL)
					ended++
				}
			}
			for i := 0; i < 50 && cgroupHasProcs(path); i++ {
				time.Sleep(20 * time.Millisecond)
			}
			return nil
		})
	}
	return ended
}

// parentPid is the parent of process pid ("" when unknown).
func parentPid(pid string) string {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// isOwnShim says whether process pid is a runc shim that r's containerd started for r's namespace.
func (r *Runtime) isOwnShim(pid string) bool {
	_, ok := shimOf(pid, r.cfg.Address, r.cfg.Namespace)
	return ok
}

// dialShimProcess connects to the task API of the runc shim process pid (found by its listening
// socket).
func (r *Runtime) dialShimProcess(ctx context.Context, pid string) (shimapi.TTRPCTaskService, func(), error) {
	sock := listeningSocket(pid)
	if sock == "" {
		return nil, nil, fmt.Errorf("shim %s: no listening socket", pid)
	}
	return dialShim(ctx, sock)
}

// listeningSocket is the path of the unix socket process pid listens on ("" when none): a shim
// serves its task API there.
func listeningSocket(pid string) string {
	fds, err := os.ReadDir(filepath.Join("/proc", pid, "fd"))
	if err != nil {
		return ""
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join("/proc", pid, "fd", fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	b, err := os.ReadFile(filepath.Join("/proc", pid, "net", "unix"))
	if err != nil {
		return ""
	}
	// Num RefCount Protocol Flags Type St Inode Path; Flags 00010000: listening.
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !inodes[f[6]] || f[3] != "00010000" || strings.HasPrefix(f[7], "@") {
			continue
		}
		return f[7]
	}
	return ""
}

// cgroupHasProcs says whether the cgroup.procs file at path lists a process.
func cgroupHasProcs(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && len(strings.TrimSpace(string(b))) > 0
}

// sweepShimsSoon runs sweepIdleShims once, shimSweepDelay from now (coalesced: one pending at a
// time). Called when a pod's files are removed, so that a shim a create interrupted by
// podkeeper's death left idle goes with its pod.
func (r *Runtime) sweepShimsSoon() {
	r.mu.Lock()
	if r.shimSweepPending {
		r.mu.Unlock()
		return
	}
	r.shimSweepPending = true
	r.mu.Unlock()
	time.AfterFunc(shimSweepDelay, func() {
		r.mu.Lock()
		r.shimSweepPending = false
		r.mu.Unlock()
		r.sweepIdleShims()
		// A create containerd was still doing for a dead agent can leave its shim idle later.
		time.AfterFunc(shimSweepAgain, r.sweepIdleShims)
	})
}

// sweepShimsPeriodically runs sweepIdleShims at once (for a sweep the last run's stop or death
// cut short) and then every shimSweepEvery until ctx ends: the backstop for a shim left idle
// after the sweeps that follow pod removals.
func (r *Runtime) sweepShimsPeriodically(ctx context.Context) {
	r.sweepIdleShims()
	t := time.NewTicker(shimSweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.sweepIdleShims()
		}
	}
}

const (
	shimSweepDelay = 2 * time.Second
	shimSweepAgain = 6 * time.Second
	shimSweepEvery = time.Minute
)

// sweepIdleShims asks every runc shim of r's containerd and namespace that was started for a pod
// of which containerd holds no container any more to shut down. A shim exits on that only when
// it serves no container; containerd does the same when it deletes a pod's last task, so the
// shims found here are those a create interrupted by podkeeper's death left behind, that
// containerd no longer knows (for the rest, see endOrphanTask and endPodLeftovers).
func (r *Runtime) sweepIdleShims() {
	var shims []shimProc
	for _, sh := range r.ownShims() {
		if ownContainerID.MatchString(sh.id) && !sh.deleting {
			shims = append(shims, sh)
		}
	}
	if len(shims) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(r.ctx(context.Background()), taskDeleteTimeout)
	defer cancel()
	cs, err := r.client.ContainerService().List(ctx)
	if err != nil {
		return
	}
	pods := map[string]bool{}
	for _, c := range cs {
		pods[strings.SplitN(c.ID, ".", 2)[0]] = true
	}
	found := 0
	for _, s := range shims {
		if pods[strings.SplitN(s.id, ".", 2)[0]] {
			continue
		}
		found++
		api, done, err := r.dialShimProcess(ctx, s.pid)
		if err != nil {
			continue
		}
		r.log.Warn("shutting down a runc shim of a removed pod (left by a create interrupted by podkeeper's death)", "shim", s.pid, "id", s.id)
		// The shim may still hold the container it was started for (a create containerd gave
		// up but the shim finished): then it would not shut down; end that container first.
		if _, err := r.endInShim(ctx, api, s.id, true); err != nil {
			r.log.Warn("end a runc shim's lost container", "shim", s.pid, "err", err)
		}
		done()
	}
	// A shim found here may have been mid-create: look again soon, a few times at most.
	r.mu.Lock()
	again := found > 0 && r.shimResweeps < shimResweepMax
	if again {
		r.shimResweeps++
	} else if found == 0 {
		r.shimResweeps = 0
	}
	r.mu.Unlock()
	if again {
		time.AfterFunc(shimSweepAgain, r.sweepIdleShims)
	}
}

// shimResweepMax bounds the sweeps in a row that a shim which does not go away triggers.
const shimResweepMax = 5

// shimProc is a runc shim process: its PID, its -id (the task that started it), and whether it
// is the short-lived `delete` command containerd runs to clean up after a dead shim.
type shimProc struct {
	pid, id  string
	deleting bool
}

// ownShims lists the runc shim processes that r's containerd started for r's namespace.
func (r *Runtime) ownShims() []shimProc { return listShims(r.cfg.Address, r.cfg.Namespace) }

// listShims lists the runc shim processes that the containerd at address started for namespace
// ns. A process that has exited (a zombie) has no command line and is not listed.
func listShims(address, ns string) []shimProc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []shimProc
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if sh, ok := shimOf(e.Name(), address, ns); ok {
			out = append(out, sh)
		}
	}
	return out
}

// shimOf reads process pid as a runc shim of the containerd at address and namespace ns; ok is
// false when it is not one.
func shimOf(pid, address, ns string) (shimProc, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
	if err != nil || !strings.Contains(string(b), "containerd-shim") {
		return shimProc{}, false
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") || flagValue(args, "-namespace") != ns ||
		samePath(flagValue(args, "-address")) != samePath(address) {
		return shimProc{}, false
	}
	return shimProc{pid: pid, id: flagValue(args, "-id"), deleting: args[len(args)-1] == "delete"}, true
}

// RuncShimPIDs returns the PIDs of the runc shims that the containerd at address started for
// namespace ns and that still run (for tests: none may outlive a namespace's containers).
func RuncShimPIDs(address, ns string) []int {
	var pids []int
	for _, sh := range listShims(address, ns) {
		if pid, err := strconv.Atoi(sh.pid); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// cgroupContainerID is the container ID in the name of a container's cgroup directory (cgroupfs:
// the ID; systemd: podkeeper-<ID>.scope, cgroup.Layout.ContainerDir).
func cgroupContainerID(name string) string {
	return strings.TrimSuffix(strings.TrimPrefix(name, "podkeeper-"), ".scope")
}
