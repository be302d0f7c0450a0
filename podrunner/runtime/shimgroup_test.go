package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	shimapi "github.com/containerd/containerd/api/runtime/task/v2"
	"github.com/containerd/containerd/api/types"
	"github.com/containerd/ttrpc"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/podrunner"
	. "github.com/podkeeper/podkeeper/podrunner/runtime"
)

// A new pod's first container and its sandbox are created at the same time (their namespaces are
// made ahead), so either may be the first task of the pod's runc shim (the runc v2 shim's
// grouping). What podkeeper relies on, checked on the real containerd and shim: the shim outlives
// the task that started it, keeps serving the others (state, exec) and takes new ones.
func TestShimGroupOutlivesTheTaskThatStartedIt(t *testing.T) {
	rt, ctx := newRuntime(t)
	client, img := busyboxImage(t, rt, ctx)
	ctx = namespaces.WithNamespace(ctx, testNS)
	group := fmt.Sprintf("pk-shimgroup-%d", time.Now().UnixNano())
	start := func(name string) (containerd.Container, containerd.Task) {
		t.Helper()
		c := sleeperContainer(t, ctx, client, img, group+"-"+name, oci.WithAnnotations(map[string]string{"io.containerd.runc.v2.group": group}))
		task := startTask(t, ctx, c)
		t.Cleanup(func() { _, _ = task.Delete(ctx, containerd.WithProcessKill) })
		return c, task
	}
	_, first := start("first") // starts the shim
	_, second := start("second")
	shim := ppid(t, first.Pid())
	if got := ppid(t, second.Pid()); got != shim {
		t.Fatalf("one group, two shims: %s and %s", shim, got)
	}
	if _, err := first.Delete(ctx, containerd.WithProcessKill); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // room for a shim that would exit after its first task
	st, err := second.Status(ctx)
	if err != nil || st.Status != containerd.Running {
		t.Fatalf("the other task after the first one's removal: %v %v", st.Status, err)
	}
	if got := ppid(t, second.Pid()); got != shim {
		t.Fatalf("the other task's parent is now %s, was the shim %s", got, shim)
	}
	proc, err := second.Exec(ctx, group+"-exec", &specs.Process{Args: []string{"true"}, Cwd: "/", Env: []string{"PATH=/bin"}}, cio.NullIO)
	if err != nil {
		t.Fatalf("exec through the shim: %v", err)
	}
	wait, err := proc.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(ctx); err != nil {
		t.Fatalf("exec through the shim: %v", err)
	}
	if code := (<-wait).ExitCode(); code != 0 {
		t.Fatalf("exec exit code %d", code)
	}
	_, _ = proc.Delete(ctx)
	_, third := start("third")
	if got := ppid(t, third.Pid()); got != shim {
		t.Fatalf("a new task of the group got shim %s, want the group's %s", got, shim)
	}
}

// containerd 1.6 deletes a task in steps: the shim forgets the container, then containerd its
// task, then the shim is told to shut down. A caller cancelled between the first two (the agent
// stopping or killed during a delete) leaves a task only containerd knows, whose state reads fail;
// nothing then tells the shim to exit. The first step is done here straight on the shim's socket;
// removing the container must still end the shim.
func TestRemoveContainerEndsTheShimOfAHalfDeletedTask(t *testing.T) {
	t.Cleanup(SetHalfDeletedMinAge(0)) // the container here is new; the state is the same at any age
	rt, ctx := newRuntime(t)
	client, img := busyboxImage(t, rt, ctx)
	ctx = namespaces.WithNamespace(ctx, testNS)
	id := fmt.Sprintf("pk-halfdel-%d", time.Now().UnixNano())
	task := startTask(t, ctx, sleeperContainer(t, ctx, client, img, id))
	shimPid, err := strconv.Atoi(ppid(t, task.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	exited, err := task.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Kill(ctx, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited

	// containerd's first step of the task's delete, and nothing after it.
	addr, err := os.ReadFile(filepath.Join(env.Dir, "state", "io.containerd.runtime.v2.task", testNS, id, "address"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("unix", strings.TrimPrefix(strings.TrimSpace(string(addr)), "unix://"))
	if err != nil {
		t.Fatal(err)
	}
	shim := ttrpc.NewClient(conn)
	if _, err := shimapi.NewTTRPCTaskClient(shim).Delete(ctx, &shimapi.DeleteRequest{ID: id}); err != nil {
		t.Fatalf("the shim's delete: %v", err)
	}
	shim.Close()
	if _, err := task.Status(ctx); err == nil {
		t.Fatal("the half-deleted task's state still reads; the test does not make the state it is about")
	}
	if !alive(shimPid) {
		t.Fatal("the shim exited by itself; the test does not make the state it is about")
	}

	if err := rt.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive(shimPid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(shimPid, syscall.SIGKILL) // this test's shim
			t.Fatalf("shim %d still running 10s after the container's removal", shimPid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := client.LoadContainer(ctx, id); err == nil {
		t.Fatal("container still there after its removal")
	}
}

// alive says whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

// busyboxImage is the busybox test image in rt's containerd, for containers made with the client.
func busyboxImage(t *testing.T, rt *Runtime, ctx context.Context) (*containerd.Client, containerd.Image) {
	t.Helper()
	if _, err := rt.EnsureImage(ctx, "busybox", corev1.PullIfNotPresent, podrunner.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	ref, err := NormalizeRef("busybox")
	if err != nil {
		t.Fatal(err)
	}
	img, err := rt.Client().GetImage(namespaces.WithNamespace(ctx, testNS), ref)
	if err != nil {
		t.Fatal(err)
	}
	return rt.Client(), img
}

// containerd 1.6 gives up a task create whose caller went away (podkeeper killed mid-create), but
// the shim may finish it: a created container (runc init, cgroup, rootfs mount) that only the
// shim knows. Made here directly: a container in containerd, and its task created on the shim of
// another task (the group's), bypassing containerd. Removing the container must end that task,
// unmount its rootfs and remove its bundle, and the shim must go on serving the other task.
func TestRemoveContainerEndsATaskOnlyItsShimKnows(t *testing.T) {
	rt, ctx := newRuntime(t)
	client, img := busyboxImage(t, rt, ctx)
	ctx = namespaces.WithNamespace(ctx, testNS)
	base := fmt.Sprintf("pk-lost-%d", time.Now().UnixNano())
	// The shim, started by another container's task.
	first := sleeperContainer(t, ctx, client, img, base+"-first")
	firstTask := startTask(t, ctx, first)
	t.Cleanup(func() { _, _ = firstTask.Delete(ctx, containerd.WithProcessKill) })
	shimPid := ppid(t, firstTask.Pid())
	bundles := filepath.Join(env.Dir, "state", "io.containerd.runtime.v2.task", testNS)
	addr, err := os.ReadFile(filepath.Join(bundles, first.ID(), "address"))
	if err != nil {
		t.Fatal(err)
	}

	// The lost task: its bundle as containerd makes it, its create on the shim.
	id := base + "-lost"
	lost := sleeperContainer(t, ctx, client, img, id)
	spec, err := lost.Spec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(bundles, id)
	if err := os.Mkdir(bundle, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(bundle) })
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), js, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundle, "address"), addr, 0o600); err != nil {
		t.Fatal(err)
	}
	mounts, err := client.SnapshotService("overlayfs").Mounts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	req := &shimapi.CreateTaskRequest{ID: id, Bundle: bundle}
	for _, m := range mounts {
		req.Rootfs = append(req.Rootfs, &types.Mount{Type: m.Type, Source: m.Source, Options: m.Options})
	}
	conn, err := net.Dial("unix", strings.TrimPrefix(strings.TrimSpace(string(addr)), "unix://"))
	if err != nil {
		t.Fatal(err)
	}
	shimConn := ttrpc.NewClient(conn)
	defer shimConn.Close()
	shim := shimapi.NewTTRPCTaskClient(shimConn)
	created, err := shim.Create(ctx, req)
	if err != nil {
		t.Fatalf("create on the shim: %v", err)
	}
	initPid := int(created.Pid)
	t.Cleanup(func() { // only if the runtime did not end it
		_, _ = shim.Kill(ctx, &shimapi.KillRequest{ID: id, Signal: 9, All: true})
		_, _ = shim.Delete(ctx, &shimapi.DeleteRequest{ID: id})
	})
	if _, err := lost.Task(ctx, nil); err == nil {
		t.Fatal("containerd knows the task; the test does not make the state it is about")
	}
	if !alive(initPid) || !mounted(t, filepath.Join(bundle, "rootfs")) {
		t.Fatal("no runc init or rootfs mount; the test does not make the state it is about")
	}

	if err := rt.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); alive(initPid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the lost task's runc init (pid %d) still runs after its container's removal", initPid)
		}
	}
	if mounted(t, filepath.Join(bundle, "rootfs")) {
		t.Error("the lost task's rootfs is still mounted")
	}
	if _, err := os.Stat(bundle); !os.IsNotExist(err) {
		t.Errorf("the lost task's bundle is still there: %v", err)
	}
	if _, err := client.LoadContainer(ctx, id); err == nil {
		t.Error("container still there after its removal")
	}
	// The shim serves the other task on.
	st, err := firstTask.Status(ctx)
	if err != nil || st.Status != containerd.Running {
		t.Fatalf("the shim's other task: %v %v", st.Status, err)
	}
	if got := ppid(t, firstTask.Pid()); got != shimPid {
		t.Fatalf("the other task's parent is now %s, was the shim %s", got, shimPid)
	}
}

// mounted says whether path is a mount point.
func mounted(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == path {
			return true
		}
	}
	return false
}

// sleeperContainer creates container id running `sleep 3600` from img on the runc v2 shim,
// deleted (with its snapshot) when the test ends; opts add to its spec.
func sleeperContainer(t *testing.T, ctx context.Context, client *containerd.Client, img containerd.Image, id string, opts ...oci.SpecOpts) containerd.Container {
	t.Helper()
	spec := append([]oci.SpecOpts{oci.WithDefaultSpec(), oci.WithImageConfig(img), oci.WithProcessArgs("sleep", "3600")}, opts...)
	c, err := client.NewContainer(ctx, id,
		containerd.WithImage(img), containerd.WithNewSnapshot(id, img),
		containerd.WithRuntime("io.containerd.runc.v2", nil),
		containerd.WithNewSpec(spec...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, containerd.WithSnapshotCleanup) })
	return c
}

// startTask creates and starts c's task (no I/O).
func startTask(t *testing.T, ctx context.Context, c containerd.Container) containerd.Task {
	t.Helper()
	task, err := c.NewTask(ctx, cio.NullIO)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return task
}

// containerd 1.6 gives up a task create whose caller died (podkeeper killed mid-create): it
// removes the task's bundle but may leave the runc shim it started for it running, idle, serving
// nothing (seen in TestChaosKill9DuringStartThenRemoved: such a shim's create was still blocked
// when podkeeper, restarted, removed the container, and containerd removed the bundle under it).
// Made here as containerd makes it: a shim started for the container's task in its bundle, the
// bundle removed while RemoveContainer waits for the create to settle. The shim must end.
func TestRemoveContainerEndsTheIdleShimOfACreateGivenUp(t *testing.T) {
	rt, ctx := newRuntime(t)
	client, img := busyboxImage(t, rt, ctx)
	ctx = namespaces.WithNamespace(ctx, testNS)
	id := fmt.Sprintf("pk-givenup-%d", time.Now().UnixNano())
	c := sleeperContainer(t, ctx, client, img, id)
	spec, err := c.Spec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(env.Dir, "state", "io.containerd.runtime.v2.task", testNS, id)
	if err := os.MkdirAll(bundle, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(bundle) })
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), js, 0o600); err != nil {
		t.Fatal(err)
	}
	// As containerd starts a shim: the shim's log is a FIFO in the bundle that containerd reads;
	// `start` in the bundle prints the socket of the shim it leaves running.
	logFifo := filepath.Join(bundle, "log")
	if err := syscall.Mkfifo(logFifo, 0o700); err != nil {
		t.Fatal(err)
	}
	shimLog, err := os.OpenFile(logFifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shimLog.Close() })
	go func() { _, _ = io.Copy(io.Discard, shimLog) }()
	ctrd, err := exec.LookPath("containerd")
	if err != nil {
		t.Fatal(err)
	}
	start := exec.Command("containerd-shim-runc-v2", "-namespace", testNS, "-address", env.Address,
		"-publish-binary", ctrd, "-id", id, "start")
	start.Dir = bundle
	start.Env = append(os.Environ(), "TTRPC_ADDRESS="+env.Address+".ttrpc") // where it publishes events
	var stderr strings.Builder
	start.Stderr = &stderr
	addr, err := start.Output()
	if err != nil {
		t.Fatalf("start a shim: %v: %s", err, stderr.String())
	}
	if err := os.WriteFile(filepath.Join(bundle, "address"), addr, 0o600); err != nil {
		t.Fatal(err)
	}
	var shim int
	for _, pid := range RuncShimPIDs(env.Address, testNS) {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.Contains(string(b), "\x00"+id+"\x00") {
			shim = pid
		}
	}
	if shim == 0 {
		t.Fatal("the started shim does not run; the test does not make the state it is about")
	}
	t.Cleanup(func() { // only if the runtime did not end it
		if alive(shim) {
			_ = syscall.Kill(shim, syscall.SIGKILL)
		}
	})

	removed := make(chan error, 1)
	go func() { removed <- rt.RemoveContainer(ctx, id) }()
	// RemoveContainer waits for the create to settle, and containerd gives it up meanwhile.
	time.Sleep(300 * time.Millisecond)
	if err := os.RemoveAll(bundle); err != nil {
		t.Fatal(err)
	}
	if err := <-removed; err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); alive(shim); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the idle shim (pid %d) of the given-up create still runs after its container's removal", shim)
		}
	}
	if _, err := client.LoadContainer(ctx, id); err == nil {
		t.Error("container still there after its removal")
	}
}
