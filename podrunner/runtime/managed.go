package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/podkeeper/podkeeper/podrunner/metrics"
)

// ManagedConfig describes a containerd that podkeeper runs as its own child.
type ManagedConfig struct {
	Binary  string // containerd binary; default "containerd" from PATH
	Address string // socket to serve on
	Root    string // persistent data (images, snapshots, metadata)
	State   string // runtime state (shim sockets, bundles)
	LogFile string // containerd's own output; empty: discarded
	Logger  *slog.Logger
}

// Managed is a containerd that podkeeper runs as its child and keeps running: a child that
// exits on its own (a crash, the OOM killer) is started again on the same root, state and
// address (managedRestartDelay), until Stop. Containers live on meanwhile under their shims, and
// the restarted containerd reconnects to them; the agent's runtime reconnects to it.
type Managed struct {
	cfg     ManagedConfig
	bin     string
	cfgPath string
	log     *slog.Logger
	quit    chan struct{} // closed by Stop

	mu       sync.Mutex
	cur      *managedChild // the current child; nil while none runs
	stopping bool
	restarts int
}

// managedChild is one containerd process of a Managed.
type managedChild struct {
	cmd     *exec.Cmd
	started time.Time
	exited  chan struct{} // closed once the process has exited; err is then set
	err     error
}

// Answers reports whether something accepts connections on the unix socket address.
func Answers(address string) bool {
	c, err := net.DialTimeout("unix", address, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// managedConfigTOML is the configuration of a podkeeper-managed containerd: only what podkeeper
// uses (no CRI plugin, no metrics or debug listeners).
func managedConfigTOML(c ManagedConfig) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %q

[ttrpc]
  address = %q
`, c.Root, c.State, c.Address, c.Address+".ttrpc")
}

// StartManaged starts containerd as a child, waits until its socket answers, and keeps it running
// (Managed) until Stop.
func StartManaged(ctx context.Context, c ManagedConfig) (*Managed, error) {
	if c.Binary == "" {
		c.Binary = "containerd"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	bin, err := exec.LookPath(c.Binary)
	if err != nil {
		return nil, fmt.Errorf("managed containerd: %w (install it: apt-get install containerd runc)", err)
	}
	for _, d := range []string{c.Root, c.State, filepath.Dir(c.Address)} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, fmt.Errorf("managed containerd: %w", err)
		}
	}
	cfgPath := filepath.Join(c.Root, "podkeeper-containerd.toml")
	if err := os.WriteFile(cfgPath, []byte(managedConfigTOML(c)), 0o644); err != nil {
		return nil, fmt.Errorf("managed containerd: write config: %w", err)
	}
	m := &Managed{cfg: c, bin: bin, cfgPath: cfgPath, log: c.Logger, quit: make(chan struct{})}
	child, err := m.spawn()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for !Answers(c.Address) {
		select {
		case <-child.exited:
			return nil, fmt.Errorf("managed containerd exited at start: %v (see %s)", child.err, c.LogFile)
		case <-ctx.Done():
			m.Stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			m.Stop()
			return nil, errors.New("managed containerd did not answer within 30s")
		}
	}
	go m.supervise()
	return m, nil
}

// spawn starts a containerd child and makes it the current one. The child gets its own
// process group, so a terminal's Ctrl-C reaches podkeeper, which then stops it in order;
// containers keep running either way (their shims are not containerd's children).
func (m *Managed) spawn() (*managedChild, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopping {
		return nil, errors.New("managed containerd: stopping")
	}
	_ = os.Remove(m.cfg.Address) // a killed containerd leaves its socket
	cmd := exec.Command(m.bin, "--config", m.cfgPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if m.cfg.LogFile != "" {
		f, err := os.OpenFile(m.cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("managed containerd: log file: %w", err)
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("managed containerd: start %s: %w", m.bin, err)
	}
	child := &managedChild{cmd: cmd, started: time.Now(), exited: make(chan struct{})}
	go func() { child.err = cmd.Wait(); close(child.exited) }()
	m.cur = child
	m.log.Info("started managed containerd", "pid", cmd.Process.Pid, "address", m.cfg.Address, "root", m.cfg.Root)
	return child, nil
}

// managedRestartDelay is how long to wait before starting the managed containerd again after a
// child that ran for ran exited on its own; prev is the delay before the previous restart (0:
// none yet). The first restart comes at once after a child that ran a minute or more (a crash
// of a containerd that was working); a child that dies again soon waits twice as long as the
// last time, from 500 ms up to 30 s, so that one that cannot start does not spin.
func managedRestartDelay(prev, ran time.Duration) time.Duration {
	switch {
	case ran >= time.Minute:
		return 0
	case prev <= 0:
		return 500 * time.Millisecond
	case 2*prev > 30*time.Second:
		return 30 * time.Second
	default:
		return 2 * prev
	}
}

// supervise starts containerd again whenever the current child exits on its own, until Stop.
func (m *Managed) supervise() {
	var delay time.Duration
	for {
		m.mu.Lock()
		child := m.cur
		m.mu.Unlock()
		if child != nil {
			select {
			case <-child.exited:
			case <-m.quit:
				return
			}
			ran := time.Since(child.started).Round(time.Millisecond)
			delay = managedRestartDelay(delay, ran)
			m.mu.Lock()
			if m.stopping { // Stop ended it
				m.mu.Unlock()
				return
			}
			m.cur = nil
			m.restarts++
			n := m.restarts
			m.mu.Unlock()
			metrics.ManagedContainerdRestarts.Inc()
			m.log.Error("managed containerd exited; starting it again (pods keep running meanwhile)",
				"pid", child.cmd.Process.Pid, "err", child.err, "ran", ran, "restart", n, "in", delay, "log", m.cfg.LogFile)
		} else if delay = managedRestartDelay(delay, 0); delay < time.Second {
			delay = time.Second // a failed start or a busy address: try again, at a pace
		}
		select {
		case <-time.After(delay):
		case <-m.quit:
			return
		}
		if Answers(m.cfg.Address) {
			// Another containerd took the address meanwhile (one started by hand): never remove
			// its socket; look again later.
			m.log.Warn("something else answers on the managed containerd's address; not starting another", "address", m.cfg.Address)
			continue
		}
		if _, err := m.spawn(); err != nil {
			m.log.Error("managed containerd: start failed; trying again", "err", err)
		}
	}
}

// PID of the current child (0 while none runs).
func (m *Managed) PID() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == nil {
		return 0
	}
	return m.cur.cmd.Process.Pid
}

// Restarts counts the children started again after one exited on its own.
func (m *Managed) Restarts() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.restarts
}

// Stop ends the supervision and asks the current child to exit (SIGTERM), then kills it after
// 10 s. It starts no child afterwards; calling it again does nothing more.
func (m *Managed) Stop() {
	m.mu.Lock()
	if m.stopping {
		m.mu.Unlock()
		return
	}
	m.stopping = true
	child := m.cur
	m.mu.Unlock()
	close(m.quit)
	if child == nil {
		return
	}
	_ = child.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-child.exited:
	case <-time.After(10 * time.Second):
		_ = child.cmd.Process.Kill()
		<-child.exited
	}
}
