package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/internal/testenv"
	pkruntime "github.com/podkeeper/podkeeper/podrunner/runtime"
)

// kubeletRunner runs the same pods as static pods of the real kubelet (built from
// k8s.io/kubernetes in bench/kubelet) in standalone mode: no API server, no kubeconfig, pod
// status read from its read-only /pods endpoint. It gets its own containerd with the CRI plugin
// (CNI bridge from /usr/lib/cni, a locally built pause image, restrict_oom_score_adj because
// root here lacks CAP_SYS_RESOURCE).
type kubeletRunner struct {
	dir, manifests, address string
	logs                    string // podLogsDir: the containers' log files (not the host's /var/log/pods)
	roPort                  int
	ctrd, kubelet           *exec.Cmd
	client                  *containerd.Client
	http                    *http.Client
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func newKubelet(ctx context.Context, bin, busyboxTar string) (*kubeletRunner, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("no kubelet binary at %s (make bench builds it from bench/kubelet)", bin)
	}
	dir, err := os.MkdirTemp("/tmp", "pkbk-")
	if err != nil {
		return nil, err
	}
	k := &kubeletRunner{dir: dir, manifests: filepath.Join(dir, "manifests"), address: filepath.Join(dir, "c.sock"), logs: filepath.Join(dir, "logs"), http: &http.Client{Timeout: 5 * time.Second}}
	fail := func(err error) (*kubeletRunner, error) { k.Close(); return nil, err }
	for _, d := range []string{k.manifests, filepath.Join(dir, "cni"), filepath.Join(dir, "kubelet")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fail(err)
		}
	}
	toml := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = %[3]q
[ttrpc]
  address = "%[3]s.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[4]q
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[5]q
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), k.address, pauseImage, filepath.Join(dir, "cni"))
	// The same plugin chain as podkeeper's (benchNetwork), on a bridge and subnet of its own.
	cni, err := pkruntime.DefaultConflist(kubeletBenchNetwork(dir))
	if err != nil {
		return fail(err)
	}
	// The conflist asks for one masquerade rule for its subnet, which podkeeper's agent keeps
	// for its own network; for the kubelet's, pkbench does.
	if err := kubeletBenchNetwork(dir).Masquerade().Ensure(ctx); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "containerd.toml"), []byte(toml), 0o644); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cni", "10-pkbench.conflist"), cni, 0o644); err != nil {
		return fail(err)
	}
	clog, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		return fail(err)
	}
	defer clog.Close()
	k.ctrd = exec.Command("containerd", "--config", filepath.Join(dir, "containerd.toml"))
	k.ctrd.Stdout, k.ctrd.Stderr = clog, clog
	k.ctrd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := k.ctrd.Start(); err != nil {
		return fail(err)
	}
	for i := 0; !pkruntime.Answers(k.address); i++ {
		if i > 300 {
			return fail(fmt.Errorf("CRI containerd did not answer (log %s)", clog.Name()))
		}
		time.Sleep(100 * time.Millisecond)
	}
	rt, err := pkruntime.Dial(ctx, pkruntime.Config{Address: k.address, Namespace: "k8s.io"})
	if err != nil {
		return fail(err)
	}
	pause := filepath.Join(dir, "pause.tar")
	if err := writePauseImage(pause); err != nil {
		rt.Close()
		return fail(err)
	}
	for _, t := range []string{busyboxTar, pause} {
		if _, err := rt.ImportFile(ctx, t); err != nil {
			rt.Close()
			return fail(fmt.Errorf("import %s into the CRI containerd: %w", t, err))
		}
	}
	rt.Close()
	if k.client, err = containerd.New(k.address, containerd.WithDefaultNamespace("k8s.io")); err != nil {
		return fail(err)
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return fail(err)
		}
	}
	k.roPort = ports[1]
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
staticPodPath: %q
podLogsDir: %q
containerRuntimeEndpoint: unix://%s
address: 127.0.0.1
port: %d
readOnlyPort: %d
healthzPort: %d
healthzBindAddress: 127.0.0.1
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
failSwapOn: false
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%%"
  imagefs.available: "1%%"
  nodefs.inodesFree: "1%%"
localStorageCapacityIsolation: false
makeIPTablesUtilChains: false
maxPods: 400
`, k.manifests, k.logs, k.address, ports[0], ports[1], ports[2])
	if err := os.WriteFile(filepath.Join(dir, "kubelet.yaml"), []byte(cfg), 0o644); err != nil {
		return fail(err)
	}
	klog, err := os.Create(filepath.Join(dir, "kubelet.log"))
	if err != nil {
		return fail(err)
	}
	defer klog.Close()
	k.kubelet = exec.Command(bin, "--config", filepath.Join(dir, "kubelet.yaml"), "--root-dir", filepath.Join(dir, "kubelet"), "--hostname-override", nodeName, "--v=0")
	k.kubelet.Stdout, k.kubelet.Stderr = klog, klog
	if err := k.kubelet.Start(); err != nil {
		return fail(err)
	}
	for i := 0; ; i++ {
		if _, err := k.pods(ctx); err == nil {
			break
		}
		if i > 600 {
			return fail(fmt.Errorf("kubelet's /pods did not answer within 60s (log %s)", klog.Name()))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return k, nil
}

func (k *kubeletRunner) Name() string       { return "kubelet (standalone)" }
func (k *kubeletRunner) AgentPIDs() []int   { return []int{k.kubelet.Process.Pid} }
func (k *kubeletRunner) ShimPIDs() []int    { return shimsOf(k.address, "k8s.io") }
func (k *kubeletRunner) ContainerdPID() int { return k.ctrd.Process.Pid }

func (k *kubeletRunner) pods(ctx context.Context) ([]corev1.Pod, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/pods", k.roPort), nil)
	resp, err := k.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var l corev1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		return nil, err
	}
	return l.Items, nil
}

func (k *kubeletRunner) StartBatch(ctx context.Context, first, n int) (time.Duration, error) {
	have, _ := filepath.Glob(filepath.Join(k.manifests, "*.yaml"))
	total := len(have) + n
	t0 := time.Now()
	for i := first; i < first+n; i++ {
		if err := k.writeManifest(podName(i), podManifest(i)); err != nil {
			return 0, err
		}
	}
	deadline := t0.Add(startTimeout(n))
	for {
		pods, err := k.pods(ctx)
		r := 0
		for i := range pods {
			if podRunning(&pods[i]) {
				r++
			}
		}
		if err == nil && r == total {
			return time.Since(t0), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("kubelet: %d of %d pods Running after %v (log %s)", r, total, time.Since(t0), filepath.Join(k.dir, "kubelet.log"))
		}
		if err := pause(ctx, pollEvery(n)); err != nil {
			return 0, err
		}
	}
}

// runningTasks counts the running tasks of the CRI containerd.
func (k *kubeletRunner) runningTasks(ctx context.Context) (int, error) {
	resp, err := k.client.TaskService().List(namespaces.WithNamespace(ctx, "k8s.io"), nil)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range resp.Tasks {
		if t.Status.String() == "RUNNING" {
			n++
		}
	}
	return n, nil
}

// RemoveAll deletes the manifests and waits until /pods lists none and no task runs (the
// kubelet keeps dead containers and sandboxes for its garbage collector).
func (k *kubeletRunner) RemoveAll(ctx context.Context) (time.Duration, error) {
	files, _ := filepath.Glob(filepath.Join(k.manifests, "*.yaml"))
	t0 := time.Now()
	for _, f := range files {
		if err := os.Remove(f); err != nil {
			return 0, err
		}
	}
	deadline := t0.Add(startTimeout(len(files)))
	for {
		pods, err := k.pods(ctx)
		if err == nil && len(pods) == 0 {
			if n, err := k.runningTasks(ctx); err == nil && n == 0 {
				return time.Since(t0), nil
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("kubelet: pods still present %v after removing %d manifests", time.Since(t0), len(files))
		}
		if err := pause(ctx, pollEvery(len(files))); err != nil {
			return 0, err
		}
	}
}

// kubeletBenchNetwork is the kubelet's pod network: the same plugin chain as podkeeper's
// (benchNetwork), on a bridge and subnet of its own.
func kubeletBenchNetwork(dir string) pkruntime.DefaultNetwork {
	return benchNetwork(kubeletNetwork, "pkbench0", "10.233.0.0/16", filepath.Join(dir, "ipam"))
}

// kubeletNetwork is the CNI network the kubelet's pods are on.
const kubeletNetwork = "pkbench-kubelet"

func (k *kubeletRunner) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if k.kubelet != nil && k.kubelet.Process != nil {
		if files, _ := filepath.Glob(filepath.Join(k.manifests, "*.yaml")); len(files) > 0 {
			_, _ = k.RemoveAll(ctx)
		}
		_ = k.kubelet.Process.Signal(syscall.SIGTERM)
		_ = k.kubelet.Wait()
	}
	if k.client != nil {
		nctx := namespaces.WithNamespace(ctx, "k8s.io")
		cs, _ := k.client.Containers(nctx)
		var netns []string
		for _, c := range cs {
			if spec, err := c.Spec(nctx); err == nil && spec.Linux != nil {
				for _, ns := range spec.Linux.Namespaces {
					if ns.Type == "network" && (strings.HasPrefix(ns.Path, "/var/run/netns/") || strings.HasPrefix(ns.Path, "/run/netns/")) {
						netns = append(netns, ns.Path)
					}
				}
			}
			_ = removeContainer(nctx, k.client, c.ID(), syscall.SIGKILL)
		}
		// Sandboxes the kubelet only stopped keep their network namespace until removed.
		for _, p := range netns {
			_ = syscall.Unmount(p, syscall.MNT_DETACH)
			_ = os.Remove(p)
		}
		k.client.Close()
	}
	if k.ctrd != nil && k.ctrd.Process != nil {
		_ = k.ctrd.Process.Signal(syscall.SIGTERM)
		_ = k.ctrd.Wait()
	}
	// A shim whose container the removal above raced with outlives its containerd (one was left,
	// childless, after a 300-pod run): end the ones of this containerd's address, by PID.
	for _, pid := range shimsOf(k.address, "k8s.io") {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// Pods whose teardown the kubelet had not finished when it was stopped keep the bridge
	// plugin's masquerade chains (found after conformance runs): removed by their network's name.
	if n, err := testenv.RemoveMasqueradeChains(kubeletNetwork); err != nil {
		log.Printf("kubelet: removing its pods' leftover masquerade rules: %v", err)
	} else if n > 0 {
		log.Printf("kubelet: removed the masquerade rules of %d pods it did not tear down", n)
	}
	if err := kubeletBenchNetwork(k.dir).Masquerade().Remove(ctx); err != nil {
		log.Printf("kubelet: %v", err)
	}
	testenv.UnmountUnder(k.dir)
	_ = exec.Command("ip", "link", "del", "pkbench0").Run()
	removeKubepodsCgroups()
	if os.Getenv("BENCH_KEEP") == "" {
		os.RemoveAll(k.dir)
		// The kubelet links every container's log into the host's /var/log/containers (a fixed
		// directory); the links of containers it had not removed when stopped now dangle.
		if n, err := pkruntime.PruneLogLinks("/var/log/containers", k.logs); err != nil {
			log.Printf("kubelet: removing its dangling log links: %v", err)
		} else if n > 0 {
			log.Printf("kubelet: removed %d dangling log links from /var/log/containers", n)
		}
	}
}

// removeKubepodsCgroups removes the (empty) cgroup tree the kubelet made, deepest first.
func removeKubepodsCgroups() {
	var dirs []string
	for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		ms, _ := filepath.Glob(filepath.Join(root, "*", "kubepods*"))
		if m2, _ := filepath.Glob(filepath.Join(root, "kubepods*")); len(m2) > 0 {
			ms = append(ms, m2...)
		}
		for _, m := range ms {
			_ = filepath.Walk(m, func(p string, info os.FileInfo, err error) error {
				if err == nil && info.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
		}
	}
	sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	for _, d := range dirs {
		_ = syscall.Rmdir(d)
	}
}

// measureKubeletReaction kills the app container of `kills` different running static pods, one
// at a time, and measures as for podkeeper: containerd's exit event -> the next task start in
// the kubelet's namespace (only the killed pod restarts meanwhile), and SIGKILL -> /pods shows
// the pod Running with restartCount 1.
func measureKubeletReaction(ctx context.Context, k *kubeletRunner, kills int) (reaction, error) {
	var out reaction
	pods, err := k.pods(ctx)
	if err != nil {
		return out, err
	}
	sub, cancel := context.WithCancel(ctx)
	defer cancel()
	events := subscribeTaskEvents(sub, k.client, "k8s.io")
	done := 0
	for i := range pods {
		if done == kills {
			break
		}
		p := &pods[i]
		if !podRunning(p) || p.Status.ContainerStatuses[0].RestartCount != 0 {
			continue
		}
		nctx := namespaces.WithNamespace(ctx, "k8s.io")
		// One filter with both conditions (a comma is AND; separate filters are OR).
		cs, err := k.client.Containers(nctx, `labels."io.kubernetes.pod.name"==`+fmt.Sprintf("%q", p.Name)+`,labels."io.kubernetes.container.name"=="c"`)
		if err != nil || len(cs) != 1 {
			continue
		}
		t, err := cs[0].Task(nctx, nil)
		if err != nil {
			continue
		}
		id := cs[0].ID()
		drain(events)
		t0 := time.Now()
		if err := syscall.Kill(int(t.Pid()), syscall.SIGKILL); err != nil {
			return out, err
		}
		exitAt, startAt, err := waitExitThenStart(events, id, 60*time.Second)
		if err != nil {
			return out, fmt.Errorf("kubelet reaction: %w", err)
		}
		for {
			l, err := k.pods(ctx)
			ok := false
			for j := range l {
				if err == nil && l[j].Name == p.Name && podRunning(&l[j]) && l[j].Status.ContainerStatuses[0].RestartCount == 1 {
					ok = true
				}
			}
			if ok {
				break
			}
			if time.Since(t0) > 60*time.Second {
				return out, fmt.Errorf("kubelet reaction: %s not Running with restartCount 1 within 60s", p.Name)
			}
			time.Sleep(10 * time.Millisecond)
		}
		out.killToAPI = append(out.killToAPI, time.Since(t0))
		out.exitToStart = append(out.exitToStart, startAt.Sub(exitAt))
		done++
		time.Sleep(200 * time.Millisecond)
	}
	if done < kills {
		return out, fmt.Errorf("kubelet reaction: only %d pods to kill, wanted %d", done, kills)
	}
	return out, nil
}
