package podrunner

import (
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// storagePod is a pod with containers named by names, each with the ephemeral-storage limit
// given ("" none), and the volumes given.
func storagePod(limits map[string]string, vols ...corev1.Volume) *corev1.Pod {
	p := mgrPod("uid-s", "s", corev1.RestartPolicyAlways, "a", "b")
	for i := range p.Spec.Containers {
		if l := limits[p.Spec.Containers[i].Name]; l != "" {
			p.Spec.Containers[i].Resources.Limits = rlist("ephemeral-storage", l)
		}
	}
	p.Spec.Volumes = vols
	return p
}

func emptyDir(name, limit string, medium corev1.StorageMedium) corev1.Volume {
	v := corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: medium}}}
	if limit != "" {
		q := resource.MustParse(limit)
		v.EmptyDir.SizeLimit = &q
	}
	return v
}

func TestLocalStorageViolation(t *testing.T) {
	const mi = 1 << 20
	always := corev1.ContainerRestartPolicyAlways
	sidecarPod := func() *corev1.Pod {
		p := storagePod(map[string]string{"a": "10Mi"})
		p.Spec.InitContainers = []corev1.Container{
			{Name: "side", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Limits: rlist("ephemeral-storage", "2Mi")}},
			{Name: "init", Resources: corev1.ResourceRequirements{Limits: rlist("ephemeral-storage", "50Mi")}},
		}
		return p
	}
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		usage  LocalStorageUsage
		signal Signal
		msg    string
	}{
		{"no limits", storagePod(nil, emptyDir("d", "", "")),
			LocalStorageUsage{EmptyDirs: map[string]int64{"d": 1 << 40}, Containers: map[string]int64{"a": 1 << 40}}, "", ""},
		{"emptyDir over its sizeLimit", storagePod(nil, emptyDir("d", "1Mi", "")),
			LocalStorageUsage{EmptyDirs: map[string]int64{"d": mi + 4096}}, SignalEmptyDirFsLimit, `Usage of EmptyDir volume "d" exceeds the limit "1Mi". `},
		{"emptyDir at its sizeLimit", storagePod(nil, emptyDir("d", "1Mi", "")),
			LocalStorageUsage{EmptyDirs: map[string]int64{"d": mi}}, "", ""},
		{"memory emptyDir never checked", storagePod(nil, emptyDir("m", "1Mi", corev1.StorageMediumMemory)),
			LocalStorageUsage{EmptyDirs: map[string]int64{"m": 5 * mi}}, "", ""},
		{"emptyDir usage unknown", storagePod(nil, emptyDir("d", "1Mi", "")), LocalStorageUsage{}, "", ""},
		{"emptyDir first, in spec order", storagePod(map[string]string{"a": "1Mi"}, emptyDir("x", "1Mi", ""), emptyDir("y", "1Mi", "")),
			LocalStorageUsage{EmptyDirs: map[string]int64{"x": 2 * mi, "y": 3 * mi}, Containers: map[string]int64{"a": 9 * mi}},
			SignalEmptyDirFsLimit, `Usage of EmptyDir volume "x" exceeds the limit "1Mi". `},
		{"pod total over the sum of the limits", storagePod(map[string]string{"a": "3Mi", "b": "2Mi"}),
			LocalStorageUsage{Containers: map[string]int64{"a": 2 * mi, "b": mi}, Volumes: 3 * mi},
			SignalEphemeralPodFsLimit, "Pod ephemeral local storage usage exceeds the total limit of containers 5Mi. "},
		{"pod total counts a container without a limit", storagePod(map[string]string{"a": "3Mi"}),
			LocalStorageUsage{Containers: map[string]int64{"a": mi, "b": 3 * mi}},
			SignalEphemeralPodFsLimit, "Pod ephemeral local storage usage exceeds the total limit of containers 3Mi. "},
		{"one container over its limit", storagePod(map[string]string{"a": "3Mi", "b": "2Mi"}),
			LocalStorageUsage{Containers: map[string]int64{"a": mi, "b": 3 * mi}},
			SignalEphemeralContainerFsLimit, `Container b exceeded its local ephemeral storage limit "2Mi". `},
		{"within every limit", storagePod(map[string]string{"a": "3Mi", "b": "2Mi"}, emptyDir("d", "1Mi", "")),
			LocalStorageUsage{EmptyDirs: map[string]int64{"d": mi}, Containers: map[string]int64{"a": mi, "b": mi}, Volumes: mi}, "", ""},
		{"a regular init container's limit raises the pod's", sidecarPod(),
			LocalStorageUsage{Containers: map[string]int64{"a": 5 * mi, "side": mi}, Volumes: 30 * mi}, "", ""},
		{"sidecar over its limit", sidecarPod(),
			LocalStorageUsage{Containers: map[string]int64{"a": mi, "side": 3 * mi}},
			SignalEphemeralContainerFsLimit, `Container side exceeded its local ephemeral storage limit "2Mi". `},
		{"pod over init+sidecar", sidecarPod(),
			LocalStorageUsage{Containers: map[string]int64{"a": mi, "side": mi}, Volumes: 51 * mi},
			SignalEphemeralPodFsLimit, "Pod ephemeral local storage usage exceeds the total limit of containers 52Mi. "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, msg, ok := LocalStorageViolation(tc.pod, tc.usage)
			if ok != (tc.signal != "") || s != tc.signal || msg != tc.msg {
				t.Errorf("got %v %q %q, want %q %q", ok, s, msg, tc.signal, tc.msg)
			}
			if tc.signal != "" && !HasLocalStorageLimit(tc.pod) {
				t.Error("HasLocalStorageLimit false for a pod over a limit")
			}
		})
	}
	if HasLocalStorageLimit(storagePod(nil, emptyDir("m", "1Mi", corev1.StorageMediumMemory), emptyDir("d", "", ""))) {
		t.Error("HasLocalStorageLimit true for a memory emptyDir and an unlimited one")
	}
}

// A pod over a local storage limit is evicted without any node pressure: Failed/Evicted with the
// kubelet's message and no DisruptionTarget (the kubelet sets none for it), stopped, its local
// volumes released once its containers are stopped; a critical pod is never evicted; the evicted
// pod starts again after its backoff, with no node condition to wait for.
func TestManagerEvictsForLocalStorage(t *testing.T) {
	e := newEnv(t, slowBackoff)
	var mu sync.Mutex
	// uid-over writes its 5Mi only once all run (the loop's own first round comes at its start).
	usage := map[string]int64{"uid-over": 0, "uid-crit": 50 << 20, "uid-ok": 1 << 20}
	var released []string
	e.m.cfg.Eviction = &EvictionConfig{
		Interval: time.Hour, Transition: time.Minute,
		Observe: func() (map[Signal]Observation, error) { return map[Signal]Observation{}, nil },
		LocalStorage: func(p *corev1.Pod) (LocalStorageUsage, bool) {
			mu.Lock()
			defer mu.Unlock()
			return LocalStorageUsage{Containers: map[string]int64{"main": usage[string(p.UID)]}}, true
		},
		Release: func(p *corev1.Pod) error {
			mu.Lock()
			defer mu.Unlock()
			released = append(released, string(p.UID))
			return nil
		},
	}
	limited := func(uid string) *corev1.Pod {
		p := mgrPod(uid, uid, corev1.RestartPolicyAlways, "main")
		p.Spec.Containers[0].Resources.Limits = rlist("ephemeral-storage", "2Mi")
		return p
	}
	over, ok, crit := limited("uid-over"), limited("uid-ok"), limited("uid-crit")
	prio := CriticalPriority
	crit.Spec.Priority = &prio
	e.m.Update([]*corev1.Pod{over, ok, crit})
	e.run(t)
	for _, u := range []string{"uid-over", "uid-ok", "uid-crit"} {
		e.waitRunning(t, u, "main", 0)
	}
	evicted := func(uid string) bool {
		p := e.status(uid)
		return p != nil && p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted"
	}
	mu.Lock()
	usage["uid-over"] = 5 << 20
	mu.Unlock()
	var st PressureState
	t0 := time.Now()
	e.m.evictOnce(t.Context(), &st, time.Minute, 10*time.Second, t0)
	waitFor(t, "pod over its limit evicted", func() bool { return evicted("uid-over") })
	p := e.status("uid-over")
	if want := "Pod ephemeral local storage usage exceeds the total limit of containers 2Mi. "; p.Status.Message != want {
		t.Errorf("message %q, want %q", p.Status.Message, want)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == "DisruptionTarget" {
			t.Errorf("DisruptionTarget condition on a local storage eviction: %+v", c)
		}
	}
	waitFor(t, "evicted pod's volumes released", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(released) == 1 && released[0] == "uid-over"
	})
	if cs, found := e.containerStatus("uid-over", "main"); !found || cs.State.Running != nil {
		t.Errorf("evicted pod's container not stopped: %+v", cs)
	}
	time.Sleep(200 * time.Millisecond)
	if evicted("uid-ok") || evicted("uid-crit") {
		t.Fatal("a pod within its limit, or a critical one, evicted")
	}
	// No node condition: the pod comes back after its backoff (one interval for a first
	// eviction), with its usage below the limit now.
	mu.Lock()
	usage["uid-over"] = 0
	mu.Unlock()
	e.m.evictOnce(t.Context(), &st, time.Minute, 10*time.Second, t0.Add(5*time.Second))
	time.Sleep(200 * time.Millisecond)
	if !evicted("uid-over") {
		t.Fatal("evicted pod restarted before its backoff")
	}
	e.m.evictOnce(t.Context(), &st, time.Minute, 10*time.Second, t0.Add(11*time.Second))
	waitFor(t, "evicted pod running again", func() bool {
		p := e.status("uid-over")
		return p != nil && p.Status.Phase == corev1.PodRunning
	})
	restarted := false
	for _, ev := range e.rec.Events("uid-over") {
		restarted = restarted || (ev.Reason == "Restarted" && ev.Message == "Starting the pod again after its eviction: its backoff has passed")
	}
	if !restarted {
		t.Error("no Restarted event naming the backoff")
	}
}
