package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/internal/testenv"
)

// The operator-experience issue's "what must be shown": the CLI driven as a user would
// (`get pods -w`, `logs -f` across a restart, selectors, errors), a registry pull with auth from
// Debian's docker-registry, the metrics endpoint parsed with the Prometheus text parser, and
// every example of examples/ running.

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestOperator(t *testing.T) {
	reg, err := testenv.StartRegistry("pkuser", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	hosts, err := reg.HostsDir()
	if err != nil {
		t.Fatal(err)
	}
	dockerConfig := filepath.Join(reg.Dir, "node-config.json")
	if err := os.WriteFile(dockerConfig, reg.DockerConfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	ref := reg.Host + "/pk/busybox:v1"
	if err := reg.Push(env.Address, "unused", testenv.Image, ref); err != nil { // TestMain imported busybox there
		t.Fatal(err)
	}
	testenv.HoldPortmapChains(t) // examples/web-hostport.yaml maps a hostPort (before the agent: released after its clean-up)
	metricsAddr := freeAddr(t)
	a := startAgentAt(t, "pk-e2e-operator", env.Address,
		"--metrics-address", metricsAddr, "--registry-config-dir", hosts, "--docker-config", dockerConfig)
	t.Run("Examples", func(t *testing.T) { t.Parallel(); examples(t, a) })
	t.Run("WatchSeesChange", func(t *testing.T) { t.Parallel(); watchSeesChange(t, a) })
	t.Run("LogsFollowRestart", func(t *testing.T) { t.Parallel(); logsFollowRestart(t, a) })
	t.Run("RegistryPullWithAuth", func(t *testing.T) { t.Parallel(); registryPull(t, a, reg, hosts, dockerConfig) })
	t.Run("Metrics", func(t *testing.T) { t.Parallel(); scrapeMetrics(t, a, metricsAddr, ref) })
	t.Run("SelectorsNamesAndErrors", func(t *testing.T) { t.Parallel(); selectorsAndErrors(t, a) })
}

// exampleChecks says what each example must show now. Examples that need a feature other
// issues add still have to validate; their runtime assertions come with the feature.
var exampleChecks = map[string]struct {
	pods    []string // full names (namespace/name) that must be Running
	pending string   // feature not in this tree yet: validate only
}{
	"hello.yaml":           {pods: []string{"default/hello-e2e"}},
	"pair.yaml":            {pods: []string{"default/pair-e2e"}},
	"web.yaml":             {pods: []string{"default/web-e2e"}},
	"web-hostport.yaml":    {pods: []string{"default/web-hostport-e2e"}},
	"init-containers.yaml": {pods: []string{"default/init-demo-e2e"}},
	"edge-gateway.yaml":    {pods: []string{"default/sensor-e2e", "default/collector-e2e", "default/gateway-e2e"}},
	"etcd.yaml":            {pods: []string{"kube-system/etcd-e2e"}},
	"sidecar.yaml":         {pods: []string{"default/sidecar-demo-e2e"}},
	"config.yaml":          {pods: []string{"default/config-demo-e2e"}},
	"greeting.yaml":        {pods: []string{"default/greeter-e2e"}},
	"lifecycle.yaml":       {pods: []string{"default/lifecycle-e2e"}},
}

func examples(t *testing.T, shared *agent) {
	a := sub(t, shared)
	dir := filepath.Join("..", "..", "examples")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples in %s: %v", dir, err)
	}
	var want []string
	for _, f := range files {
		name := filepath.Base(f)
		chk, ok := exampleChecks[name]
		if !ok {
			t.Fatalf("example %s has no check in exampleChecks", name)
		}
		out, verr := exec.Command(filepath.Join(binDir, "podkeeper"), "validate", "--node-name", node, f).CombinedOutput()
		if chk.pending != "" {
			t.Logf("%s: needs %s; validate says: %s (runtime checks come with the feature)", name, chk.pending, strings.TrimSpace(string(out)))
			continue
		}
		if verr != nil {
			t.Fatalf("validate %s: %v\n%s", name, verr, out)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		a.write(name, string(data))
		want = append(want, chk.pods...)
	}
	for _, full := range want {
		ns, name, _ := strings.Cut(full, "/")
		p := a.waitPod(90*time.Second, name, "Running", running)
		if p.Namespace != ns {
			t.Fatalf("%s is in namespace %s, want %s", name, p.Namespace, ns)
		}
	}
	// What the examples do, seen from outside.
	httpGet := func(url, want string) {
		a.eventually(30*time.Second, url+" answers "+want, func() (bool, string) {
			resp, err := http.Get(url)
			if err != nil {
				return false, err.Error()
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode == 200 && strings.Contains(string(b), want), fmt.Sprintf("%d %q", resp.StatusCode, b)
		})
	}
	httpGet("http://127.0.0.1:8480/", "hello from podkeeper pod web-e2e on e2e")
	httpGet("http://127.0.0.1:8490/", "temperature=") // gateway serves what collector fetched from sensor
	httpGet("http://127.0.0.1:2381/health", `"health":"true"`)
	p := a.waitPod(10*time.Second, "etcd-e2e", "Running", running)
	if p.Spec.PriorityClassName != "system-node-critical" || p.Spec.Priority == nil || *p.Spec.Priority != 2000001000 || !p.Spec.HostNetwork {
		t.Fatalf("etcd pod spec: priorityClassName %q priority %v hostNetwork %v", p.Spec.PriorityClassName, p.Spec.Priority, p.Spec.HostNetwork)
	}
	// Init containers ran in order before the app, which sees what they wrote.
	a.eventually(20*time.Second, "init-demo logs", func() (bool, string) {
		out, err := a.cli("logs", "init-demo", "--all-containers", "--prefix")
		if err != nil {
			return false, err.Error()
		}
		ok := strings.Contains(out, "[pod/init-demo-e2e/fetch-config] wrote /work/app.conf") &&
			strings.Contains(out, "[pod/init-demo-e2e/migrate] migrated") &&
			strings.Contains(out, "[pod/init-demo-e2e/app] config: greeting=hello schema=2")
		return ok && strings.Index(out, "fetch-config") < strings.Index(out, "migrate"), out
	})
	// The sidecar ships the app's log; ConfigMap and Secret reach env and volumes.
	a.eventually(30*time.Second, "sidecar-demo log shipper", func() (bool, string) {
		out, err := a.cli("logs", "sidecar-demo", "-c", "log-shipper")
		return err == nil && strings.Contains(out, "request 0 served"), out
	})
	a.eventually(30*time.Second, "config-demo output", func() (bool, string) {
		out, err := a.cli("logs", "config-demo")
		return err == nil && strings.Contains(out, "hello as edge (log level info)") && strings.Contains(out, "[server]"), out
	})
	httpGet("http://127.0.0.1:8481/", "through a hostPort")
	for name := range exampleChecks {
		if exampleChecks[name].pending == "" {
			a.remove(name)
		}
	}
	for _, full := range want {
		_, name, _ := strings.Cut(full, "/")
		a.waitGone(60*time.Second, name, "")
	}
}

// lineCollector gathers the lines a command prints while it runs.
type lineCollector struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineCollector) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l.mu.Lock()
		l.lines = append(l.lines, sc.Text())
		l.mu.Unlock()
	}
}

func (l *lineCollector) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// background runs `podkeeper ARGS...` until the test ends and collects its output lines.
func (a *agent) background(args ...string) *lineCollector {
	a.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "podkeeper"), append([]string{"--api-socket", a.sock}, args...)...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		a.t.Fatal(err)
	}
	lc := &lineCollector{}
	done := make(chan struct{})
	go func() { defer close(done); lc.read(pr) }()
	a.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		pw.Close()
		<-done
	})
	return lc
}

func watchSeesChange(t *testing.T, shared *agent) {
	a := sub(t, shared)
	lc := a.background("get", "pods", "-w", "-l", "test=watch", "--watch-interval", "200ms")
	a.eventually(10*time.Second, "watch header", func() (bool, string) {
		return strings.Contains(lc.text(), "No resources found") || strings.Contains(lc.text(), "NAME"), lc.text()
	})
	a.write("watched.yaml", strings.Replace(podYAML("watched", "Always", 1, "", shContainer("main", "sleep 3600", "")),
		"metadata:\n  name: watched\n", "metadata:\n  name: watched\n  labels:\n    test: watch\n", 1))
	a.eventually(60*time.Second, "watch shows watched Running", func() (bool, string) {
		for _, l := range strings.Split(lc.text(), "\n") {
			if strings.HasPrefix(l, "watched-e2e ") && strings.Contains(l, " Running ") && strings.Contains(l, "1/1") {
				return true, ""
			}
		}
		return false, lc.text()
	})
	a.remove("watched.yaml")
	a.eventually(60*time.Second, "watch shows watched Deleted", func() (bool, string) {
		return strings.Contains(lc.text(), "Deleted"), lc.text()
	})
	// Other pods (not matching -l) never show up.
	if strings.Contains(lc.text(), "hello-e2e") || strings.Contains(lc.text(), "counter-e2e") {
		t.Fatalf("watch with -l test=watch printed other pods:\n%s", lc.text())
	}
}

func logsFollowRestart(t *testing.T, shared *agent) {
	a := sub(t, shared)
	// Exits after printing; restartPolicy Always restarts it at once the first time.
	a.write("counter.yaml", podYAML("counter", "Always", 1, "",
		shContainer("main", "echo \"instance started $(date +%s%N)\"; sleep 3; echo instance ending; exit 1", "")))
	a.waitPod(30*time.Second, "counter-e2e", "Running", running)
	lc := a.background("logs", "counter", "-f")
	a.eventually(60*time.Second, "logs -f shows the next instance", func() (bool, string) {
		txt := lc.text()
		return strings.Count(txt, "instance started") >= 2 && strings.Contains(txt, "instance ending"), txt
	})
	txt := lc.text()
	if strings.Index(txt, "instance ending") > strings.LastIndex(txt, "instance started") {
		t.Fatalf("lines out of order:\n%s", txt)
	}
	a.remove("counter.yaml")
}

func registryPull(t *testing.T, shared *agent, reg *testenv.Registry, hosts, dockerConfig string) {
	a := sub(t, shared)
	ref := reg.Host + "/pk/busybox:v1" // pushed by TestOperator
	// A pod whose image comes from the registry (credentials: the node's docker config).
	a.write("pulled.yaml", podYAML("pulled", "Always", 1, "",
		fmt.Sprintf("  - name: main\n    image: %s\n    imagePullPolicy: Always\n    command: [\"sleep\", \"3600\"]\n", ref)))
	p := a.waitPod(60*time.Second, "pulled-e2e", "Running", running)
	ev, err := a.cli("describe", "pod", "pulled")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Pulling image \"" + ref + "\"",
		"Successfully pulled image \"" + ref + "\" in ",
		"including waiting). Image size: ",
		"podkeeper, e2e",
		"Type", "Reason", "Age", "From", "Message",
	} {
		if !strings.Contains(ev, want) {
			t.Fatalf("describe pod pulled lacks %q:\n%s", want, ev)
		}
	}
	if strings.Index(ev, "Pulling image") > strings.Index(ev, "Successfully pulled") {
		t.Fatalf("Pulling after Pulled:\n%s", ev)
	}
	if cs := status(p, "main"); !strings.HasPrefix(cs.ImageID, "sha256:") {
		t.Fatalf("image ID %q", cs.ImageID)
	}
	// A missing image: ErrImagePull, then ImagePullBackOff, with the registry's message.
	missing := reg.Host + "/pk/nothere:v1"
	a.write("notthere.yaml", podYAML("notthere", "Always", 1, "",
		fmt.Sprintf("  - name: main\n    image: %s\n    imagePullPolicy: IfNotPresent\n    command: [\"sleep\", \"3600\"]\n", missing)))
	a.waitPod(60*time.Second, "notthere-e2e", "ImagePullBackOff", func(p *corev1.Pod) bool {
		w := status(p, "main").State.Waiting
		return w != nil && w.Reason == "ImagePullBackOff" && strings.Contains(w.Message, "not found")
	})
	// Its log: the kubelet's answer for a container waiting on its image (the reason is
	// ErrImagePull or ImagePullBackOff, whichever phase the back-off is in).
	if out, err := a.cli("logs", "notthere"); err == nil || !regexp.MustCompile(`container "main" in pod "notthere-e2e" is waiting to start: (image can.t be pulled|trying and failing to pull image)`).MatchString(err.Error()) {
		t.Errorf("logs of a container waiting on its image: %q, %v", out, err)
	}
	events, err := a.cli("get", "events")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(events, "Failed to pull image \""+missing+"\"") || !strings.Contains(events, "pod/notthere-e2e") {
		t.Fatalf("get events lacks the pull failure:\n%s", events)
	}
	a.remove("notthere.yaml")
	a.remove("pulled.yaml")

	// `podkeeper image pull` (not on a terminal: plain lines), then `image rm`.
	pk := filepath.Join(binDir, "podkeeper")
	common := []string{"--containerd-address", a.address, "--containerd-namespace", a.ns + "-cli",
		"--registry-config-dir", hosts, "--docker-config", dockerConfig}
	out, err := exec.Command(pk, append(append([]string{"image", "pull"}, common...), ref)...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "pulled "+ref) || !strings.Contains(string(out), ": done ") {
		t.Fatalf("image pull: %v\n%s", err, out)
	}
	out, err = exec.Command(pk, "image", "rm", "--containerd-address", a.address, "--containerd-namespace", a.ns+"-cli", ref).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "removed "+ref) {
		t.Fatalf("image rm: %v\n%s", err, out)
	}
	// On a terminal: one bar per blob, redrawn in place.
	tcmd := exec.Command(pk, append(append([]string{"image", "pull"}, common...), ref)...)
	ptmx, err := pty.Start(tcmd)
	if err != nil {
		t.Fatal(err)
	}
	tout, _ := io.ReadAll(ptmx) // until the command ends (EIO on Linux)
	ptmx.Close()
	if err := tcmd.Wait(); err != nil || !strings.Contains(string(tout), "] done ") || !strings.Contains(string(tout), "[==") || !strings.Contains(string(tout), "pulled "+ref) {
		t.Fatalf("image pull on a terminal: %v\n%q", err, tout)
	}
	noAuth := append([]string{"image", "pull", "--containerd-address", a.address, "--containerd-namespace", a.ns + "-cli",
		"--registry-config-dir", hosts, "--docker-config", filepath.Join(t.TempDir(), "none.json")}, ref)
	out, err = exec.Command(pk, noAuth...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "authorization") {
		t.Fatalf("image pull without credentials: %v\n%s", err, out)
	}
}

func scrapeMetrics(t *testing.T, shared *agent, addr, ref string) {
	a := sub(t, shared)
	// Its image comes from the registry: the pull shows in the pull histogram.
	a.write("metered.yaml", podYAML("metered", "Always", 1, "",
		fmt.Sprintf("  - name: main\n    image: %s\n    imagePullPolicy: Always\n    command: [\"sleep\", \"3600\"]\n", ref)))
	a.waitPod(30*time.Second, "metered-e2e", "Running", running)
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.TrimSpace(string(b)) != "ok" {
			t.Fatalf("%s: %d %q", path, resp.StatusCode, b)
		}
	}
	var fams map[string]*dto.MetricFamily
	a.eventually(30*time.Second, "metrics show the pod", func() (bool, string) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err = parser.TextToMetricFamilies(resp.Body)
		if err != nil {
			return false, "parse: " + err.Error()
		}
		running := gauge(fams, "podkeeper_pods", map[string]string{"phase": "Running"})
		restarts, ok := lookup(fams, "podkeeper_container_restarts", map[string]string{"pod": "metered-e2e", "container": "main"})
		return running >= 1 && ok && restarts.GetGauge() != nil, fmt.Sprintf("running=%v restarts=%v", running, ok)
	})
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if v := gauge(fams, name, nil); v <= 0 {
			t.Fatalf("%s = %v", name, v)
		}
	}
	for _, name := range []string{"podkeeper_pod_start_duration_seconds", "podkeeper_pod_sync_duration_seconds"} {
		m, ok := lookup(fams, name, nil)
		if !ok || m.GetHistogram().GetSampleCount() == 0 {
			t.Fatalf("histogram %s has no samples", name)
		}
	}
	a.eventually(90*time.Second, "image pull durations recorded", func() (bool, string) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(resp.Body)
		if err != nil {
			return false, err.Error()
		}
		m, ok := lookup(fams, "podkeeper_image_pull_duration_seconds", map[string]string{"result": "success"})
		return ok && m.GetHistogram().GetSampleCount() > 0, fmt.Sprint(ok)
	})
	// Agent log lines about a container carry pod and container keys.
	a.eventually(10*time.Second, "log line with pod and container keys", func() (bool, string) {
		b, err := os.ReadFile(filepath.Join(a.dir, "agent.log"))
		if err != nil {
			return false, err.Error()
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, `msg="container started"`) && strings.Contains(l, "pod=default/metered-e2e") && strings.Contains(l, "container=main") {
				return true, ""
			}
		}
		return false, "no such line"
	})
	a.remove("metered.yaml")
}

// lookup finds the metric of family name whose labels include want.
func lookup(fams map[string]*dto.MetricFamily, name string, want map[string]string) (*dto.Metric, bool) {
	f := fams[name]
	if f == nil {
		return nil, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m, true
	}
	return nil, false
}

func gauge(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	m, ok := lookup(fams, name, want)
	if !ok || m.GetGauge() == nil {
		return -1
	}
	return m.GetGauge().GetValue()
}

func selectorsAndErrors(t *testing.T, shared *agent) {
	a := sub(t, shared)
	a.write("labelled.yaml", strings.Replace(podYAML("labelled", "Always", 1, "", shContainer("main", "sleep 3600", "")),
		"metadata:\n  name: labelled\n", "metadata:\n  name: labelled\n  labels:\n    tier: backend\n", 1))
	a.waitPod(30*time.Second, "labelled-e2e", "Running", running)
	out, err := a.cli("get", "pods", "-l", "tier=backend", "-o", "name")
	if err != nil || strings.TrimSpace(out) != "pod/labelled-e2e" {
		t.Fatalf("get pods -l tier=backend -o name: %v %q", err, out)
	}
	out, err = a.cli("get", "pods", "-l", "tier in (frontend)", "-o", "name")
	if err != nil || strings.TrimSpace(out) != "" {
		t.Fatalf("get pods -l 'tier in (frontend)': %v %q", err, out)
	}
	_, err = a.cli("get", "pods", "nope")
	if err == nil || !strings.Contains(err.Error(), "pod nope not found (pods: ") || !strings.Contains(err.Error(), "labelled-e2e") {
		t.Fatalf("get pods nope: %v", err)
	}
	_, err = a.cli("describe", "pod", "nope")
	if err == nil || !strings.Contains(err.Error(), "pod nope not found (pods: ") {
		t.Fatalf("describe pod nope: %v", err)
	}
	cmd := exec.Command(filepath.Join(binDir, "podkeeper"), "--api-socket", filepath.Join(t.TempDir(), "none.sock"), "get", "pods")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err == nil || !strings.Contains(errb.String(), "cannot reach podkeeper at ") || !strings.Contains(errb.String(), "is `podkeeper run` running?") {
		t.Fatalf("no agent: %v %q", err, errb.String())
	}
	out, err = a.cli("completion", "bash")
	if err != nil || !strings.Contains(out, "complete -o bashdefault -o default -F _podkeeper_complete podkeeper") {
		t.Fatalf("completion bash: %v %q", err, out)
	}
	out, err = a.cli("logs", "--generate-bash-completion")
	if err != nil || !strings.Contains(out, "labelled") {
		t.Fatalf("pod name completion: %v %q", err, out)
	}
	a.remove("labelled.yaml")
}
