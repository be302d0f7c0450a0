package e2e

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/internal/testenv"
	"github.com/podkeeper/podkeeper/podrunner"
	pkruntime "github.com/podkeeper/podkeeper/podrunner/runtime"
)

// containerd down at start: the agent waits (answering its API with no pods), logs why, and runs
// the pods once containerd appears.
func TestAgentWaitsForContainerd(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "pkw-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	late := &testenv.Containerd{Dir: dir, Address: filepath.Join(dir, "c.sock")}
	a := startAgentAt(t, "pk-e2e-late", late.Address)
	a.write("w.yaml", podYAML("waiter", "Always", 1, "", shContainer("c", "sleep 3600", "")))
	time.Sleep(3 * time.Second)
	if pods, err := a.pods(); err != nil || len(pods) != 0 {
		t.Fatalf("before containerd: pods=%v err=%v, want an answering API with no pods", pods, err)
	}
	b, _ := os.ReadFile(filepath.Join(a.dir, "agent.log"))
	if !strings.Contains(string(b), "containerd is not answering; retrying") {
		t.Fatalf("no retry log line:\n%s", b)
	}
	m, err := pkruntime.StartManaged(context.Background(), pkruntime.ManagedConfig{
		Address: late.Address, Root: filepath.Join(dir, "root"), State: filepath.Join(dir, "state"),
		LogFile: filepath.Join(dir, "containerd.log"), Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last-in first-out: the agent's removes its pods before containerd stops.
	t.Cleanup(func() { m.Stop(); os.RemoveAll(dir) })
	a.waitPod(40*time.Second, "waiter-e2e", "Running once containerd is up", running)
	a.cleanup()
}

// The sandbox dying takes the pod down and brings it back: new sandbox, containers restarted.
// With --always-pause, so that the sandbox has a process to kill (a sandbox without one ends
// when its pinned namespaces go, as with a reboot: TestChaosReboot).
func TestSandboxDeathRecreatesPod(t *testing.T) {
	a := startAgentAt(t, "pk-e2e-sandbox", env.Address, "--always-pause")
	a.write("sb.yaml", podYAML("sb", "Always", 1, "", shContainer("c", "sleep 3600", "")))
	p := a.waitPod(30*time.Second, "sb-e2e", "Running", running)
	v := podrunner.NewPodView(a.records(string(p.UID)))
	sb, ok := v.Sandbox()
	if !ok || sb.PID == 0 {
		t.Fatalf("no running sandbox: %+v", sb)
	}
	if err := syscall.Kill(int(sb.PID), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.waitPod(30*time.Second, "sb-e2e", "restarted in a new sandbox", func(p *corev1.Pod) bool {
		return running(p) && status(p, "c").RestartCount == 1
	})
	v = podrunner.NewPodView(a.records(string(p.UID)))
	if nsb, _ := v.Sandbox(); nsb.Attempt != 1 || nsb.State != podrunner.StateRunning {
		t.Fatalf("new sandbox = %+v, want attempt 1 running", nsb)
	}
	desc, _ := a.cli("describe", "pod", "sb")
	if !strings.Contains(desc, "SandboxChanged") {
		t.Fatalf("no SandboxChanged event:\n%s", desc)
	}
}

// Flags can come from a YAML file given by --config; flags on the command line win.
func TestConfigFile(t *testing.T) {
	a := startAgent(t, "pk-e2e-config") // only for its dirs and the shared containerd
	a.kill9()
	cfg := filepath.Join(a.dir, "podkeeper.yaml")
	other := filepath.Join(a.dir, "other-manifests")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	content := "manifest-dir: " + other + "\nroot-dir: " + a.root + "\nlog-dir: " + a.logs + "\ncontainerd-address: " + env.Address +
		"\ncontainerd-namespace: " + a.ns + "\nnode-name: fromconfig\napi-socket: " + a.sock + "\nlog-format: text\n" +
		"container-log-links-dir: " + a.logLinks() + "\ncni-conf-dir: " + a.network().ConfDir + "\nnetns-dir: " + a.network().NetnsDir + "\ncni-bridge: " + a.bridge + "\npod-subnet: " + a.subnet + "\n"
	if err := os.WriteFile(cfg, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "c.yaml"), []byte(podYAML("cfg", "Always", 1, "", shContainer("c", "sleep 3600", ""))), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(filepath.Join(a.dir, "agent.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, "podkeeper"), "run", "--config", cfg, "--node-name", "fromflag")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.cmd, a.out = cmd, out
	a.mu.Unlock()
	a.waitPod(30*time.Second, "cfg-fromflag", "Running with the config file's dirs and the flag's node name", running)
}
