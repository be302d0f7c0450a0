package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The probes phase: the same pods under podkeeper and under the real kubelet, each a busybox
// httpd on its own 127.0.0.1 port (hostNetwork) with an httpGet readiness probe every second;
// then the footprint (agent RSS, CPU of agent, shims and containerd over the window) with all of
// them probed. Then liveness: pods with an httpGet liveness probe (every second, failure
// threshold 1) whose httpd the benchmark kills; the figure is kill -> the pod Running again with
// restartCount 1 (the probe's period, the failed probe, the container's stop and the
// replacement's start).

// probeTarget is a runner whose pods the probes phase can write and list.
type probeTarget interface {
	runner
	writeManifest(name, content string) error
	podList(ctx context.Context) ([]corev1.Pod, error)
	containerdPID() int
}

type probeResult struct {
	runner  string
	n       int
	ready   time.Duration // manifests written -> every pod Ready
	agent   procMem
	shims   int
	shimMem procMem
	cpu     cpuUse
	// liveness: httpd killed -> Running with restartCount 1
	liveness sample
	// container running -> its first readiness / liveness probe (firstprobe.go)
	firstReady, firstLive sample
	err                   string
}

// probeServer is a probed pod's command: httpd in the background (the probe's target; killing it
// fails the probe but does not end the container), a sleeper in front that exits on SIGTERM.
func probeServer(port int) string {
	return fmt.Sprintf(`mkdir -p /www && echo ok > /www/index.html && httpd -f -p 127.0.0.1:%d -h /www & trap "exit 0" TERM; sleep 3600 & wait`, port)
}

func probePodManifest(name string, port int, liveness bool) string {
	probes := httpGetProbe("readinessProbe", "/", port, "")
	if liveness {
		probes += httpGetProbe("livenessProbe", "/", port, "      failureThreshold: 1\n")
	}
	return benchPod(name, "  hostNetwork: true\n", probeServer(port), probes)
}

// httpGetProbe is a container's probe of kind (readinessProbe, livenessProbe): an httpGet of
// 127.0.0.1:port/path every second, with extra lines (indented) of the probe.
func httpGetProbe(kind, path string, port int, extra string) string {
	return fmt.Sprintf("    %s:\n      httpGet:\n        host: 127.0.0.1\n        path: %s\n        port: %d\n      periodSeconds: 1\n%s", kind, path, port, extra)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// measureProbes runs the probes phase on t with n probed pods and `kills` liveness kills; ports
// start at base.
func measureProbes(ctx context.Context, t probeTarget, n, kills, base int, window time.Duration) probeResult {
	res := probeResult{runner: t.Name(), n: n}
	fail := func(err error) probeResult {
		res.err = err.Error()
		log.Printf("%s: probes: %v", t.Name(), err)
		_, _ = t.RemoveAll(ctx)
		return res
	}
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if err := t.writeManifest(fmt.Sprintf("pr-%d", i), probePodManifest(fmt.Sprintf("pr-%d", i), base+i, false)); err != nil {
			return fail(err)
		}
	}
	if err := waitPods(ctx, t, n, startTimeout(n), func(p *corev1.Pod) bool { return podRunning(p) && podReady(p) }); err != nil {
		return fail(fmt.Errorf("readiness: %w", err))
	}
	res.ready = time.Since(t0)
	time.Sleep(3 * time.Second)
	res.agent = sumMem(t.AgentPIDs())
	shims := t.ShimPIDs()
	res.shims, res.shimMem = len(shims), sumMem(shims)
	log.Printf("%s: %d pods probed every second, CPU over %v", t.Name(), n, window)
	var err error
	if res.cpu, err = measureCPU(ctx, window, t.AgentPIDs(), shims, t.containerdPID()); err != nil {
		return fail(err)
	}
	if _, err := t.RemoveAll(ctx); err != nil {
		return fail(err)
	}

	// Liveness: one kill per pod (a second kill of the same container would meet the backoff).
	for i := 0; i < kills; i++ {
		name := fmt.Sprintf("lv-%d", i)
		if err := t.writeManifest(name, probePodManifest(name, base+i, true)); err != nil {
			return fail(err)
		}
	}
	if err := waitPods(ctx, t, kills, startTimeout(kills), func(p *corev1.Pod) bool { return podRunning(p) && podReady(p) }); err != nil {
		return fail(fmt.Errorf("liveness pods: %w", err))
	}
	for i := 0; i < kills; i++ {
		port := base + i
		pids := findProcs(func(a []string) bool {
			return len(a) >= 4 && a[0] == "httpd" && strings.Contains(strings.Join(a, " "), fmt.Sprintf("127.0.0.1:%d ", port))
		})
		if len(pids) != 1 {
			return fail(fmt.Errorf("liveness: %d httpd processes on port %d, want 1", len(pids), port))
		}
		name := fmt.Sprintf("lv-%d", i)
		// restarts of lv-i's container, -1 when the pod is not listed: the kill is counted from
		// the count before it (a liveness probe that met the httpd before it listened may have
		// restarted it once already).
		restarts := func() int32 {
			pods, err := t.podList(ctx)
			if err != nil {
				return -1
			}
			for j := range pods {
				p := &pods[j]
				if (strings.HasPrefix(p.Name, name+"-") || p.Name == name) && podRunning(p) && len(p.Status.ContainerStatuses) > 0 {
					return p.Status.ContainerStatuses[0].RestartCount
				}
			}
			return -1
		}
		before := restarts()
		if before < 0 {
			return fail(fmt.Errorf("liveness: %s not running before the kill", name))
		}
		k0 := time.Now()
		if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
			return fail(err)
		}
		deadline := k0.Add(60 * time.Second)
		for {
			if restarts() == before+1 {
				res.liveness = append(res.liveness, time.Since(k0))
				break
			}
			if time.Now().After(deadline) {
				return fail(fmt.Errorf("liveness: %s not restarted within 60s of its httpd's kill", name))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if _, err := t.RemoveAll(ctx); err != nil {
		return fail(err)
	}
	if res.firstReady, res.firstLive, err = measureFirstProbes(ctx, t, kills); err != nil {
		return fail(err)
	}
	if _, err := t.RemoveAll(ctx); err != nil {
		return fail(err)
	}
	return res
}

// waitPods waits until n pods are listed and all satisfy ok.
func waitPods(ctx context.Context, t probeTarget, n int, timeout time.Duration, ok func(*corev1.Pod) bool) error {
	deadline := time.Now().Add(timeout)
	for {
		pods, err := t.podList(ctx)
		good := 0
		if err == nil {
			for i := range pods {
				if ok(&pods[i]) {
					good++
				}
			}
			if len(pods) == n && good == n {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d pods as wanted after %v (%v)", good, n, timeout, err)
		}
		if err := pause(ctx, pollEvery(n)); err != nil {
			return err
		}
	}
}

// podkeeper and the kubelet as probe targets.

func (p *podkeeperRunner) writeManifest(name, content string) error {
	tmp := filepath.Join(p.manifests, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(p.manifests, name+".yaml"))
}

func (p *podkeeperRunner) podList(ctx context.Context) ([]corev1.Pod, error) {
	l, err := p.api.Pods(ctx)
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

func (p *podkeeperRunner) containerdPID() int { return p.ctrdPID }

func (k *kubeletRunner) writeManifest(name, content string) error {
	tmp := filepath.Join(k.dir, name+".yaml")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(k.manifests, name+".yaml"))
}

func (k *kubeletRunner) podList(ctx context.Context) ([]corev1.Pod, error) { return k.pods(ctx) }

func (k *kubeletRunner) containerdPID() int { return k.ctrd.Process.Pid }
