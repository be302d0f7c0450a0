package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/podrunner/api"
	pkruntime "github.com/podkeeper/podkeeper/podrunner/runtime"
)

const (
	nodeName = "bench"
	// sleeper is every benchmark container's command: it runs until SIGTERM and then exits at once
	// (busybox sleep as PID 1 would ignore SIGTERM and make teardown measure the grace period).
	sleeper = `trap "exit 0" TERM; sleep 3600 & wait`
)

func podName(i int) string { return fmt.Sprintf("bp-%d", i) }

// podManifest is benchmark pod i: one busybox sleeper container.
func podManifest(i int) string { return benchPod(podName(i), "", sleeper, "") }

// benchPod is a pod of one busybox container "c" running command under sh; spec and container
// are extra lines (indented) of the pod spec and of the container.
func benchPod(name, spec, command, container string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
%s  restartPolicy: Always
  terminationGracePeriodSeconds: 5
  containers:
  - name: c
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
%s`, name, spec, command, container)
}

// podkeeperRunner drives one `podkeeper run` agent through its manifest directory and local API.
type podkeeperRunner struct {
	bin, dir, manifests, sock, address, ns string
	cmd                                    *exec.Cmd
	api                                    *api.Client
	rt                                     *pkruntime.Runtime
	ctrdPID                                int // the containerd it uses (the benchmark's)
}

func newPodkeeper(ctx context.Context, binDir, address, ns, busyboxTar string) (*podkeeperRunner, error) {
	dir, err := os.MkdirTemp("/tmp", "pkb-")
	if err != nil {
		return nil, err
	}
	p := &podkeeperRunner{bin: filepath.Join(binDir, "podkeeper"), dir: dir, manifests: filepath.Join(dir, "manifests"),
		sock: filepath.Join(dir, "api.sock"), address: address, ns: ns}
	for _, d := range []string{p.manifests, filepath.Join(dir, "root", "images"), filepath.Join(dir, "logs"), p.network().ConfDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.Link(busyboxTar, filepath.Join(dir, "root", "images", "busybox.tar")); err != nil {
		return nil, fmt.Errorf("image for the agent: %w", err)
	}
	out, err := os.Create(filepath.Join(dir, "agent.log"))
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(p.bin, "run", "--manifest-dir", p.manifests, "--root-dir", filepath.Join(dir, "root"),
		"--log-dir", filepath.Join(dir, "logs"), "--containerd-address", address, "--containerd-namespace", ns,
		"--container-log-links-dir", filepath.Join(dir, "containers"),
		"--node-name", nodeName, "--api-socket", p.sock, "--log-format", "text", "--log-level", "warn",
		"--max-pods", "400", // as the kubelet's maxPods here: the scaling row starts 300 pods
		// The allocatable as the kubelet's here (its evictionHard memory.available is 1Mi): what a
		// downward-API limit without a limit reads (make conformance's inside-downward).
		"--eviction-hard-memory", "1Mi",
		// Its default network in a private CNI dir (never /etc/cni/net.d, where Debian's podman
		// ships its own network): the kubelet gets the same plugin chain (benchNetwork).
		"--cni-conf-dir", p.network().ConfDir, "--netns-dir", p.network().NetnsDir,
		"--cni-bridge", p.network().Default.Bridge, "--pod-subnet", p.network().Default.Subnet)
	// PKBENCH_AGENT_FLAGS: more `podkeeper run` flags, for A/B runs of an agent setting.
	p.cmd.Args = append(p.cmd.Args, strings.Fields(os.Getenv("PKBENCH_AGENT_FLAGS"))...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	out.Close()
	p.api = api.NewClient(p.sock)
	deadline := time.Now().Add(60 * time.Second)
	for p.api.Healthz(ctx) != nil {
		if time.Now().After(deadline) {
			p.Close()
			return nil, fmt.Errorf("podkeeper did not answer within 60s (log: %s)", filepath.Join(dir, "agent.log"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// With the agent's network, so that Close's fallback clean-up runs CNI DEL for what it removes.
	if p.rt, err = pkruntime.Dial(ctx, pkruntime.Config{Address: address, Namespace: ns, Network: p.network()}); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// network is the agent's pod network as its flags make it: podkeeper's default conflist in a
// private dir.
func (p *podkeeperRunner) network() pkruntime.NetworkConfig {
	return pkruntime.NetworkConfig{
		ConfDir:  filepath.Join(p.dir, "cni"),
		BinDirs:  pkruntime.DefaultCNIBinDirs,
		NetnsDir: filepath.Join(p.dir, "netns"),
		Default:  benchNetwork("pkbench-podkeeper", "pkbpk0", "10.234.0.0/16", filepath.Join(p.dir, "root", "cni", "networks")),
	}
}

// benchNetwork is the pod network every runner with one gets: podkeeper's default network
// (bridge with host-local IPAM and hairpin, one masquerade rule for the subnet, then portmap) on its own bridge and subnet.
func benchNetwork(name, bridge, subnet, dataDir string) pkruntime.DefaultNetwork {
	return pkruntime.DefaultNetwork{Name: name, Bridge: bridge, Subnet: subnet, DataDir: dataDir}
}

func (p *podkeeperRunner) Name() string { return "podkeeper" }

func (p *podkeeperRunner) AgentPIDs() []int { return []int{p.cmd.Process.Pid} }

func (p *podkeeperRunner) ShimPIDs() []int { return shimsOf(p.address, p.ns) }

func (p *podkeeperRunner) write(i int) error { return p.writeManifest(podName(i), podManifest(i)) }

// StartBatch writes the manifests of pods [first, first+n) and waits until the local API shows
// every pod the directory holds Running with all its containers running.
func (p *podkeeperRunner) StartBatch(ctx context.Context, first, n int) (time.Duration, error) {
	want, _ := filepath.Glob(filepath.Join(p.manifests, "*.yaml"))
	total := len(want) + n
	t0 := time.Now()
	for i := first; i < first+n; i++ {
		if err := p.write(i); err != nil {
			return 0, err
		}
	}
	poll := pollEvery(n)
	deadline := t0.Add(startTimeout(n))
	for {
		if got := p.runningCount(ctx); got == total {
			return time.Since(t0), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("podkeeper: %d of %d pods Running after %v", p.runningCount(ctx), total, time.Since(t0))
		}
		if err := pause(ctx, poll); err != nil {
			return 0, err
		}
	}
}

func (p *podkeeperRunner) runningCount(ctx context.Context) int {
	l, err := p.api.Pods(ctx)
	if err != nil {
		return -1
	}
	n := 0
	for i := range l.Items {
		if podRunning(&l.Items[i]) {
			n++
		}
	}
	return n
}

func podRunning(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

// RemoveAll deletes every manifest and waits until the API lists no pod and containerd holds no
// container of the namespace.
func (p *podkeeperRunner) RemoveAll(ctx context.Context) (time.Duration, error) {
	files, _ := filepath.Glob(filepath.Join(p.manifests, "*.yaml"))
	t0 := time.Now()
	for _, f := range files {
		if err := os.Remove(f); err != nil {
			return 0, err
		}
	}
	deadline := t0.Add(startTimeout(len(files)))
	poll := pollEvery(len(files))
	for {
		l, err := p.api.Pods(ctx)
		if err == nil && len(l.Items) == 0 {
			if recs, err := p.rt.ListContainers(ctx, ""); err == nil && len(recs) == 0 {
				return time.Since(t0), nil
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("podkeeper: pods still present %v after removing %d manifests", time.Since(t0), len(files))
		}
		if err := pause(ctx, poll); err != nil {
			return 0, err
		}
	}
}

// Close removes what is left through the agent first (so that every pod gets its CNI DEL and
// graceful stop), then ends it, then removes any container still there.
func (p *podkeeperRunner) Close() {
	if p.cmd != nil && p.cmd.ProcessState == nil {
		if files, _ := filepath.Glob(filepath.Join(p.manifests, "*.yaml")); len(files) > 0 && p.rt != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			_, _ = p.RemoveAll(ctx)
			cancel()
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		_ = p.cmd.Wait()
	}
	if p.rt != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		recs, _ := p.rt.ListContainers(ctx, "")
		for _, r := range recs {
			_ = p.rt.StopContainer(ctx, r.ID, 0)
			_ = p.rt.RemoveContainer(ctx, r.ID)
		}
		cancel()
		p.rt.Close()
	}
	// The agent keeps its subnet's masquerade rule after it stops (its pods would outlive it).
	if err := pkruntime.RemoveMasquerade(context.Background(), p.network().ConfDir); err != nil {
		log.Printf("podkeeper: %v", err)
	}
	_ = exec.Command("ip", "link", "del", p.network().Default.Bridge).Run()
	if os.Getenv("BENCH_KEEP") == "" {
		os.RemoveAll(p.dir)
	}
}

// logTail returns the end of the agent's log, for error messages.
func (p *podkeeperRunner) logTail() string {
	b, _ := os.ReadFile(filepath.Join(p.dir, "agent.log"))
	s := string(b)
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return strings.TrimSpace(s)
}

// pollEvery is the status polling period: fine for one pod, coarser for many (the poll itself
// costs the agent CPU).
func pollEvery(n int) time.Duration {
	if n <= 1 {
		return 10 * time.Millisecond
	}
	return 50 * time.Millisecond
}

func startTimeout(n int) time.Duration { return 2*time.Minute + time.Duration(n)*2*time.Second }
