package podrunner

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestEvictionStateRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
	marks := map[types.UID]*evictMark{
		"a": {message: "low on memory", cond: corev1.NodeMemoryPressure, at: at, evictions: 2},
		"b": {message: "cleared one", cond: corev1.NodeDiskPressure, at: at, evictions: 1, cleared: true},
	}
	counts := map[types.UID]int{"a": 2, "b": 1, "c": 3}
	b, err := encodeEvictions(marks, counts)
	if err != nil {
		t.Fatal(err)
	}
	gotMarks, gotCounts, err := decodeEvictions(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(gotCounts) != 3 || gotCounts["a"] != 2 || gotCounts["b"] != 1 || gotCounts["c"] != 3 {
		t.Errorf("counts = %v", gotCounts)
	}
	// A cleared mark is not an eviction any more (the pod runs again): only its count is kept.
	if len(gotMarks) != 1 {
		t.Fatalf("marks = %v, want only a", gotMarks)
	}
	if a := gotMarks["a"]; a.message != "low on memory" || a.cond != corev1.NodeMemoryPressure || !a.at.Equal(at) || a.evictions != 2 || a.cleared {
		t.Errorf("a = %+v", a)
	}
	if _, _, err := decodeEvictions([]byte("{not json")); err == nil {
		t.Error("bad state accepted")
	}
}

// An eviction survives the agent's restart: the new manager, on the same containers, keeps the
// evicted pod down (Failed/Evicted) instead of starting it at once, and starts it again only once
// the pressure is gone and its backoff has passed. With eviction off the state file goes away and
// the pod runs.
func TestEvictionRememberedAcrossRestart(t *testing.T) {
	state := filepath.Join(t.TempDir(), "evictions.json")
	rt := newFakeRuntime()
	// No pressure until the test says so: the manager's own loop observes at once when it starts.
	var avail atomic.Int64
	avail.Store(1 << 33)
	hard, _ := ParseThresholds("memory.available<100Mi", "")
	evictCfg := func() *EvictionConfig {
		return &EvictionConfig{
			Hard: hard, Interval: time.Hour, Transition: time.Minute,
			Observe: func() (map[Signal]Observation, error) {
				return map[Signal]Observation{SignalMemoryAvailable: {avail.Load(), 1 << 34}}, nil
			},
			Usage: func(p *corev1.Pod, _ Signal) (PodUsage, bool) { return PodUsage{Total: 10 << 20}, true },
		}
	}
	start := func(ec *EvictionConfig) (*Manager, context.CancelFunc, chan error) {
		m := NewManager(Config{
			NodeName: "node1", LogDir: t.TempDir(), Backoff: slowBackoff, Resync: time.Hour,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Eviction: ec, EvictionState: state,
		}, rt, NewRecorder("node1", 100))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		m.Update([]*corev1.Pod{reqPod("uid-be"), reqPod("uid-gone")})
		return m, cancel, done
	}
	stop := func(cancel context.CancelFunc, done chan error) {
		cancel()
		select {
		case <-done:
		case <-time.After(waitTimeout):
			t.Fatal("Run did not return")
		}
	}
	podOf := func(m *Manager, uid string) *corev1.Pod {
		for _, p := range m.Pods() {
			if string(p.UID) == uid {
				return p
			}
		}
		return nil
	}
	evicted := func(m *Manager) bool {
		p := podOf(m, "uid-be")
		return p != nil && p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted"
	}
	runningNow := func(m *Manager) bool {
		p := podOf(m, "uid-be")
		return p != nil && p.Status.Phase == corev1.PodRunning
	}

	m1, cancel1, done1 := start(evictCfg())
	<-m1.Ready()
	waitFor(t, "pods running", func() bool { return runningNow(m1) && podOf(m1, "uid-gone") != nil })
	avail.Store(50 << 20)
	var st PressureState
	t0 := time.Now()
	// Both pods rank alike: evict until uid-be is down (at most two rounds).
	for i := 0; i < 2 && !evicted(m1); i++ {
		m1.evictOnce(t.Context(), &st, time.Minute, 10*time.Second, t0)
		time.Sleep(100 * time.Millisecond)
	}
	waitFor(t, "uid-be evicted", func() bool { return evicted(m1) })
	stop(cancel1, done1)
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("no eviction state written: %v", err)
	}

	// Restart, pressure still on: the pod stays evicted, its containers are not started again.
	starts := len(rt.CallsFor("StartContainer", "uid-be"))
	m2, cancel2, done2 := start(evictCfg())
	<-m2.Ready()
	waitFor(t, "uid-be still evicted after the restart", func() bool { return evicted(m2) })
	time.Sleep(300 * time.Millisecond)
	if n := len(rt.CallsFor("StartContainer", "uid-be")); n != starts {
		t.Fatalf("evicted pod started again at the restart (%d starts, was %d)", n, starts)
	}
	// Pressure gone, backoff passed (the first eviction: one interval): it runs again, and the
	// count is kept so that a next eviction backs off longer.
	avail.Store(1 << 33)
	var st2 PressureState
	m2.evictOnce(t.Context(), &st2, time.Minute, 10*time.Second, time.Now().Add(11*time.Second))
	waitFor(t, "uid-be running again", func() bool { return runningNow(m2) })
	m2.mu.Lock()
	n := m2.evictions["uid-be"]
	m2.mu.Unlock()
	if n != 1 {
		t.Errorf("eviction count after the restart = %d, want 1", n)
	}
	stop(cancel2, done2)

	// Eviction off: the state is removed, nothing is held.
	m2.mu.Lock()
	m2.evicted = map[types.UID]*evictMark{"uid-be": {message: "x", cond: corev1.NodeMemoryPressure, at: time.Now(), evictions: 1}}
	m2.mu.Unlock()
	m2.saveEvictions()
	m3, cancel3, done3 := start(nil)
	<-m3.Ready()
	waitFor(t, "uid-be running with eviction off", func() bool { return runningNow(m3) })
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("eviction state still there with eviction off: %v", err)
	}
	stop(cancel3, done3)
}
