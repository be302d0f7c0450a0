package runtime

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A container with stdin: true gets a stdin that stays open, as with the kubelet's runtime: a
// `sh` reading it waits instead of seeing end-of-file and exiting (which made such pods crash
// loop). The shim reads the task's stdin FIFO; its write end is held not by the agent but by a
// holder process (the pause binary, in a session of its own, doing nothing), so the container's
// stdin stays open across an agent restart or crash. Nothing is ever written to it (podkeeper
// has no attach). The holder ends with the container's task; its PID is kept in
// <root>/fifo/holders/<container id>.

// holderArg marks a stdin holder's command line, so a PID file that outlived its process is
// never taken for another process.
const holderArg = "podkeeper-stdin-holder"

func (r *Runtime) holderFile(id string) string {
	return filepath.Join(r.fifoDir(), "holders", id)
}

// startStdinHolder makes the FIFO at path (when missing) and starts container id's holder on it.
func (r *Runtime) startStdinHolder(id, path string) error {
	if r.cfg.PauseBinary == "" {
		return errors.New("stdin: true needs the pause binary to hold the container's stdin open")
	}
	if err := syscall.Mkfifo(path, 0o700); err != nil && !errors.Is(err, syscall.EEXIST) {
		return fmt.Errorf("create stdin FIFO: %w", err)
	}
	// Read-write: the open never waits, and the holder, a reader too, never reads.
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("open stdin FIFO: %w", err)
	}
	defer f.Close()
	cmd := exec.Command(r.cfg.PauseBinary, holderArg, id)
	cmd.Stdout = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the stdin holder: %w", err)
	}
	pid := cmd.Process.Pid
	go func() { _ = cmd.Wait() }() // reaped while the agent lives; adopted by init after
	if err := os.MkdirAll(filepath.Dir(r.holderFile(id)), 0o700); err == nil {
		err = os.WriteFile(r.holderFile(id), []byte(strconv.Itoa(pid)), 0o600)
	}
	if err != nil {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		return fmt.Errorf("record the stdin holder: %w", err)
	}
	return nil
}

// stopStdinHolder ends container id's stdin holder, if it has one. Idempotent.
func (r *Runtime) stopStdinHolder(id string) {
	b, err := os.ReadFile(r.holderFile(id))
	if err != nil {
		return
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && isStdinHolder(pid, id) {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	_ = os.Remove(r.holderFile(id))
}

// isStdinHolder says whether process pid is container id's stdin holder (its command line).
func isStdinHolder(pid int, id string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	return len(args) == 3 && args[1] == holderArg && args[2] == id
}
