package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkProbeAgentCPU measures the CPU the agent uses to probe 110 pods (the kubelet's
// maxPods), each with an httpGet readiness probe and a tcpSocket liveness probe at 1 s periods
// against its own busybox httpd (hostNetwork, a port each). It reports the agent's CPU in cores
// (utime+stime of the podkeeper process over a 20 s window once every pod is ready). Not a
// test: run it by hand,
//
//	go test -run '^$' -bench ProbeAgentCPU -benchtime 1x -timeout 30m ./internal/e2e/
//
// PODKEEPER_BENCH_PODS changes the pod count.
func BenchmarkProbeAgentCPU(b *testing.B) {
	n := 110
	if v := os.Getenv("PODKEEPER_BENCH_PODS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	for i := 0; i < b.N; i++ {
		a := startAgent(b, fmt.Sprintf("pk-bench-probes-%d", i))
		base := 20000 + (os.Getpid()%200)*100
		var docs []string
		for p := 0; p < n; p++ {
			port := base + p
			probes := fmt.Sprintf(`    readinessProbe:
      httpGet:
        path: /
        port: %d
      periodSeconds: 1
    livenessProbe:
      tcpSocket:
        port: %d
      periodSeconds: 1
`, port, port)
			docs = append(docs, podYAML(fmt.Sprintf("p%03d", p), "Always", 1, "  hostNetwork: true\n",
				shContainer("web", fmt.Sprintf("mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 127.0.0.1:%d -h /www", port), probes)))
		}
		start := time.Now()
		a.write("bench.yaml", strings.Join(docs, "---\n"))
		a.eventually(20*time.Minute, fmt.Sprintf("%d pods ready", n), func() (bool, string) {
			pods, err := a.pods()
			if err != nil {
				return false, err.Error()
			}
			ready := 0
			for i := range pods {
				if podReady(&pods[i]) == corev1.ConditionTrue {
					ready++
				}
			}
			time.Sleep(time.Second)
			return ready == n, fmt.Sprintf("%d/%d ready", ready, n)
		})
		b.Logf("%d pods ready in %v", n, time.Since(start).Round(time.Second))
		time.Sleep(5 * time.Second) // let the start-up work settle
		cores := agentCores(b, a.cmd.Process.Pid, 20*time.Second)
		b.ReportMetric(cores, "cores")
		b.ReportMetric(float64(n), "pods")
		b.Logf("agent CPU with %d pods x (httpGet readiness + tcp liveness) at 1 s: %.3f cores", n, cores)
		var restarts int32
		pods, _ := a.pods()
		for _, p := range pods {
			for _, cs := range p.Status.ContainerStatuses {
				restarts += cs.RestartCount
			}
		}
		b.ReportMetric(float64(restarts), "restarts")
	}
}

// agentCores samples a process's utime+stime over window and returns the cores it used.
func agentCores(b testing.TB, pid int, window time.Duration) float64 {
	read := func() float64 {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			b.Fatal(err)
		}
		s := string(data)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		ut, _ := strconv.ParseFloat(f[11], 64) // field 14 of stat: utime (clock ticks, USER_HZ 100)
		st, _ := strconv.ParseFloat(f[12], 64) // field 15: stime
		return (ut + st) / 100
	}
	c0, t0 := read(), time.Now()
	time.Sleep(window)
	return (read() - c0) / time.Since(t0).Seconds()
}
