package e2e

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/podrunner"
)

// freePort returns a TCP port on 127.0.0.1 nothing listens on (hostNetwork pods use it).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func podReady(p *corev1.Pod) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status
		}
	}
	return ""
}

// events returns `podkeeper get events` output.
func (a *agent) events() string {
	a.t.Helper()
	out, err := a.cli("get", "events")
	if err != nil {
		a.t.Fatal(err)
	}
	return out
}

func (a *agent) waitEvent(timeout time.Duration, substrings ...string) {
	a.t.Helper()
	a.eventually(timeout, fmt.Sprintf("an event with %q", substrings), func() (bool, string) {
		out := a.events()
		for _, l := range strings.Split(out, "\n") {
			all := true
			for _, s := range substrings {
				all = all && strings.Contains(l, s)
			}
			if all {
				return true, ""
			}
		}
		return false, out
	})
}

// An exec liveness probe that starts failing after 3 s restarts the container within
// failureThreshold x period + the probe's grace (plus, for a loaded machine, a period for the
// schedule's phase, the probe's timeout for the run itself and 2 s for the 1 s resolution of
// the status timestamps), and the events say why.
func TestProbeExecLivenessRestarts(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "pk-e2e-liveness")
	a.write("live.yaml", podYAML("live", "Always", 30, "",
		shContainer("app", "touch /tmp/healthy; sleep 3; rm /tmp/healthy; exec sleep 3600", `    livenessProbe:
      exec:
        command: ["cat", "/tmp/healthy"]
      periodSeconds: 1
      timeoutSeconds: 3
      failureThreshold: 2
      terminationGracePeriodSeconds: 1
`)))
	p := a.waitPod(60*time.Second, "live-e2e", "restarted by its liveness probe", func(p *corev1.Pod) bool {
		cs := status(p, "app")
		return cs.RestartCount >= 1 && cs.LastTerminationState.Terminated != nil
	})
	last := status(p, "app").LastTerminationState.Terminated
	failingSince := last.StartedAt.Add(3 * time.Second)
	took := last.FinishedAt.Sub(failingSince)
	bound := 2*time.Second + 1*time.Second + 1*time.Second + 3*time.Second + 2*time.Second // 2 x period + grace + period + timeout + rounding
	t.Logf("killed %v after the probe started failing (bound %v); exit code %d", took, bound, last.ExitCode)
	if took > bound {
		t.Fatalf("container killed %v after its liveness probe started failing, want <= %v", took, bound)
	}
	if last.ExitCode != 137 {
		t.Fatalf("killed instance exit code %d, want 137 (SIGKILL after the probe's 1 s grace; sleep ignores nothing but is pid 1)", last.ExitCode)
	}
	a.waitEvent(10*time.Second, "Warning", "Unhealthy", `Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory`)
	a.waitEvent(10*time.Second, "Normal", "Killing", "Container app failed liveness probe, will be restarted")
}

// Restarts after liveness kills are paced as the kubelet paces them (ProbeKillDelay): the second
// comes at once after its kill, where a crash's back-off would wait 10 s.
func TestProbeKillRestartPacing(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "pk-e2e-killpace")
	a.write("pace.yaml", podYAML("pace", "Always", 1, "",
		shContainer("app", "exec sleep 3600", `    livenessProbe:
      exec:
        command: ["false"]
      periodSeconds: 1
      failureThreshold: 1
      terminationGracePeriodSeconds: 1
`)))
	p := a.waitPod(90*time.Second, "pace-e2e", "restarted twice by its liveness probe", func(p *corev1.Pod) bool {
		return status(p, "app").RestartCount >= 2
	})
	var first, second podrunner.ContainerRecord
	for _, r := range a.records(string(p.UID)) {
		switch r.Attempt {
		case 1:
			first = r
		case 2:
			second = r
		}
	}
	if first.FinishedAt.IsZero() || second.StartedAt.IsZero() {
		t.Fatalf("instances 1 and 2 not both kept: %+v %+v", first, second)
	}
	// At once: well under the 10 s a crash would wait (a loaded machine may take seconds).
	if gap := second.StartedAt.Sub(first.FinishedAt); gap >= 8*time.Second {
		t.Errorf("second restart %v after the first kill, want at once (the kubelet's pacing of probe kills)", gap)
	}
}

// A container killed by its liveness probe under OnFailure restarts even when its SIGTERM
// handler exits 0, as the kubelet decides at the kill (the pod was Succeeded before), and its
// preStop hook runs first, as in the kubelet's killContainer (it did not run before).
func TestProbeKillRestartsUnderOnFailure(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "pk-e2e-killonfail")
	a.write("of.yaml", podYAML("of", "OnFailure", 1, "  volumes:\n  - name: d\n    emptyDir: {}\n",
		shContainer("app", `if [ -f /d/ran ]; then rm -f /d/kill-me; echo second $(cat /d/prestop); exec sleep 3600; fi; touch /d/ran /d/kill-me; trap "exit 0" TERM; sleep 3600 & wait`,
			`    volumeMounts:
    - name: d
      mountPath: /d
    lifecycle:
      preStop:
        exec:
          command: ["sh", "-c", "echo prestop-ran > /d/prestop"]
    livenessProbe:
      exec:
        command: ["sh", "-c", "test ! -f /d/kill-me"]
      periodSeconds: 1
      failureThreshold: 1
`)))
	p := a.waitPod(60*time.Second, "of-e2e", "restarted after the kill", func(p *corev1.Pod) bool {
		return status(p, "app").RestartCount == 1 && status(p, "app").State.Running != nil
	})
	if p.Status.Phase != corev1.PodRunning {
		t.Errorf("phase %s, want Running", p.Status.Phase)
	}
	if last := status(p, "app").LastTerminationState.Terminated; last == nil || last.ExitCode != 0 {
		t.Errorf("last state %+v, want the killed instance's exit 0", last)
	}
	a.eventually(20*time.Second, "the preStop hook ran before the kill", func() (bool, string) {
		out, err := a.cli("logs", "of-e2e")
		return err == nil && out == "second prestop-ran\n", out
	})
}

// An httpGet readiness probe against busybox httpd: Ready flips false when the file is removed
// and true when it is back, without a restart.
func TestProbeHTTPReadiness(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "pk-e2e-readiness")
	port := freePort(t)
	a.write("web.yaml", podYAML("web", "Always", 1, "  hostNetwork: true\n",
		shContainer("httpd", fmt.Sprintf("mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 127.0.0.1:%d -h /www", port), fmt.Sprintf(`    readinessProbe:
      httpGet:
        path: /index.html
        port: %d
      periodSeconds: 1
      failureThreshold: 1
`, port))))
	ready := func(want corev1.ConditionStatus) func(p *corev1.Pod) bool {
		return func(p *corev1.Pod) bool {
			cs := status(p, "httpd")
			return running(p) && podReady(p) == want && cs.Ready == (want == corev1.ConditionTrue)
		}
	}
	a.waitPod(60*time.Second, "web-e2e", "ready", ready(corev1.ConditionTrue))
	if _, err := a.cli("exec", "web", "--", "mv", "/www/index.html", "/www/gone.html"); err != nil {
		t.Fatal(err)
	}
	a.waitPod(30*time.Second, "web-e2e", "not ready after the file went", ready(corev1.ConditionFalse))
	a.waitEvent(10*time.Second, "Warning", "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 404")
	if _, err := a.cli("exec", "web", "--", "mv", "/www/gone.html", "/www/index.html"); err != nil {
		t.Fatal(err)
	}
	p := a.waitPod(30*time.Second, "web-e2e", "ready again", ready(corev1.ConditionTrue))
	if n := status(p, "httpd").RestartCount; n != 0 {
		t.Fatalf("readiness failure restarted the container %d times", n)
	}
}

// tcpSocket and grpc readiness probes pass and fail with what they probe: a TCP listener and a
// gRPC health server run by this test on 127.0.0.1, probed for a hostNetwork pod.
func TestProbeTCPAndGRPC(t *testing.T) {
	t.Parallel()
	tcpL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tcpPort := tcpL.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := tcpL.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	grpcL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_SERVING)
	go func() { _ = srv.Serve(grpcL) }()
	defer srv.Stop()
	grpcPort := grpcL.Addr().(*net.TCPAddr).Port

	a := startAgent(t, "pk-e2e-tcpgrpc")
	a.write("net.yaml", podYAML("net", "Always", 1, "  hostNetwork: true\n",
		shContainer("tcp", "exec sleep 3600", fmt.Sprintf("    readinessProbe:\n      tcpSocket:\n        port: %d\n      periodSeconds: 1\n      failureThreshold: 1\n", tcpPort)),
		shContainer("grpc", "exec sleep 3600", fmt.Sprintf("    readinessProbe:\n      grpc:\n        port: %d\n        service: db\n      periodSeconds: 1\n      failureThreshold: 1\n", grpcPort))))
	readiness := func(tcp, grpc bool) func(p *corev1.Pod) bool {
		return func(p *corev1.Pod) bool {
			return running(p) && status(p, "tcp").Ready == tcp && status(p, "grpc").Ready == grpc
		}
	}
	a.waitPod(60*time.Second, "net-e2e", "both ready", readiness(true, true))
	tcpL.Close()
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	a.waitPod(30*time.Second, "net-e2e", "neither ready", readiness(false, false))
	a.waitEvent(10*time.Second, "Unhealthy", "Readiness probe failed: dial tcp 127.0.0.1:", "connection refused")
	a.waitEvent(10*time.Second, "Unhealthy", `Readiness probe failed: service unhealthy (responded with "NOT_SERVING")`)
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_SERVING)
	p := a.waitPod(30*time.Second, "net-e2e", "grpc ready again", readiness(false, true))
	if podReady(p) != corev1.ConditionFalse {
		t.Fatalf("pod Ready = %s with a container not ready", podReady(p))
	}
}

// A startup probe holds liveness off: a liveness probe that would fail at once does not run
// (and kill) before the startup probe passed.
func TestProbeStartupDelaysLiveness(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "pk-e2e-startup")
	probe := `      exec:
        command: ["cat", "/tmp/started"]
      periodSeconds: 1
      timeoutSeconds: 5
`
	a.write("slow.yaml", podYAML("slow", "Always", 1, "",
		shContainer("app", "until [ -e /tmp/go ]; do sleep 0.2; done; sleep 2; touch /tmp/started; exec sleep 3600",
			"    startupProbe:\n"+probe+"      failureThreshold: 30\n    livenessProbe:\n"+probe+"      failureThreshold: 1\n")))
	a.waitPod(60*time.Second, "slow-e2e", "running, not started yet", func(p *corev1.Pod) bool {
		cs := status(p, "app")
		return running(p) && cs.Started != nil && !*cs.Started && !cs.Ready
	})
	// The app starts once the test has seen it not started (a fixed delay could pass between two
	// polls of a loaded machine), and then fails its startup probe two more times.
	if out, err := a.cli("exec", "slow", "--", "touch", "/tmp/go"); err != nil {
		t.Fatalf("exec: %v: %s", err, out)
	}
	p := a.waitPod(60*time.Second, "slow-e2e", "started and ready", func(p *corev1.Pod) bool {
		cs := status(p, "app")
		return running(p) && cs.Started != nil && *cs.Started && cs.Ready
	})
	time.Sleep(3 * time.Second) // liveness now runs every second; it must keep passing
	p = a.waitPod(10*time.Second, "slow-e2e", "still running", running)
	if n := status(p, "app").RestartCount; n != 0 {
		t.Fatalf("liveness ran before the startup probe passed: %d restarts\n%s", n, a.events())
	}
	ev := a.events()
	if strings.Contains(ev, "Liveness probe failed") {
		t.Fatalf("liveness probe ran before startup passed:\n%s", ev)
	}
	if !strings.Contains(ev, "Startup probe failed: cat: can't open '/tmp/started'") {
		t.Fatalf("no startup probe failure recorded:\n%s", ev)
	}
}

// An exec probe that hangs is killed at its timeout: it fails with the kubelet's message and the
// hung commands do not pile up in the container.
func TestProbeExecTimeoutKillsCommand(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "pk-e2e-hang")
	a.write("hang.yaml", podYAML("hang", "Always", 1, "",
		shContainer("app", "exec sleep 3600", `    readinessProbe:
      exec:
        command: ["sleep", "30"]
      periodSeconds: 1
      timeoutSeconds: 1
`)))
	a.waitPod(60*time.Second, "hang-e2e", "running", running)
	a.waitEvent(30*time.Second, "Unhealthy", `Readiness probe failed: command "sleep 30" timed out`)
	time.Sleep(4 * time.Second) // several more periods of hung probes
	out, err := a.cli("exec", "hang", "--", "ps")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "sleep 30"); n > 2 { // the one running now, perhaps one being reaped
		t.Fatalf("%d hung probe commands still running (a timed-out probe must be killed):\n%s", n, out)
	}
	p := a.waitPod(10*time.Second, "hang-e2e", "running, not ready", func(p *corev1.Pod) bool {
		return running(p) && !status(p, "app").Ready
	})
	if n := status(p, "app").RestartCount; n != 0 {
		t.Fatalf("readiness timeouts restarted the container %d times", n)
	}
}
