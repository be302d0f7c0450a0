package podrunner

import (
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestObservePressure(t *testing.T) {
	hard, _ := ParseThresholds("memory.available<100Mi", "")
	soft, _ := ParseThresholds("nodefs.available<20%", "nodefs.available=30s")
	mem := func(avail int64) map[Signal]Observation {
		return map[Signal]Observation{SignalMemoryAvailable: {avail, 1 << 34}, SignalNodeFsAvailable: {1000, 1000}}
	}
	disk := func(avail int64) map[Signal]Observation {
		return map[Signal]Observation{SignalMemoryAvailable: {1 << 33, 1 << 34}, SignalNodeFsAvailable: {avail, 1000}}
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		at       time.Duration
		obs      map[Signal]Observation
		act      string // signals acted on, comma-joined
		memPress bool
		dskPress bool
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"hard acts at once, condition holds for the transition period", []step{
			{0, mem(1 << 30), "", false, false},
			{10 * time.Second, mem(50 << 20), "memory.available", true, false},
			{20 * time.Second, mem(1 << 30), "", true, false},
			{10*time.Second + time.Minute - time.Nanosecond, mem(1 << 30), "", true, false},
			{10*time.Second + time.Minute, mem(1 << 30), "", false, false},
		}},
		{"soft acts after its grace period", []step{
			{0, disk(100), "", false, true},
			{20 * time.Second, disk(100), "", false, true},
			{30 * time.Second, disk(100), "nodefs.available", false, true},
		}},
		{"a break restarts the soft grace period", []step{
			{0, disk(100), "", false, true},
			{20 * time.Second, disk(900), "", false, true},
			{40 * time.Second, disk(100), "", false, true},
			{60 * time.Second, disk(100), "", false, true},
			{70 * time.Second, disk(100), "nodefs.available", false, true},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var st PressureState
			for i, s := range tc.steps {
				d := ObservePressure(&st, hard, soft, s.obs, time.Minute, t0.Add(s.at))
				var got []string
				for _, th := range d.Act {
					got = append(got, string(th.Signal))
				}
				if strings.Join(got, ",") != s.act {
					t.Errorf("step %d: act = %v, want %q", i, got, s.act)
				}
				if d.Conditions[corev1.NodeMemoryPressure].True != s.memPress || d.Conditions[corev1.NodeDiskPressure].True != s.dskPress {
					t.Errorf("step %d: conditions = %+v", i, d.Conditions)
				}
				if d.Conditions[corev1.NodePIDPressure].True {
					t.Errorf("step %d: PIDPressure", i)
				}
			}
		})
	}
}

func TestObservePressureTransitionTime(t *testing.T) {
	hard, _ := ParseThresholds("pid.available<100", "")
	var st PressureState
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := ObservePressure(&st, hard, nil, map[Signal]Observation{SignalPIDAvailable: {10, 1000}}, time.Minute, t0)
	if c := d.Conditions[corev1.NodePIDPressure]; !c.True || !c.Since.Equal(t0) {
		t.Fatalf("PIDPressure = %+v", c)
	}
	d = ObservePressure(&st, hard, nil, map[Signal]Observation{SignalPIDAvailable: {10, 1000}}, time.Minute, t0.Add(time.Second))
	if c := d.Conditions[corev1.NodePIDPressure]; !c.Since.Equal(t0) {
		t.Fatalf("transition time moved while the condition held: %+v", c)
	}
}

func TestEvictionMessage(t *testing.T) {
	th, _ := ParseThresholds("memory.available<100Mi", "")
	p := mgrPod("u", "web", corev1.RestartPolicyAlways, "x", "y")
	p.Spec.Containers[1].Resources.Requests = rlist("memory", "64Mi")
	got := EvictionMessage(th[0], Observation{50 << 20, 1 << 30}, p, PodUsage{Total: 100 << 20, Containers: map[string]int64{"x": 70 << 20, "y": 30 << 20}})
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container x was using 70Mi, request is 0, has larger consumption of memory."
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	disk, _ := ParseThresholds("nodefs.available<10%", "")
	if got := EvictionMessage(disk[0], Observation{1 << 30, 20 << 30}, p, PodUsage{}); got != "The node was low on resource: ephemeral-storage. Threshold quantity: 2Gi, available: 1Gi." {
		t.Errorf("disk: %q", got)
	}
}

// Disk evictions name the containers writing more than their ephemeral-storage request, as the
// kubelet's message does; process evictions name none.
func TestEvictionMessageDisk(t *testing.T) {
	p := reqPod("u")
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side"})
	p.Spec.Containers[0].Resources.Requests = rlist("ephemeral-storage", "10Mi")
	th, _ := ParseThresholds("nodefs.available<10%", "")
	got := EvictionMessage(th[0], Observation{1 << 30, 20 << 30}, p, PodUsage{Total: 40 << 20, Containers: map[string]int64{"main": 30 << 20, "side": 10 << 20}})
	want := "The node was low on resource: ephemeral-storage. Threshold quantity: 2Gi, available: 1Gi. Container main was using 30Mi, request is 10Mi, has larger consumption of ephemeral-storage. Container side was using 10Mi, request is 0, has larger consumption of ephemeral-storage."
	if got != want {
		t.Errorf("message\n%q, want\n%q", got, want)
	}
	pid, _ := ParseThresholds("pid.available<1000", "")
	if got := EvictionMessage(pid[0], Observation{500, 32768}, p, PodUsage{Total: 7}); got != "The node was low on resource: pids. Threshold quantity: 1k, available: 500." {
		t.Errorf("pid message %q", got)
	}
}

func TestRestartAfterEviction(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{1, 10 * time.Second}, {2, 20 * time.Second}, {3, 40 * time.Second}, {10, 5 * time.Minute}} {
		if got := RestartAfterEviction(10*time.Second, tc.n); got != tc.want {
			t.Errorf("%d evictions: %v, want %v", tc.n, got, tc.want)
		}
	}
}

// The manager evicts one pod per round, the BestEffort one first, never the critical one, and
// starts the evicted pods again once the pressure is gone.
func TestManagerEvicts(t *testing.T) {
	e := newEnv(t, slowBackoff)
	e.m.cfg.Allocatable = rlist("cpu", "4", "memory", "1Gi", "pods", "10") // re-admitted when they come back
	var mu sync.Mutex
	avail := int64(1 << 33)
	usage := map[string]int64{"uid-be": 40 << 20, "uid-bu": 30 << 20, "uid-crit": 500 << 20}
	hard, _ := ParseThresholds("memory.available<100Mi", "")
	e.m.cfg.Eviction = &EvictionConfig{
		Hard: hard, Interval: time.Hour, Transition: time.Minute,
		Observe: func() (map[Signal]Observation, error) {
			mu.Lock()
			defer mu.Unlock()
			return map[Signal]Observation{SignalMemoryAvailable: {avail, 1 << 34}}, nil
		},
		Usage: func(p *corev1.Pod, _ Signal) (PodUsage, bool) {
			return PodUsage{Total: usage[string(p.UID)], Containers: map[string]int64{"main": usage[string(p.UID)]}}, true
		},
	}
	be := reqPod("uid-be")
	bu := reqPod("uid-bu", "memory", "10Mi")
	crit := reqPod("uid-crit")
	prio := CriticalPriority + 1000
	crit.Spec.Priority = &prio
	e.m.Update([]*corev1.Pod{be, bu, crit})
	e.run(t)
	for _, u := range []string{"uid-be", "uid-bu", "uid-crit"} {
		e.waitRunning(t, u, "main", 0)
	}
	var st PressureState
	t0 := time.Now()
	mu.Lock()
	avail = 50 << 20
	mu.Unlock()
	evicted := func(uid string) bool {
		p := e.status(uid)
		return p != nil && p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted"
	}
	e.m.evictOnce(t.Context(), &st, time.Minute, 10*time.Second, t0)
	waitFor(t, "BestEffort pod evicted", func() bool { return evicted("uid-be") })
	if evicted("uid-bu") || evicted("uid-crit") {
		t.Fatal("more than one pod evicted in one round")
	}
	if !e.m.NodeConditions()[corev1.NodeMemoryPressure].True {
		t.Error("no MemoryPressure")
	}
	if msg := e.status("uid-be").Status.Message; !strings.Contains(msg, "Threshold quantity: 100Mi, available: 50Mi. Container main was using 40Mi, request is 0") {
		t.Errorf("message %q", msg)
	}
	if _, ok := e.containerStatus("uid-be", "main"); ok {
		if cs, _ := e.containerStatus("uid-be", "main"); cs.State.Running != nil {
			t.Error("evicted pod's container still running")
		}
	}
	e.m.evictOnce(t.Context(), &st, time.Minute, 10*time.Second, t0.Add(10*time.Second))
	waitFor(t, "Burstable pod evicted", func() bool { return evicted("uid-bu") })
	e.m.evictOnce(t.Context(), &st, time.Minute, 10*time.Second, t0.Add(20*time.Second))
	time.Sleep(200 * time.Millisecond)
	if evicted("uid-crit") {
		t.Fatal("critical pod evicted")
	}
	warned := false
	for _, ev := range e.rec.Events("uid-be") {
		warned = warned || (ev.Reason == "Evicted" && ev.Type == EventWarning)
	}
	if !warned {
		t.Error("no Warning Evicted event")
	}
	// Pressure gone: the condition holds for the transition period, then the pods come back
	// after their backoff (10 s for a first eviction).
	mu.Lock()
	avail = 1 << 33
	mu.Unlock()
	e.m.evictOnce(t.Context(), &st, time.Minute, 10*time.Second, t0.Add(30*time.Second))
	e.m.evictOnce(t.Context(), &st, time.Minute, 10*time.Second, t0.Add(75*time.Second))
	if !e.m.NodeConditions()[corev1.NodeMemoryPressure].True {
		t.Fatal("MemoryPressure False within the transition period")
	}
	e.m.evictOnce(t.Context(), &st, time.Minute, 10*time.Second, t0.Add(85*time.Second))
	if e.m.NodeConditions()[corev1.NodeMemoryPressure].True {
		t.Fatal("MemoryPressure still True after the transition period")
	}
	e.m.evictOnce(t.Context(), &st, time.Minute, 10*time.Second, t0.Add(90*time.Second))
	time.Sleep(200 * time.Millisecond)
	if !evicted("uid-be") {
		t.Fatal("evicted pod restarted before its backoff")
	}
	e.m.evictOnce(t.Context(), &st, time.Minute, 10*time.Second, t0.Add(96*time.Second))
	for _, u := range []string{"uid-be", "uid-bu"} {
		waitFor(t, u+" running again", func() bool {
			p := e.status(u)
			return p != nil && p.Status.Phase == corev1.PodRunning
		})
	}
}
