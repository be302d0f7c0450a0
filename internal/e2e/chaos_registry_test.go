package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/internal/ociimage"
	"github.com/podkeeper/podkeeper/internal/testenv"
	pkruntime "github.com/podkeeper/podkeeper/podrunner/runtime"
)

// stallProxy is a registry's flaky uplink: an HTTP proxy in front of it that, while stalled,
// lets a blob's first bytes through and then sends nothing more, the connection left open (as a
// link that drops packets without a reset), until it is resumed or the client gives up.
type stallProxy struct {
	Host string
	srv  *http.Server

	mu      sync.Mutex
	stalled bool
	resume  chan struct{}
	held    atomic.Int32 // blob responses waiting now
	holds   atomic.Int32 // blob responses held so far
	ranges  atomic.Int32 // blob requests for a part (a pull resuming what it has)
}

// stallAfter is how much of a blob gets through before a stall: some progress, then none.
const stallAfter = 256 << 10

func newStallProxy(t *testing.T, registry string) *stallProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{Host: l.Addr().String(), resume: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: registry})
	director := rp.Director
	rp.Director = func(r *http.Request) {
		if strings.Contains(r.URL.Path, "/blobs/") && r.Header.Get("Range") != "" {
			p.ranges.Add(1)
		}
		director(r)
	}
	rp.ModifyResponse = func(resp *http.Response) error {
		if strings.Contains(resp.Request.URL.Path, "/blobs/") && (resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent) {
			resp.Body = &stallBody{p: p, body: resp.Body, ctx: resp.Request.Context()}
		}
		return nil
	}
	p.srv = &http.Server{Handler: rp}
	go func() { _ = p.srv.Serve(l) }()
	t.Cleanup(func() {
		p.setStalled(false)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.srv.Shutdown(ctx)
		_ = p.srv.Close()
	})
	return p
}

func (p *stallProxy) setStalled(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on == p.stalled {
		return
	}
	p.stalled = on
	if !on {
		close(p.resume)
		p.resume = make(chan struct{})
	}
}

// wait returns at once when the proxy is not stalled, else when it is resumed or ctx ends.
func (p *stallProxy) wait(ctx context.Context) error {
	p.mu.Lock()
	stalled, resume := p.stalled, p.resume
	p.mu.Unlock()
	if !stalled {
		return nil
	}
	p.held.Add(1)
	p.holds.Add(1)
	defer p.held.Add(-1)
	select {
	case <-resume:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type stallBody struct {
	p    *stallProxy
	body io.ReadCloser
	ctx  context.Context
	n    int
}

func (b *stallBody) Read(buf []byte) (int, error) {
	if b.n >= stallAfter {
		if err := b.p.wait(b.ctx); err != nil {
			return 0, err
		}
	} else if len(buf) > stallAfter-b.n {
		buf = buf[:stallAfter-b.n]
	}
	n, err := b.body.Read(buf)
	b.n += n
	return n, err
}

func (b *stallBody) Close() error { return b.body.Close() }

// Registry stall: the registry's link stops sending in the middle of a layer (a flaky uplink
// of an edge box: the connection stays open, nothing comes). A pod being pulled for must still
// go when its manifest is removed; a pull that makes no progress for
// --image-pull-progress-timeout ends with ErrImagePull and is tried again (back-off) instead of
// waiting for good; another pod of a local image runs meanwhile; once the link is back the pod
// runs.
func TestChaosRegistryStall(t *testing.T) {
	reg, err := testenv.StartRegistry("pkuser", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	// An image of its own content (a layer with 4 MiB of random bytes), so that no blob of it
	// is in containerd's content store when the agent pulls.
	random := make([]byte, 4<<20)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	tarPath := filepath.Join(t.TempDir(), "stall.tar")
	local := "docker.io/library/pk-stall:1"
	if err := ociimage.WriteBusyboxImageFile(tarPath, ociimage.Config{Name: local, ExtraFiles: map[string][]byte{"/random.bin": random}}); err != nil {
		t.Fatal(err)
	}
	srcNS := "pk-chaos-regstall-src"
	ctr := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ctr", append([]string{"-a", env.Address, "-n", srcNS}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ctr %v: %v\n%s", args, err, out)
		}
	}
	ctr("images", "import", tarPath)
	if err := reg.Push(env.Address, srcNS, local, reg.Host+"/pk/stall:1"); err != nil {
		t.Fatal(err)
	}
	ctr("images", "rm", "--sync", local) // its blobs leave the content store with it

	proxy := newStallProxy(t, reg.Host)
	hosts := filepath.Join(t.TempDir(), "certs.d")
	hostDir := filepath.Join(hosts, strings.ReplaceAll(proxy.Host, ":", "_")+"_")
	if err := os.MkdirAll(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	toml := fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", "http://"+proxy.Host, "http://"+proxy.Host)
	if err := os.WriteFile(filepath.Join(hostDir, "hosts.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	dockerConfig := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(dockerConfig, pkruntime.DockerConfigJSON(proxy.Host, reg.User, reg.Password), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAgentAt(t, "pk-chaos-regstall", env.Address, "--registry-config-dir", hosts, "--docker-config", dockerConfig,
		"--image-pull-progress-timeout", "4s")
	ref := proxy.Host + "/pk/stall:1"
	stallPod := func(name string) string {
		return podYAML(name, "Always", 1, "", fmt.Sprintf("  - name: c\n    image: %s\n    imagePullPolicy: IfNotPresent\n    command: [\"sh\", \"-c\", \"sleep 3600\"]\n", ref))
	}

	// 1. A pull stalls; the pod is removed while it waits.
	proxy.setStalled(true)
	a.write("local.yaml", podYAML("local", "Always", 1, "", shContainer("c", "sleep 3600", "")))
	a.write("gone.yaml", stallPod("gone"))
	a.eventually(30*time.Second, "a blob held by the stalled link", func() (bool, string) {
		return proxy.held.Load() > 0, ""
	})
	a.waitPod(30*time.Second, "local-"+node, "running beside the stalled pull", running)
	a.waitPod(10*time.Second, "gone-"+node, "waiting for its image", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil
	})
	a.remove("gone.yaml")
	removed := time.Now()
	a.waitGone(15*time.Second, "gone-"+node, "") // its pull ended, not waited for
	goneAfter := time.Since(removed)

	// 2. The link stays stalled: the pull gives up after the progress timeout, ErrImagePull,
	// and is tried again after the back-off, stalled again.
	holds := proxy.holds.Load()
	a.write("late.yaml", stallPod("late"))
	a.waitEvent(60*time.Second, "Failed to pull image", "no progress")
	a.waitPod(30*time.Second, "late-"+node, "waiting in ErrImagePull or ImagePullBackOff", func(p *corev1.Pod) bool {
		if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return false
		}
		r := p.Status.ContainerStatuses[0].State.Waiting.Reason
		return r == "ErrImagePull" || r == "ImagePullBackOff"
	})
	a.eventually(60*time.Second, "the pull tried again after its back-off", func() (bool, string) {
		return proxy.holds.Load() >= holds+2, fmt.Sprintf("%d holds", proxy.holds.Load()-holds)
	})

	// 3. The link comes back: the pod runs.
	proxy.setStalled(false)
	back := time.Now()
	a.waitPod(90*time.Second, "late-"+node, "running once the link is back", running)
	runAfter := time.Since(back)
	p := a.waitPod(5*time.Second, "local-"+node, "still running", running)
	if rc := p.Status.ContainerStatuses[0].RestartCount; rc != 0 {
		t.Fatalf("local pod restarted %d times during the stalls", rc)
	}
	// The containerd client's own log lines (it logs its clean-up of an ended pull's unpack) come
	// out in the agent's format, not as logrus lines in the middle of it.
	b, err := os.ReadFile(filepath.Join(a.dir, "agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, `time="`) {
			t.Fatalf("a line of the agent's log not in its format: %s", line)
		}
	}
	chaosLog(t, "pull stalled mid-layer: the pod removed meanwhile gone %v later; a stalled pull ends after the 4 s progress timeout as ErrImagePull and is tried again (%d stalled responses in all, %d of the retries' blob requests asked for a part only, i.e. resumed); running %v after the link is back; a local pod untouched",
		goneAfter.Round(time.Millisecond), proxy.holds.Load(), proxy.ranges.Load(), runAfter.Round(time.Millisecond))
}

// A CNI plugin that never returns (a third-party plugin waiting on its daemon, an iptables lock
// held elsewhere): the pod waits in ContainerCreating while the other pods run, and it still goes
// at once when its manifest is removed.
func TestChaosCNIPluginHangs(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\ncase \"$CNI_COMMAND\" in\nADD) exec sleep 86399 ;;\nVERSION) echo '{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"0.4.0\",\"1.0.0\"]}' ;;\nesac\nexit 0\n"
	if err := os.WriteFile(filepath.Join(bin, "pk-hang"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"--cni-bin-dir", bin}
	for _, d := range pkruntime.DefaultCNIBinDirs {
		args = append(args, "--cni-bin-dir", d)
	}
	a := startAgentAt(t, "pk-chaos-cnihang", env.Address, args...)
	a.write("local.yaml", podYAML("local", "Always", 1, "", shContainer("c", "sleep 3600", "")))
	a.waitPod(30*time.Second, "local-"+node, "running", running)
	conflist := `{"cniVersion":"1.0.0","name":"pk-hang","plugins":[{"type":"pk-hang"}]}`
	if err := os.WriteFile(filepath.Join(a.network().ConfDir, "00-hang.conflist"), []byte(conflist), 0o644); err != nil {
		t.Fatal(err)
	}
	a.write("hang.yaml", podYAML("hang", "Always", 1, "", shContainer("c", "sleep 3600", "")))
	a.eventually(30*time.Second, "the plugin's ADD under way", func() (bool, string) {
		out, _ := exec.Command("pgrep", "-f", "^sleep 86399$").Output()
		return len(strings.Fields(string(out))) == 1, string(out)
	})
	time.Sleep(time.Second)
	a.remove("hang.yaml")
	removed := time.Now()
	a.waitGone(15*time.Second, "hang-"+node, "") // its CNI ADD ended, not waited for
	gone := time.Since(removed)
	a.eventually(10*time.Second, "the plugin's ADD ended", func() (bool, string) {
		out, _ := exec.Command("pgrep", "-f", "^sleep 86399$").Output()
		return len(strings.Fields(string(out))) == 0, string(out)
	})
	pods := a.waitAllRunning(10*time.Second, []string{"local-" + node})
	noRestarts(t, pods, "while the other pod's network hung")
	checkNothingLost(t, a, filepath.Join(env.Dir, "state"), pods)
	// The clean-up tears the local pod's network down with the first config: the default again.
	if err := os.Remove(filepath.Join(a.network().ConfDir, "00-hang.conflist")); err != nil {
		t.Fatal(err)
	}
	chaosLog(t, "CNI ADD never returning: the pod removed meanwhile gone %v later, the plugin's process ended; a pod of the other network untouched", gone.Round(time.Millisecond))
}
