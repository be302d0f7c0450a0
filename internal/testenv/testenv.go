// Package testenv starts the real things integration tests run against: a private containerd
// (its own root, state and socket, stopped afterwards) with the busybox test image imported, and
// the podkeeper binaries built from this tree. A missing containerd, runc or busybox fails the
// test run with the command that installs it; it is never skipped.
package testenv

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/podkeeper/podkeeper/internal/ociimage"
	pkruntime "github.com/podkeeper/podkeeper/podrunner/runtime"
)

// Image is the reference of the busybox test image imported into every test containerd.
const Image = "docker.io/library/busybox:latest"

// Containerd is a private containerd for one test binary.
type Containerd struct {
	Dir     string // everything lives under here
	Address string
	managed *pkruntime.Managed
}

// Requirements lists the host binaries integration tests need, with the package to install.
var Requirements = map[string]string{
	"containerd":              "containerd",
	"containerd-shim-runc-v2": "containerd",
	"runc":                    "runc",
	"busybox":                 "busybox-static",
}

// Check returns an error naming every missing requirement and how to install it.
func Check() error {
	var missing []string
	pkgs := map[string]bool{}
	for bin, pkg := range Requirements {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
			pkgs[pkg] = true
		}
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("integration tests need root (containerd, runc, namespaces): run `sudo make test`")
	}
	if len(missing) == 0 {
		return nil
	}
	var p []string
	for k := range pkgs {
		p = append(p, k)
	}
	return fmt.Errorf("missing %s: install with `apt-get install -y %s` (or `make deps`)", strings.Join(missing, ", "), strings.Join(p, " "))
}

// StartContainerd starts a private containerd under a new short temp dir (unix socket paths
// are limited to 108 bytes) and imports the busybox test image into namespace ns.
func StartContainerd(ns string) (*Containerd, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("/tmp", "pkt-")
	if err != nil {
		return nil, err
	}
	c := &Containerd{Dir: dir, Address: filepath.Join(dir, "c.sock")}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c.managed, err = pkruntime.StartManaged(ctx, pkruntime.ManagedConfig{
		Address: c.Address,
		Root:    filepath.Join(dir, "root"),
		State:   filepath.Join(dir, "state"),
		LogFile: filepath.Join(dir, "containerd.log"),
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.ImportBusybox(ns); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// BusyboxTarball writes the busybox test image tarball to path.
func BusyboxTarball(path string) error {
	return ociimage.WriteBusyboxImageFile(path, ociimage.Config{Name: Image, StopSignal: ""})
}

// ImportBusybox imports the busybox test image into namespace ns.
func (c *Containerd) ImportBusybox(ns string) error {
	tar := filepath.Join(c.Dir, "busybox.tar")
	if _, err := os.Stat(tar); err != nil {
		if err := BusyboxTarball(tar); err != nil {
			return fmt.Errorf("build busybox image: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rt, err := pkruntime.Dial(ctx, pkruntime.Config{Address: c.Address, Namespace: ns})
	if err != nil {
		return err
	}
	defer rt.Close()
	if _, err := rt.ImportFile(ctx, tar); err != nil {
		return err
	}
	return nil
}

// Stop removes every container and task left in the test containerd (so their shims exit),
// stops containerd and deletes its directories.
func (c *Containerd) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if rt, err := pkruntime.Dial(ctx, pkruntime.Config{Address: c.Address, Namespace: "default"}); err == nil {
		cl := rt.Client()
		nss, _ := cl.NamespaceService().List(ctx)
		for _, ns := range nss {
			nctx := namespaces.WithNamespace(ctx, ns)
			cs, _ := cl.Containers(nctx)
			for _, ctr := range cs {
				if t, err := ctr.Task(nctx, nil); err == nil {
					_ = t.Kill(nctx, syscall.SIGKILL)
					if ch, err := t.Wait(nctx); err == nil {
						select {
						case <-ch:
						case <-time.After(5 * time.Second):
						}
					}
					_, _ = t.Delete(nctx)
				}
				_ = ctr.Delete(nctx)
			}
		}
		rt.Close()
	}
	if c.managed != nil {
		c.managed.Stop()
	}
	UnmountUnder(c.Dir)
	os.RemoveAll(c.Dir)
}

// MountsUnder lists the mount points below dir, in mount order.
func MountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var mps []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			mps = append(mps, f[4])
		}
	}
	return mps
}

// UnmountUnder lazily unmounts anything still mounted below dir (a crashed test's rootfs, a
// stopped containerd's or peer's state), deepest first.
func UnmountUnder(dir string) {
	mps := MountsUnder(dir)
	for i := len(mps) - 1; i >= 0; i-- {
		_ = syscall.Unmount(mps[i], syscall.MNT_DETACH)
	}
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// Binaries builds podkeeper and podkeeper-pause from this tree once per test binary and returns
// the directory holding them.
func Binaries() (string, error) {
	buildOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		buildDir, buildErr = os.MkdirTemp("", "pkbin-")
		if buildErr != nil {
			return
		}
		for _, b := range []struct{ out, pkg string }{
			{"podkeeper", "./cmd/podkeeper"},
			{"podkeeper-pause", "./cmd/podkeeper-pause"},
		} {
			args, cgo := []string{"build", "-o", filepath.Join(buildDir, b.out)}, "CGO_ENABLED=0"
			if Race() && b.out == "podkeeper" {
				args, cgo = append(args, "-race"), "CGO_ENABLED=1"
			}
			cmd := exec.Command("go", append(args, b.pkg)...)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), cgo)
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
				return
			}
		}
	})
	return buildDir, buildErr
}

// Race says whether the agent under test is built with the race detector
// (PODKEEPER_TEST_RACE=1, `make test-race`). Its reports go to the agent's stderr; the tests
// that start an agent fail on any (RaceReports).
func Race() bool { return os.Getenv("PODKEEPER_TEST_RACE") == "1" }

// RaceReports returns the race detector's reports in an agent's output (empty: none).
func RaceReports(output []byte) string {
	const mark = "WARNING: DATA RACE"
	var reports []string
	for rest := string(output); ; {
		i := strings.Index(rest, mark)
		if i < 0 {
			break
		}
		rest = rest[i:]
		end := strings.Index(rest, "==================")
		if end < 0 {
			end = len(rest)
		}
		reports = append(reports, rest[:end])
		rest = rest[end:]
	}
	return strings.Join(reports, "\n")
}

// PauseBinary builds (once) and returns the sandbox binary.
func PauseBinary() (string, error) {
	d, err := Binaries()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "podkeeper-pause"), nil
}

func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("cannot locate module root")
	}
	return filepath.Abs(filepath.Join(filepath.Dir(file), "..", ".."))
}

// RemoveBinaries deletes what Binaries built. Call it from TestMain after m.Run.
func RemoveBinaries() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

// PID is the containerd process's PID (0 while a crashed one is being started again).
func (c *Containerd) PID() int { return c.managed.PID() }
