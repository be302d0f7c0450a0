package runtime_test

import (
	"fmt"
	"testing"
	"time"

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
	if _, err := rt.EnsureImage(ctx, "busybox", corev1.PullIfNotPresent, podrunner.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx = namespaces.WithNamespace(ctx, testNS)
	client := rt.Client()
	ref, err := NormalizeRef("busybox")
	if err != nil {
		t.Fatal(err)
	}
	img, err := client.GetImage(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	group := fmt.Sprintf("pk-shimgroup-%d", time.Now().UnixNano())
	start := func(name string) (containerd.Container, containerd.Task) {
		t.Helper()
		id := group + "-" + name
		c, err := client.NewContainer(ctx, id,
			containerd.WithImage(img), containerd.WithNewSnapshot(id, img),
			containerd.WithRuntime("io.containerd.runc.v2", nil),
			containerd.WithNewSpec(oci.WithDefaultSpec(), oci.WithImageConfig(img), oci.WithProcessArgs("sleep", "3600"),
				oci.WithAnnotations(map[string]string{"io.containerd.runc.v2.group": group})))
		if err != nil {
			t.Fatal(err)
		}
		task, err := c.NewTask(ctx, cio.NullIO)
		if err != nil {
			t.Fatal(err)
		}
		if err := task.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = task.Delete(ctx, containerd.WithProcessKill)
			_ = c.Delete(ctx, containerd.WithSnapshotCleanup)
		})
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
