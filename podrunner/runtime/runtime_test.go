package runtime_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkeeper/podkeeper/internal/testenv"
	"github.com/podkeeper/podkeeper/podrunner"
	"github.com/podkeeper/podkeeper/podrunner/crilog"
	. "github.com/podkeeper/podkeeper/podrunner/runtime"
)

// These tests run against a real containerd started for this test binary.

const testNS = "pk-runtime-test"

var env *testenv.Containerd

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.StartContainerd(testNS)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: cannot start the test containerd:", err)
		os.Exit(1)
	}
	code := m.Run()
	env.Stop()
	testenv.RemoveBinaries()
	os.Exit(code)
}

func newRuntime(t *testing.T) (*Runtime, context.Context) {
	t.Helper()
	pause, err := testenv.PauseBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	rt, err := Connect(ctx, Config{
		Address: env.Address, Namespace: testNS, RootDir: t.TempDir(), PauseBinary: pause,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, ctx
}

func testPod(t *testing.T, ctrs ...corev1.Container) *corev1.Pod {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	grace := int64(2)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(fmt.Sprintf("%x", time.Now().UnixNano()) + "0000000000000000")},
		Spec:       corev1.PodSpec{Containers: ctrs, RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace},
	}
}

func sh(name, script string) corev1.Container {
	return corev1.Container{Name: name, Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"sh", "-c", script}}
}

// startPod creates the sandbox and every container of pod, and removes them all at cleanup.
func startPod(t *testing.T, rt *Runtime, ctx context.Context, pod *corev1.Pod, logDir string) (podrunner.ContainerRecord, []podrunner.ContainerRecord) {
	t.Helper()
	sb, err := rt.CreateSandbox(ctx, pod, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		recs, _ := rt.ListContainers(context.Background(), string(pod.UID))
		for _, r := range recs {
			_ = rt.StopContainer(context.Background(), r.ID, 0)
			_ = rt.RemoveContainer(context.Background(), r.ID)
		}
	})
	var out []podrunner.ContainerRecord
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if _, err := rt.EnsureImage(ctx, c.Image, c.ImagePullPolicy, podrunner.PullOptions{}); err != nil {
			t.Fatal(err)
		}
		rec, err := rt.StartContainer(ctx, podrunner.StartRequest{
			Pod: pod, Sandbox: sb, Container: c, Kind: podrunner.KindApp,
			LogPath: filepath.Join(logDir, c.Name, "0.log"),
		})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
	return sb, out
}

func netns(t *testing.T, pid uint32) string {
	t.Helper()
	l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func ppid(t *testing.T, pid uint32) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ppid ...
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return f[1]
}

func TestPodContainersShareSandboxNamespacesAndShim(t *testing.T) {
	rt, ctx := newRuntime(t)
	logs := t.TempDir()
	podA := testPod(t, sh("a1", "sleep 3600"), sh("a2", "sleep 3600"))
	podB := testPod(t, sh("b1", "sleep 3600"))
	podB.UID += "b"
	sbA, ctrsA := startPod(t, rt, ctx, podA, logs)
	sbB, ctrsB := startPod(t, rt, ctx, podB, logs)

	if a1, a2, s := netns(t, ctrsA[0].PID), netns(t, ctrsA[1].PID), netns(t, sbA.PID); a1 != a2 || a1 != s {
		t.Fatalf("containers of one pod in different network namespaces: a1=%s a2=%s sandbox=%s", a1, a2, s)
	}
	if a, b := netns(t, ctrsA[0].PID), netns(t, ctrsB[0].PID); a == b {
		t.Fatalf("two pods share a network namespace %s", a)
	}
	if self, _ := os.Readlink("/proc/self/ns/net"); self == netns(t, sbB.PID) {
		t.Fatal("a non-hostNetwork pod got the host's network namespace")
	}
	// One runc shim serves the whole pod.
	if p1, p2, ps := ppid(t, ctrsA[0].PID), ppid(t, ctrsA[1].PID), ppid(t, sbA.PID); p1 != p2 || p1 != ps {
		t.Fatalf("pod containers have different shims: %s %s %s", p1, p2, ps)
	}
	if ppid(t, ctrsA[0].PID) == ppid(t, ctrsB[0].PID) {
		t.Fatal("two pods share one shim")
	}
}

func TestHostNetworkPodUsesHostNamespace(t *testing.T) {
	rt, ctx := newRuntime(t)
	pod := testPod(t, sh("h", "sleep 3600"))
	pod.Spec.HostNetwork = true
	_, ctrs := startPod(t, rt, ctx, pod, t.TempDir())
	self, _ := os.Readlink("/proc/self/ns/net")
	if got := netns(t, ctrs[0].PID); got != self {
		t.Fatalf("hostNetwork container netns %s, host %s", got, self)
	}
}

func waitExited(t *testing.T, rt *Runtime, ctx context.Context, uid, id string) podrunner.ContainerRecord {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		recs, err := rt.ListContainers(ctx, uid)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.ID == id && r.State == podrunner.StateExited {
				return r
			}
		}
		select {
		case <-rt.Exits():
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatalf("container %s did not exit", id)
	return podrunner.ContainerRecord{}
}

func TestOutputGoesToCRILogAndExitIsRecorded(t *testing.T) {
	rt, ctx := newRuntime(t)
	logs := t.TempDir()
	pod := testPod(t, sh("echo", "echo out-line; echo err-line >&2; printf partial; exit 3"))
	_, ctrs := startPod(t, rt, ctx, pod, logs)
	waitExited(t, rt, ctx, string(pod.UID), ctrs[0].ID)
	rec, err := rt.Finalize(ctx, ctrs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.ExitCode != 3 || rec.Reason != "Error" || rec.FinishedAt.IsZero() || rec.State != podrunner.StateExited {
		t.Fatalf("finalized record = %+v, want exit 3 Error with finish time", rec)
	}
	// The exit is in the labels: a fresh listing (as after a podkeeper restart) shows it.
	recs, err := rt.ListContainers(ctx, string(pod.UID))
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, r := range recs {
		if r.ID == rec.ID {
			found = true
			if r.ExitCode != 3 || r.TaskPresent || r.State != podrunner.StateExited {
				t.Fatalf("listed record after finalize = %+v", r)
			}
		}
	}
	if !found {
		t.Fatal("finalized container vanished")
	}
	f, err := os.Open(filepath.Join(logs, "echo", "0.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		e, err := crilog.ParseLine(sc.Bytes())
		if err != nil {
			t.Fatalf("log line %q is not CRI format: %v", sc.Text(), err)
		}
		tag := "F"
		if e.Partial {
			tag = "P"
		}
		got = append(got, e.Stream+" "+tag+" "+string(e.Text))
	}
	want := map[string]bool{"stdout F out-line": true, "stderr F err-line": true, "stdout P partial": true}
	for _, g := range got {
		delete(want, g)
	}
	if len(want) > 0 {
		t.Fatalf("log lines %q lack %v", got, want)
	}
}

func TestStopSendsSIGTERMThenSIGKILLAfterGrace(t *testing.T) {
	rt, ctx := newRuntime(t)
	pod := testPod(t,
		sh("polite", "trap 'exit 0' TERM; while true; do sleep 0.1; done"),
		sh("stubborn", "trap '' TERM; while true; do sleep 0.1; done"))
	_, ctrs := startPod(t, rt, ctx, pod, t.TempDir())
	time.Sleep(300 * time.Millisecond) // let the shells install their traps

	if err := rt.StopContainer(ctx, ctrs[0].ID, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	polite, err := rt.Finalize(ctx, ctrs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if polite.ExitCode != 0 {
		t.Fatalf("container that traps TERM exited %d, want 0", polite.ExitCode)
	}

	start := time.Now()
	if err := rt.StopContainer(ctx, ctrs[1].ID, 1*time.Second); err != nil {
		t.Fatal(err)
	}
	stubborn, err := rt.Finalize(ctx, ctrs[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	if stubborn.ExitCode != 137 {
		t.Fatalf("container ignoring TERM exited %d, want 137 (SIGKILL)", stubborn.ExitCode)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("SIGKILL came after %v, before the 1s grace period ended", waited)
	}
}

func TestContainerThatCannotStartIsRecordedAsExit(t *testing.T) {
	rt, ctx := newRuntime(t)
	pod := testPod(t, corev1.Container{Name: "bad", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"/no/such/binary"}})
	sb, err := rt.CreateSandbox(ctx, pod, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		recs, _ := rt.ListContainers(context.Background(), string(pod.UID))
		for _, r := range recs {
			_ = rt.RemoveContainer(context.Background(), r.ID)
		}
	})
	_, err = rt.StartContainer(ctx, podrunner.StartRequest{Pod: pod, Sandbox: sb, Container: &pod.Spec.Containers[0], Kind: podrunner.KindApp, LogPath: filepath.Join(t.TempDir(), "0.log")})
	if err == nil {
		t.Fatal("starting a missing binary succeeded")
	}
	if !errors.Is(err, podrunner.ErrExitRecorded) {
		t.Fatalf("error %v does not say the failure was recorded as an exit", err)
	}
	recs, err := rt.ListContainers(ctx, string(pod.UID))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Name == "bad" {
			if r.State != podrunner.StateExited || r.Reason != podrunner.ReasonStartError || r.ExitCode != 128 || !strings.HasPrefix(r.Message, "failed to create containerd task: ") {
				t.Fatalf("record = %+v, want exited StartError, exit code 128, message failed to create containerd task: ...", r)
			}
			return
		}
	}
	t.Fatal("no record of the container that could not start")
}

func TestEnsureImagePolicies(t *testing.T) {
	rt, ctx := newRuntime(t)
	if res, err := rt.EnsureImage(ctx, "busybox", corev1.PullNever, podrunner.PullOptions{}); err != nil || res.ID == "" || res.Pulled {
		t.Fatalf("Never with a local image: %+v %v", res, err)
	}
	var ie *podrunner.ImageError
	if _, err := rt.EnsureImage(ctx, "example.invalid/none:1", corev1.PullNever, podrunner.PullOptions{}); !errors.As(err, &ie) || ie.Reason != "ErrImageNeverPull" ||
		ie.Message != `Container image "example.invalid/none:1" is not present with pull policy of Never` {
		t.Fatalf("Never without the image: %v", err)
	}
	if _, err := rt.EnsureImage(ctx, "busybox:Not A Tag", corev1.PullIfNotPresent, podrunner.PullOptions{}); !errors.As(err, &ie) || ie.Reason != "InvalidImageName" ||
		ie.Message != `Failed to apply default image tag "busybox:Not A Tag": couldn't parse image name "busybox:Not A Tag": invalid reference format` {
		t.Fatalf("an image name that does not parse: %v", err)
	}
	// Always with no registry reachable falls back to the local copy, with a warning.
	res, err := rt.EnsureImage(ctx, "127.0.0.1:1/busybox:latest", corev1.PullAlways, podrunner.PullOptions{})
	if err == nil {
		t.Fatalf("pull from a closed port succeeded: %+v", res)
	}
	if !strings.Contains(err.Error(), "ErrImagePull") {
		t.Fatalf("pull error %v lacks ErrImagePull", err)
	}
}

func TestExecRunsInContainerAndTimeoutKills(t *testing.T) {
	rt, ctx := newRuntime(t)
	pod := testPod(t, sh("app", "echo hello > /tmp/f; exec sleep 1000"))
	_, recs := startPod(t, rt, ctx, pod, t.TempDir())
	id := recs[0].ID

	var out strings.Builder
	code, err := rt.Exec(ctx, id, podrunner.ExecRequest{Cmd: []string{"cat", "/tmp/f"}, Stdout: &out})
	if err != nil || code != 0 || out.String() != "hello\n" {
		t.Fatalf("exec cat: code %d err %v out %q", code, err, out.String())
	}
	code, err = rt.Exec(ctx, id, podrunner.ExecRequest{Cmd: []string{"sh", "-c", "exit 3"}})
	if err != nil || code != 3 {
		t.Fatalf("exec exit 3: code %d err %v", code, err)
	}
	out.Reset()
	code, err = rt.Exec(ctx, id, podrunner.ExecRequest{Cmd: []string{"sh", "-c", "cat; echo done"}, Stdin: strings.NewReader("in\n"), Stdout: &out})
	if err != nil || code != 0 || out.String() != "in\ndone\n" {
		t.Fatalf("exec with stdin: code %d err %v out %q", code, err, out.String())
	}

	tctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = rt.Exec(tctx, id, podrunner.ExecRequest{Cmd: []string{"sleep", "100"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hanging exec: err %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("hanging exec returned after %s", d)
	}
	// The killed process is gone (it was sent SIGKILL before Exec returned): only the app's
	// sleep 1000 remains.
	for deadline := time.Now().Add(5 * time.Second); ; {
		out.Reset()
		if _, err := rt.Exec(ctx, id, podrunner.ExecRequest{Cmd: []string{"ps", "-o", "args"}, Stdout: &out}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "sleep 100\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed-out exec still running:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// LeaveRunning (a preStop hook past its grace period): Exec returns at the deadline, the
	// process runs on, and what it writes after no longer reaches the caller.
	lctx, lcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer lcancel()
	var late strings.Builder
	_, err = rt.Exec(lctx, id, podrunner.ExecRequest{Cmd: []string{"sh", "-c", "echo early; sleep 1; echo late; echo done > /tmp/late"},
		Stdout: &late, LeaveRunning: true})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("exec left running: err %v, want deadline exceeded", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		out.Reset()
		if _, err := rt.Exec(ctx, id, podrunner.ExecRequest{Cmd: []string{"cat", "/tmp/late"}, Stdout: &out}); err == nil && out.String() == "done\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the exec left running did not finish its command")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := late.String(); strings.Contains(got, "late") {
		t.Fatalf("output after the deadline reached the caller: %q", got)
	}
	if _, err := rt.Exec(ctx, "no-such-container", podrunner.ExecRequest{Cmd: []string{"true"}}); !errors.Is(err, podrunner.ErrNotFound) {
		t.Fatalf("exec in missing container: %v", err)
	}
}
