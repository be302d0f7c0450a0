package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/podkeeper/podkeeper/internal/ociimage"
	"github.com/podkeeper/podkeeper/internal/testenv"
	pkruntime "github.com/podkeeper/podkeeper/podrunner/runtime"
)

// podmanRunner runs the same pods with `podman kube play` (one call per pod, all at once) on a
// private podman storage. Its infra (pause) container uses a locally built image, and the
// containers' rlimits are lowered below the host's (root here lacks CAP_SYS_RESOURCE, and
// podman 4.3's defaults make runc fail with EPERM).
type podmanRunner struct {
	dir, conf string
	mu        sync.Mutex
	files     []string
}

const (
	pauseImage    = "localhost/pkbench-pause:latest"
	podmanNetwork = "pkbench-podman"
	podmanBridge  = "pkbpm0"
)

// podmanParallel caps the podman commands running at once: podman is daemonless and every
// call (and every exiting container's "podman container cleanup") takes the same storage
// locks; 300 at once on 2 cores made a thundering herd that took the machine to a load of 200
// for over 10 minutes. The batch figures of podman are therefore at parallelism 8.
const podmanParallel = 8

// writePauseImage writes a tiny pause image (busybox sh waiting for a signal) to path.
func writePauseImage(path string) error {
	return ociimage.WriteBusyboxImageFile(path, ociimage.Config{Name: pauseImage,
		Entrypoint: []string{"sh", "-c", `trap "exit 0" TERM INT; sleep 2147483647 & wait`}, Cmd: []string{}})
}

func newPodman(ctx context.Context, busyboxTar string) (*podmanRunner, error) {
	if _, err := exec.LookPath("podman"); err != nil {
		return nil, fmt.Errorf("podman is not installed (apt-get install podman)")
	}
	dir, err := os.MkdirTemp("/tmp", "pkbpm-")
	if err != nil {
		return nil, err
	}
	p := &podmanRunner{dir: dir, conf: filepath.Join(dir, "containers.conf")}
	// Its pods join the same plugin chain as podkeeper's and the kubelet's (benchNetwork), from a
	// private network dir, never podman's own default network.
	netDir := filepath.Join(dir, "cni")
	conf := fmt.Sprintf("[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=4096:4096\"]\n[engine]\ninfra_image = %q\nruntime = \"runc\"\nevents_logger = \"file\"\ncgroup_manager = \"cgroupfs\"\n"+
		"[network]\nnetwork_backend = \"cni\"\nnetwork_config_dir = %q\ncni_plugin_dirs = [\"/usr/lib/cni\"]\ndefault_network = %q\n",
		pauseImage, netDir, podmanNetwork)
	if err := os.WriteFile(p.conf, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	cni, err := pkruntime.DefaultConflist(podmanBenchNetwork(dir))
	if err != nil {
		return nil, err
	}
	// One masquerade rule for the subnet, as podkeeper's agent keeps for its own network.
	if err := podmanBenchNetwork(dir).Masquerade().Ensure(ctx); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(netDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(netDir, podmanNetwork+".conflist"), cni, 0o644); err != nil {
		return nil, err
	}
	pause := filepath.Join(dir, "pause.tar")
	if err := writePauseImage(pause); err != nil {
		return nil, err
	}
	for _, img := range []string{busyboxTar, pause} {
		if out, err := p.cmd(ctx, "load", "-i", img).CombinedOutput(); err != nil {
			p.Close()
			return nil, fmt.Errorf("podman load %s: %v: %s", img, err, out)
		}
	}
	return p, nil
}

func (p *podmanRunner) cmd(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, "podman", append([]string{"--root", filepath.Join(p.dir, "root"), "--runroot", filepath.Join(p.dir, "run")}, args...)...)
	c.Env = append(os.Environ(), "CONTAINERS_CONF="+p.conf)
	return c
}

func (p *podmanRunner) Name() string     { return "podman kube play" }
func (p *podmanRunner) AgentPIDs() []int { return nil } // daemonless
// ShimPIDs are podman's per-container monitors (conmon), its counterpart of the shims.
func (p *podmanRunner) ShimPIDs() []int {
	return findProcs(func(a []string) bool {
		if filepath.Base(a[0]) != "conmon" {
			return false
		}
		for _, s := range a {
			if strings.Contains(s, p.dir) {
				return true
			}
		}
		return false
	})
}

func (p *podmanRunner) StartBatch(ctx context.Context, first, n int) (time.Duration, error) {
	var files []string
	for i := first; i < first+n; i++ {
		f := filepath.Join(p.dir, podName(i)+".yaml")
		m := strings.Replace(podManifest(i), "image: busybox", "image: "+image, 1)
		if err := os.WriteFile(f, []byte(m), 0o644); err != nil {
			return 0, err
		}
		files = append(files, f)
	}
	d, err := p.all(ctx, files, "kube", "play", "--network", podmanNetwork)
	p.mu.Lock()
	p.files = append(p.files, files...)
	p.mu.Unlock()
	return d, err
}

// all runs `podman <args> FILE` for every file at once and returns when all have returned.
func (p *podmanRunner) all(ctx context.Context, files []string, args ...string) (time.Duration, error) {
	t0 := time.Now()
	errs := make(chan error, len(files))
	var wg sync.WaitGroup
	sem := make(chan struct{}, podmanParallel)
	for _, f := range files {
		wg.Add(1)
		go func(f string) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out, err := p.cmd(ctx, append(args, f)...).CombinedOutput()
			if err != nil {
				err = fmt.Errorf("podman %s %s: %v: %s", strings.Join(args, " "), filepath.Base(f), err, out)
			}
			errs <- err
		}(f)
	}
	wg.Wait()
	d := time.Since(t0)
	close(errs)
	for err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return d, nil
}

func (p *podmanRunner) RemoveAll(ctx context.Context) (time.Duration, error) {
	p.mu.Lock()
	files := p.files
	p.files = nil
	p.mu.Unlock()
	return p.all(ctx, files, "kube", "down")
}

// podmanBenchNetwork is podman's pod network: the same plugin chain as podkeeper's
// (benchNetwork), on a bridge and subnet of its own.
func podmanBenchNetwork(dir string) pkruntime.DefaultNetwork {
	return benchNetwork(podmanNetwork, podmanBridge, "10.235.0.0/16", filepath.Join(dir, "ipam"))
}

func (p *podmanRunner) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_ = p.cmd(ctx, "pod", "rm", "-a", "-f").Run()
	_ = p.cmd(ctx, "rmi", "-a", "-f").Run()
	if err := podmanBenchNetwork(p.dir).Masquerade().Remove(ctx); err != nil {
		log.Printf("podman: %v", err)
	}
	testenv.UnmountUnder(p.dir)
	_ = exec.Command("ip", "link", "del", podmanBridge).Run()
	os.RemoveAll(p.dir)
}
