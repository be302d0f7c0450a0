package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A memory hog over its 32Mi limit ends OOMKilled in the pod's status; a running pod shows up in
// `top pods` with its usage and in `describe node`; the agent's pod cgroups live under a parent
// unique to this test and are gone with the pods.
func TestResourcesOOMKilledTopAndNode(t *testing.T) {
	parent := privateCgroupParent(t, "pke-res")
	a := startAgent(t, "pk-e2e-res")
	limits := "    resources:\n      limits:\n        memory: 32Mi\n"
	a.write("hog.yaml", podYAML("hog", "Never", 1, "", shContainer("hog", "head -c 128m /dev/zero | tail", limits)))
	a.write("idle.yaml", podYAML("idle", "Always", 1, "", shContainer("idle", "sleep 3600",
		"    resources:\n      requests:\n        cpu: 100m\n        memory: 16Mi\n")))
	p := a.waitPod(60*time.Second, "hog-"+node, "hog terminated", func(p *corev1.Pod) bool {
		return status(p, "hog").State.Terminated != nil
	})
	if term := status(p, "hog").State.Terminated; term.Reason != "OOMKilled" || term.ExitCode != 137 {
		t.Errorf("hog ended %+v, want OOMKilled with exit code 137", term)
	}
	a.waitPod(60*time.Second, "idle-"+node, "idle running", running)
	out, err := a.cli("top", "pods")
	if err != nil {
		t.Fatalf("top pods: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "NAME") || !strings.Contains(lines[0], "CPU(cores)") || !strings.Contains(lines[0], "MEMORY(bytes)") {
		t.Fatalf("top pods header: %q", lines[0])
	}
	found := false
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) == 3 && strings.HasPrefix(f[0], "idle-") && strings.HasSuffix(f[1], "m") && strings.HasSuffix(f[2], "Mi") {
			found = true
		}
	}
	if !found {
		t.Fatalf("top pods has no usage line for idle:\n%s", out)
	}
	out, err = a.cli("describe", "node")
	if err != nil || !strings.Contains(out, "Allocatable:") || !strings.Contains(out, "MemoryPressure") || !strings.Contains(out, "idle-") {
		t.Fatalf("describe node (%v):\n%s", err, out)
	}
	a.remove("idle.yaml")
	a.remove("hog.yaml")
	a.eventually(60*time.Second, "pod cgroups removed", func() (bool, string) {
		entries, _ := os.ReadDir(filepath.Join("/sys/fs/cgroup/memory", parent, "burstable"))
		return len(entries) == 0 || !hasPodDir(entries), fmt.Sprint(entries)
	})
}

func hasPodDir(entries []os.DirEntry) bool {
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "pod") {
			return true
		}
	}
	return false
}

// removeCgroupParent removes the test's cgroup tree from every v1 controller (bottom-up rmdir).
// privateCgroupParent gives the agents this test starts a cgroup parent of their own (prefix-<n>),
// removed when the test ends (after the agents' own clean-up, which t.Cleanup runs first).
func privateCgroupParent(t *testing.T, prefix string) string {
	parent := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	t.Setenv("PODKEEPER_CGROUP_PARENT", parent)
	t.Cleanup(func() { removeCgroupParent(t, parent) })
	return parent
}

func removeCgroupParent(t testing.TB, parent string) {
	ctrls, _ := os.ReadDir("/sys/fs/cgroup")
	for _, c := range ctrls {
		root := filepath.Join("/sys/fs/cgroup", c.Name(), parent)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil && !os.IsNotExist(err) {
				t.Errorf("remove cgroup %s: %v", dirs[i], err)
			}
		}
	}
}

// --cgroup-driver systemd on a machine whose init is not systemd (this one) fails at start with
// the reason and what to do, instead of failing every pod later. On a systemd machine it runs.
func TestSystemdDriverWithoutSystemdFailsAtStart(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(binDir, "podkeeper"), "run", "--manifest-dir", filepath.Join(dir, "m"), "--root-dir", filepath.Join(dir, "root"),
		"--log-dir", filepath.Join(dir, "logs"), "--container-log-links-dir", filepath.Join(dir, "containers"), "--api-socket", filepath.Join(dir, "api.sock"), "--containerd-address", env.Address,
		"--containerd-namespace", "pk-e2e-sd", "--cgroup-driver", "systemd", "--cgroup-parent", "pke-sd")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := os.MkdirAll(filepath.Join(dir, "m"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	_, noSystemd := os.Stat("/run/systemd/system")
	select {
	case err := <-done:
		if noSystemd == nil {
			t.Fatalf("on a systemd machine podkeeper stopped: %v\n%s", err, out.String())
		}
		if err == nil || !strings.Contains(out.String(), "needs systemd as init, but PID 1 is") || !strings.Contains(out.String(), "--cgroup-driver cgroupfs") {
			t.Fatalf("exit %v, output:\n%s", err, out.String())
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		if noSystemd != nil {
			t.Fatalf("without systemd, podkeeper --cgroup-driver systemd still runs after 20 s:\n%s", out.String())
		}
	}
}

// Pod-level resources (spec.resources, on by default since Kubernetes 1.34): a pod with only
// pod-level limits is Guaranteed (its requests default to its limits, as the API server defaults
// them), its cgroup and its container without limits of its own are held to them, and the
// downward API gives that container the pod's limit.
func TestPodLevelResources(t *testing.T) {
	parent := privateCgroupParent(t, "pke-plr")
	a := startAgent(t, "pk-e2e-plr")
	a.write("plr.yaml", podYAML("plr", "Always", 1, "  resources:\n    limits:\n      cpu: 500m\n      memory: 64Mi\n",
		shContainer("c", "echo mem=$MEM; sleep 3600", "    env:\n    - name: MEM\n      valueFrom:\n        resourceFieldRef:\n          resource: limits.memory\n          divisor: 1Mi\n")))
	p := a.waitPod(60*time.Second, "plr-"+node, "plr running", running)
	if p.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("qosClass %s, want Guaranteed", p.Status.QOSClass)
	}
	if r := p.Status.Resources; r == nil || r.Limits.Memory().String() != "64Mi" || r.Requests.Cpu().String() != "500m" {
		t.Errorf("status.resources %+v, want the pod-level limits and requests", r)
	}
	a.eventually(20*time.Second, "the downward API gives the pod's memory limit", func() (bool, string) {
		out, err := a.cli("logs", "plr-"+node)
		return err == nil && strings.Contains(out, "mem=64\n"), out
	})
	podDir := podMemoryCgroup(t, parent, p)
	read := func(path string) string { return readTrimmed(t, path) }
	if got := read(filepath.Join(podDir, "memory.limit_in_bytes")); got != "67108864" {
		t.Errorf("pod memory.limit_in_bytes %s, want 67108864", got)
	}
	cpuDir := strings.Replace(podDir, "/sys/fs/cgroup/memory/", "/sys/fs/cgroup/cpu/", 1)
	if got := read(filepath.Join(cpuDir, "cpu.cfs_quota_us")); got != "50000" {
		t.Errorf("pod cpu.cfs_quota_us %s, want 50000", got)
	}
	ctrs, _ := os.ReadDir(podDir)
	n := 0
	for _, e := range ctrs {
		if !e.IsDir() {
			continue
		}
		if limit := read(filepath.Join(podDir, e.Name(), "memory.limit_in_bytes")); limit == "67108864" {
			n++
		}
	}
	if n == 0 {
		t.Errorf("no container cgroup in %s holds the pod's 64Mi limit", podDir)
	}
}

// spec.overhead counts in the pod cgroup as the kubelet counts it: added to the CPU request
// (shares) and to the CPU and memory limits the pod has; the container's own cgroup keeps its own
// limit.
func TestPodOverhead(t *testing.T) {
	parent := privateCgroupParent(t, "pke-ovh")
	a := startAgent(t, "pk-e2e-overhead")
	a.write("ovh.yaml", podYAML("ovh", "Always", 1, "  overhead:\n    cpu: 100m\n    memory: 16Mi\n",
		shContainer("c", "sleep 3600", "    resources:\n      limits:\n        cpu: 200m\n        memory: 32Mi\n")))
	p := a.waitPod(60*time.Second, "ovh-"+node, "ovh running", running)
	podDir := podMemoryCgroup(t, parent, p)
	read := func(path string) string { return readTrimmed(t, path) }
	cpuDir := strings.Replace(podDir, "/sys/fs/cgroup/memory/", "/sys/fs/cgroup/cpu/", 1)
	for file, want := range map[string]string{
		filepath.Join(podDir, "memory.limit_in_bytes"): "50331648", // 32Mi + 16Mi
		filepath.Join(cpuDir, "cpu.cfs_quota_us"):      "30000",    // 200m + 100m
		filepath.Join(cpuDir, "cpu.shares"):            "307",      // 300m requested
	} {
		if got := read(file); got != want {
			t.Errorf("%s = %s, want %s", file, got, want)
		}
	}
	ctrs, _ := os.ReadDir(podDir)
	n := 0
	for _, e := range ctrs {
		if e.IsDir() && read(filepath.Join(podDir, e.Name(), "memory.limit_in_bytes")) == "33554432" {
			n++
		}
	}
	if n == 0 {
		t.Errorf("no container cgroup in %s holds the container's own 32Mi limit", podDir)
	}
}

// podMemoryCgroup is pod p's memory cgroup (v1) under the cgroup parent the agent was given.
func podMemoryCgroup(t *testing.T, parent string, p *corev1.Pod) string {
	t.Helper()
	var dir string
	_ = filepath.WalkDir(filepath.Join("/sys/fs/cgroup/memory", parent), func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "pod"+string(p.UID) {
			dir = path
		}
		return nil
	})
	if dir == "" {
		t.Fatalf("no memory cgroup for pod %s under %s", p.UID, parent)
	}
	return dir
}

// readTrimmed is a cgroup file's content without surrounding space.
func readTrimmed(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// --max-pods: a pod beyond it is rejected as the kubelet rejects it (Failed, OutOfpods, a
// Warning event), the admitted pods are untouched, and, unlike the kubelet, the rejected pod
// starts on its own once a pod is removed and there is room.
func TestAdmissionMaxPodsThenRoom(t *testing.T) {
	a := startAgentAt(t, "pk-e2e-maxpods", env.Address, "--max-pods", "3")
	for i := 0; i < 3; i++ {
		a.write(fmt.Sprintf("m-%d.yaml", i), podYAML(fmt.Sprintf("m-%d", i), "Always", 1, "", shContainer("c", "sleep 3600", "")))
	}
	first := a.waitAllRunning(time.Minute, []string{"m-0-e2e", "m-1-e2e", "m-2-e2e"})
	a.write("m-3.yaml", podYAML("m-3", "Always", 1, "", shContainer("c", "sleep 3600", "")))
	p := a.waitPod(30*time.Second, "m-3-e2e", "rejected", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if p.Status.Reason != "OutOfpods" || !strings.Contains(p.Status.Message, "Node didn't have enough resource: pods") {
		t.Errorf("rejected pod: reason %q, message %q; want OutOfpods and the kubelet's message", p.Status.Reason, p.Status.Message)
	}
	a.waitEvent(10*time.Second, "OutOfpods")
	pods, err := a.pods()
	if err != nil {
		t.Fatal(err)
	}
	running := map[string]corev1.Pod{}
	for _, q := range pods {
		if _, ok := first[q.Name]; ok && q.Status.Phase == corev1.PodRunning {
			running[q.Name] = q
		}
	}
	if len(running) != 3 {
		t.Fatalf("%d of the 3 admitted pods running beside the rejected one", len(running))
	}
	noRestarts(t, running, "beside the rejected pod")
	a.remove("m-0.yaml")
	a.waitAllRunning(time.Minute, []string{"m-1-e2e", "m-2-e2e", "m-3-e2e"})
}
