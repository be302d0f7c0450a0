package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// tmpfsAt mounts a small tmpfs at dir (made if missing) with the given propagation flag
// (unix.MS_SHARED, unix.MS_PRIVATE, 0: left as mounted); t.Cleanup unmounts it and everything
// mounted under it.
func tmpfsAt(t *testing.T, dir string, propagation uintptr) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=4m"); err != nil {
		t.Fatalf("mount tmpfs at %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	if propagation != 0 {
		if err := unix.Mount("", dir, "", propagation, ""); err != nil {
			t.Fatalf("mount propagation of %s: %v", dir, err)
		}
	}
}

// mountPropagation and recursiveReadOnly on real mounts: a mount the host makes under a
// HostToContainer volume appears in the container (not in a None one); a mount a privileged
// container makes under a Bidirectional volume appears on the host; a read-only mount with
// recursiveReadOnly Enabled makes the mounts under it read-only too (a plain read-only one
// does not); a propagating mount of a private host mount is refused with the reason; the
// status lists each mount as the kubelet does.
func TestMountPropagationAndRecursiveReadOnly(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	shared := filepath.Join(base, "shared")
	tmpfsAt(t, shared, unix.MS_SHARED)
	tmpfsAt(t, filepath.Join(shared, "sub"), 0) // there before the pod: the recursive read-only case
	private := filepath.Join(base, "private")
	tmpfsAt(t, private, unix.MS_PRIVATE)
	// The Bidirectional container's mount comes back to the host under shared; unmount it too.
	t.Cleanup(func() { _ = unix.Unmount(filepath.Join(shared, "fromctr"), unix.MNT_DETACH) })

	a := startAgent(t, "pk-e2e-mounts")
	vols := "  volumes:\n  - name: d\n    hostPath:\n      path: " + shared + "\n      type: Directory\n"
	mount := func(path, extra string) string {
		return "    - name: d\n      mountPath: " + path + "\n" + extra
	}
	const sleep = "exec sleep 3600"
	a.write("mounts.yaml", podYAML("mounts", "Always", 1, vols,
		shContainer("h2c", sleep, "    volumeMounts:\n"+mount("/h2c", "      mountPropagation: HostToContainer\n")),
		shContainer("none", sleep, "    volumeMounts:\n"+mount("/none", "")),
		shContainer("bidi", "mkdir -p /bidi/fromctr && mount -t tmpfs -o size=1m none /bidi/fromctr && echo from-container > /bidi/fromctr/f && "+sleep,
			"    securityContext:\n      privileged: true\n    volumeMounts:\n"+mount("/bidi", "      mountPropagation: Bidirectional\n")),
		shContainer("ro", sleep, "    volumeMounts:\n"+mount("/ro", "      readOnly: true\n")+
			mount("/rro", "      readOnly: true\n      recursiveReadOnly: Enabled\n"))))
	p := a.waitPod(60*time.Second, "mounts-e2e", "running", running)

	// Status: each spec mount, recursiveReadOnly resolved for read-only ones.
	vm := map[string]corev1.VolumeMountStatus{}
	for _, m := range status(p, "ro").VolumeMounts {
		vm[m.MountPath] = m
	}
	if m := vm["/rro"]; !m.ReadOnly || m.RecursiveReadOnly == nil || *m.RecursiveReadOnly != corev1.RecursiveReadOnlyEnabled {
		t.Errorf("status of /rro: %+v, want read-only, recursiveReadOnly Enabled", m)
	}
	if m := vm["/ro"]; !m.ReadOnly || m.RecursiveReadOnly == nil || *m.RecursiveReadOnly != corev1.RecursiveReadOnlyDisabled {
		t.Errorf("status of /ro: %+v, want read-only, recursiveReadOnly Disabled", m)
	}
	if m := status(p, "h2c").VolumeMounts; len(m) != 1 || m[0].Name != "d" || m[0].MountPath != "/h2c" || m[0].ReadOnly || m[0].RecursiveReadOnly != nil {
		t.Errorf("status of h2c's mounts: %+v", m)
	}

	// HostToContainer: a mount the host makes now is seen inside; not through a None mount.
	tmpfsAt(t, filepath.Join(shared, "late"), 0)
	if err := os.WriteFile(filepath.Join(shared, "late", "hello"), []byte("from-host"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := a.cli("exec", "mounts", "-c", "h2c", "--", "cat", "/h2c/late/hello")
	if err != nil || strings.TrimSpace(out) != "from-host" {
		t.Errorf("HostToContainer: the host's new mount not seen in the container: %q %v", out, err)
	}
	if out, err := a.cli("exec", "mounts", "-c", "none", "--", "cat", "/none/late/hello"); err == nil {
		t.Errorf("a mount without propagation saw the host's new mount: %q", out)
	}

	// Bidirectional: the container's mount is seen on the host.
	a.eventually(10*time.Second, "the container's mount on the host", func() (bool, string) {
		b, err := os.ReadFile(filepath.Join(shared, "fromctr", "f"))
		return err == nil && strings.TrimSpace(string(b)) == "from-container", "not yet"
	})

	// recursiveReadOnly: the submount is writable under the plain read-only mount, not under
	// the recursive one; the mount itself is read-only under both.
	if out, err := a.cli("exec", "mounts", "-c", "ro", "--", "touch", "/ro/sub/plain"); err != nil {
		t.Errorf("plain read-only mount: its submount should stay writable: %q %v", out, err)
	}
	for _, path := range []string{"/rro/sub/x", "/rro/x", "/ro/x"} {
		out, err := a.cli("exec", "mounts", "-c", "ro", "--", "touch", path)
		if err == nil || !strings.Contains(out+err.Error(), "Read-only file system") {
			t.Errorf("touch %s: %q %v, want Read-only file system", path, out, err)
		}
	}

	// A propagating mount of a host mount that does not propagate: refused, with the reason.
	a.write("privprop.yaml", podYAML("privprop", "Always", 1,
		"  volumes:\n  - name: d\n    hostPath:\n      path: "+private+"\n      type: Directory\n",
		shContainer("c", sleep, "    volumeMounts:\n    - name: d\n      mountPath: /d\n      mountPropagation: HostToContainer\n")))
	a.waitPod(30*time.Second, "privprop-e2e", "refused with the reason", func(p *corev1.Pod) bool {
		w := status(p, "c").State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError" && strings.Contains(w.Message, "not a shared or slave mount")
	})
}

// subPathExpr mounts only the expanded subdirectory of its volume (it was ignored, so the whole
// volume was mounted: every other pod's directory of a shared hostPath in reach); a subPath that
// a container turned into a symlink out of the volume is refused, never followed onto the host
// (CVE-2017-1002101), and the subPath mounts go with the pod.
func TestSubPathExprAndSymlinkEscape(t *testing.T) {
	a := startAgent(t, "pk-e2e-subpath")
	vol, _, dir := hostDir(t)
	if err := os.MkdirAll(filepath.Join(dir, "other-pod"), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "other-pod", "private"), []byte("not yours"), 0o644)
	a.write("expr.yaml", podYAML("expr", "Always", 1, vol, shContainer("c", "echo hi > /data/mine; ls /data; sleep 3600",
		"    env:\n    - name: POD_NAME\n      valueFrom:\n        fieldRef:\n          fieldPath: metadata.name\n"+
			"    volumeMounts:\n    - name: host\n      mountPath: /data\n      subPathExpr: $(POD_NAME)\n")))
	p := a.waitPod(60*time.Second, "expr-"+node, "expr running", running)
	if b, err := os.ReadFile(filepath.Join(dir, "expr-"+node, "mine")); err != nil || string(b) != "hi\n" {
		t.Errorf("the container's write is not in <hostPath>/<pod name>: %v %q", err, b)
	}
	if out, err := a.cli("logs", "expr-"+node); err != nil || strings.Contains(out, "other-pod") {
		t.Errorf("the container sees the whole volume (%v):\n%s", err, out)
	}
	a.write("escape.yaml", podYAML("escape", "Always", 1, "  volumes:\n  - name: shared\n    emptyDir: {}\n  initContainers:\n"+
		shContainer("plant", "ln -s / /shared/evil", "    volumeMounts:\n    - name: shared\n      mountPath: /shared\n"),
		shContainer("c", "ls /host; sleep 3600", "    volumeMounts:\n    - name: shared\n      mountPath: /host\n      subPath: evil\n")))
	e := a.waitPod(60*time.Second, "escape-"+node, "the escaping subPath refused", func(p *corev1.Pod) bool {
		w := status(p, "c").State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError"
	})
	if msg := status(e, "c").State.Waiting.Message; !strings.Contains(msg, "leads out of the volume") {
		t.Errorf("message %q names no escape", msg)
	}
	if out, _ := a.cli("logs", "escape-"+node); strings.Contains(out, "etc") {
		t.Fatalf("the container listed the host's root through the subPath:\n%s", out)
	}
	a.remove("expr.yaml")
	a.waitGone(60*time.Second, "expr-"+node, string(p.UID))
	ms, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(ms), filepath.Join(a.root, "pods", string(p.UID))) {
		t.Errorf("a subPath mount of the removed pod is left:\n%s", ms)
	}
}

// bindMountOptions (the kubelet hands them to the runtime): noexec on a volume stops a program
// on it from running; the same volume without it runs the program.
func TestBindMountOptions(t *testing.T) {
	a := startAgent(t, "pk-e2e-bindopts")
	_, _, dir := hostDir(t)
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\necho ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	vol := "  volumes:\n  - name: host\n    hostPath:\n      path: " + dir + "\n      type: Directory\n"
	mount := func(opts string) string {
		return "    volumeMounts:\n    - name: host\n      mountPath: /host\n" + opts
	}
	a.write("noexec.yaml", podYAML("noexec", "Always", 1, vol, shContainer("c", "/host/run.sh || echo refused; grep ' /host ' /proc/mounts; sleep 3600", mount("      bindMountOptions: [noexec, nodev]\n"))))
	a.write("exec.yaml", podYAML("exec", "Always", 1, vol, shContainer("c", "/host/run.sh || echo refused; sleep 3600", mount(""))))
	a.eventually(60*time.Second, "noexec refused the program", func() (bool, string) {
		out, err := a.cli("logs", "noexec-"+node)
		return err == nil && strings.Contains(out, "refused") && !strings.Contains(out, "ran") && strings.Contains(out, "noexec"), out
	})
	a.eventually(60*time.Second, "without it the program ran", func() (bool, string) {
		out, err := a.cli("logs", "exec-"+node)
		return err == nil && strings.Contains(out, "ran"), out
	})
}

// A volume that cannot be set up (a hostPath of type File that does not exist yet) is the
// kubelet's FailedMount: the container waits as ContainerCreating with the kubelet's message, a
// FailedMount warning names the volume, and the pod starts on its own once the file is there
// (the set-up is tried again with the kubelet's volume backoff, 500 ms doubling).
func TestVolumeSetUpFailureWaitsAsFailedMount(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "pk-e2e-failedmount")
	dir := t.TempDir()
	file := filepath.Join(dir, "later.conf")
	a.write("later.yaml", podYAML("later", "Always", 1, "  volumes:\n  - name: conf\n    hostPath:\n      path: "+file+"\n      type: File\n",
		shContainer("c", "cat /etc/later.conf; sleep 3600", "    volumeMounts:\n    - name: conf\n      mountPath: /etc/later.conf\n")))
	want := `MountVolume.SetUp failed for volume "conf" : hostPath type check failed: ` + file + ` is not a file`
	p := a.waitPod(60*time.Second, "later-"+node, "ContainerCreating", func(p *corev1.Pod) bool {
		w := status(p, "c").State.Waiting
		return w != nil && w.Reason == "ContainerCreating" && w.Message != ""
	})
	if w := status(p, "c").State.Waiting; w.Message != want {
		t.Errorf("waiting message %q, want %q", w.Message, want)
	}
	a.waitEvent(30*time.Second, "FailedMount", `MountVolume.SetUp failed for volume "conf"`)
	if ev := a.events(); strings.Contains(ev, "CreateContainerConfigError") {
		t.Errorf("a volume's set-up failure shown as a config error:\n%s", ev)
	}
	if err := os.WriteFile(file, []byte("here now\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.waitPod(60*time.Second, "later-"+node, "running once the file is there", running)
	a.eventually(20*time.Second, "the file's content in the container", func() (bool, string) {
		out, err := a.cli("logs", "later-"+node)
		return err == nil && strings.Contains(out, "here now"), out
	})
}
