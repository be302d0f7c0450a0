package runtime_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/podkeeper/podkeeper/internal/testenv"
	"github.com/podkeeper/podkeeper/podrunner/metrics"
	. "github.com/podkeeper/podkeeper/podrunner/runtime"
)

// A managed containerd killed (kill -9, as by the OOM killer) is started again on the same root
// and address, and answers again; after Stop none runs and none is started.
func TestManagedContainerdRestartedAfterCrash(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "pkm-")
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	cfg := ManagedConfig{
		Address: filepath.Join(dir, "c.sock"), Root: filepath.Join(dir, "root"), State: filepath.Join(dir, "state"),
		LogFile: filepath.Join(dir, "containerd.log"), Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := StartManaged(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop(); testenv.UnmountUnder(dir); os.RemoveAll(dir) })
	// Something to find again: a namespace in containerd's metadata on the root.
	rt, err := Dial(ctx, Config{Address: cfg.Address, Namespace: "pk-managed-test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Client().NamespaceService().Create(ctx, "pk-managed-test", nil); err != nil {
		t.Fatal(err)
	}
	rt.Close()

	restartsBefore := counterValue(t)
	first := m.PID()
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !(m.PID() != 0 && m.PID() != first && Answers(cfg.Address)) {
		if time.Now().After(deadline) {
			t.Fatalf("containerd not started again within 30s of its kill (pid %d, restarts %d); log:\n%s", m.PID(), m.Restarts(), logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if m.Restarts() != 1 {
		t.Errorf("restarts = %d, want 1", m.Restarts())
	}
	if got := counterValue(t) - restartsBefore; got != 1 {
		t.Errorf("podkeeper_managed_containerd_restarts_total went up by %v, want 1", got)
	}
	if !strings.Contains(logs.String(), "managed containerd exited; starting it again") {
		t.Errorf("no log line of the restart:\n%s", logs.String())
	}
	rt, err = Dial(ctx, Config{Address: cfg.Address, Namespace: "pk-managed-test"})
	if err != nil {
		t.Fatal(err)
	}
	nss, err := rt.Client().NamespaceService().List(ctx)
	rt.Close()
	if err != nil || !strings.Contains(strings.Join(nss, ","), "pk-managed-test") {
		t.Fatalf("after the restart: namespaces %v (err %v), want pk-managed-test (the same root)", nss, err)
	}

	second := m.PID()
	m.Stop()
	if err := syscall.Kill(second, 0); err == nil {
		t.Errorf("containerd %d still runs after Stop", second)
	}
	time.Sleep(1500 * time.Millisecond) // longer than the first restart delays
	if m.PID() != 0 && m.PID() != second || Answers(cfg.Address) || m.Restarts() != 1 {
		t.Errorf("after Stop: pid %d, answers %v, restarts %d; want none started", m.PID(), Answers(cfg.Address), m.Restarts())
	}
}

// counterValue reads podkeeper_managed_containerd_restarts_total.
func counterValue(t *testing.T) float64 {
	var m dto.Metric
	if err := metrics.ManagedContainerdRestarts.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
