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
	"syscall"
	"time"
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

// Managed is a running child containerd.
type Managed struct {
	cmd  *exec.Cmd
	done chan error
	log  *slog.Logger
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

// StartManaged starts containerd as a child and waits until its socket answers. The child gets
// its own process group, so a terminal's Ctrl-C reaches podkeeper, which then stops it in order;
// containers keep running either way (their shims are not containerd's children).
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
	_ = os.Remove(c.Address)
	cmd := exec.Command(bin, "--config", cfgPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if c.LogFile != "" {
		f, err := os.OpenFile(c.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("managed containerd: log file: %w", err)
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("managed containerd: start %s: %w", bin, err)
	}
	m := &Managed{cmd: cmd, done: make(chan error, 1), log: c.Logger}
	go func() { m.done <- cmd.Wait() }()
	c.Logger.Info("started managed containerd", "pid", cmd.Process.Pid, "address", c.Address, "root", c.Root)
	deadline := time.Now().Add(30 * time.Second)
	for !Answers(c.Address) {
		select {
		case err := <-m.done:
			return nil, fmt.Errorf("managed containerd exited at start: %v (see %s)", err, c.LogFile)
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
	return m, nil
}

// PID of the child.
func (m *Managed) PID() int { return m.cmd.Process.Pid }

// Done is readable when the child has exited.
func (m *Managed) Done() <-chan error { return m.done }

// Stop asks containerd to exit (SIGTERM), then kills it after 10 s.
func (m *Managed) Stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-m.done:
		m.done <- err
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		err := <-m.done
		m.done <- err
	}
}
