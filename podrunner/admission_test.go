package podrunner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rlist(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func reqPod(uid string, kv ...string) *corev1.Pod {
	p := mgrPod(uid, uid, corev1.RestartPolicyAlways, "main")
	p.Spec.Containers[0].Resources.Requests = rlist(kv...)
	return p
}

func TestAdmit(t *testing.T) {
	alloc := rlist("cpu", "1500m", "memory", "1Gi", "pods", "3")
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		admitted []*corev1.Pod
		ok       bool
		reason   string
		msg      string
	}{
		{"fits", reqPod("a", "cpu", "1", "memory", "512Mi"), nil, true, "", ""},
		{"besteffort always fits", reqPod("a"), []*corev1.Pod{reqPod("b", "cpu", "1500m", "memory", "1Gi")}, true, "", ""},
		{"cpu", reqPod("a", "cpu", "1"), []*corev1.Pod{reqPod("b", "cpu", "600m")}, false, "OutOfcpu",
			"Node didn't have enough resource: cpu, requested: 1000, used: 600, capacity: 1500"},
		{"memory", reqPod("a", "memory", "600Mi"), []*corev1.Pod{reqPod("b", "memory", "500Mi")}, false, "OutOfmemory",
			"Node didn't have enough resource: memory, requested: 629145600, used: 524288000, capacity: 1073741824"},
		{"exactly full", reqPod("a", "cpu", "900m"), []*corev1.Pod{reqPod("b", "cpu", "600m")}, true, "", ""},
		{"pods", reqPod("a"), []*corev1.Pod{reqPod("b"), reqPod("c"), reqPod("d")}, false, "OutOfpods",
			"Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason, msg := Admit(tc.pod, tc.admitted, alloc)
			if ok != tc.ok || reason != tc.reason || msg != tc.msg {
				t.Fatalf("Admit = %v %q %q, want %v %q %q", ok, reason, msg, tc.ok, tc.reason, tc.msg)
			}
		})
	}
}

func TestPodRequestsInitContainers(t *testing.T) {
	p := reqPod("a", "cpu", "200m", "memory", "64Mi")
	p.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Limits: rlist("cpu", "1", "memory", "32Mi")}}}
	got := PodRequests(p)
	if c := got[corev1.ResourceCPU]; c.MilliValue() != 1000 {
		t.Errorf("cpu = %s, want 1 (the init container's)", c.String())
	}
	if m := got[corev1.ResourceMemory]; m.Value() != 64<<20 {
		t.Errorf("memory = %s, want 64Mi", m.String())
	}
}

func TestAllocatable(t *testing.T) {
	got := Allocatable(rlist("cpu", "2", "memory", "4Gi", "pods", "110"), rlist("cpu", "500m", "memory", "512Mi"), rlist("memory", "100Mi"), rlist("cpu", "3"))
	if c := got[corev1.ResourceCPU]; !c.IsZero() {
		t.Errorf("cpu = %s, want 0 (never negative)", c.String())
	}
	if m := got[corev1.ResourceMemory]; m.Value() != 4<<30-512<<20-100<<20 {
		t.Errorf("memory = %d", m.Value())
	}
	if p := got[corev1.ResourcePods]; p.Value() != 110 {
		t.Errorf("pods = %s", p.String())
	}
}

// A pod that does not fit is Failed OutOfcpu, and starts once the pod holding the room is gone.
func TestManagerAdmissionWaitsForRoom(t *testing.T) {
	e := newEnv(t, slowBackoff)
	e.m.cfg.Allocatable = rlist("cpu", "1", "memory", "1Gi")
	big := reqPod("uid-big", "cpu", "800m")
	other := reqPod("uid-other", "cpu", "500m")
	e.m.Update([]*corev1.Pod{big})
	e.run(t)
	e.waitRunning(t, "uid-big", "main", 0)
	e.m.Update([]*corev1.Pod{big, other})
	waitFor(t, "other rejected", func() bool {
		p := e.status("uid-other")
		return p != nil && p.Status.Phase == corev1.PodFailed && p.Status.Reason == "OutOfcpu"
	})
	if p := e.status("uid-other"); p.Status.Message != "Pod was rejected: Node didn't have enough resource: cpu, requested: 500, used: 800, capacity: 1000" {
		t.Errorf("message = %q", p.Status.Message)
	}
	if p := e.status("uid-other"); p.Status.QOSClass != corev1.PodQOSBurstable {
		t.Errorf("qosClass = %q, want Burstable (the kubelet's rejected pods show it)", p.Status.QOSClass)
	}
	if n := len(e.rt.CallsFor("CreateSandbox", "uid-other")); n != 0 {
		t.Fatalf("rejected pod got %d sandboxes", n)
	}
	e.m.Update([]*corev1.Pod{other})
	e.waitRunning(t, "uid-other", "main", 0)
	warned := false
	for _, ev := range e.rec.Events("uid-other") {
		warned = warned || ev.Reason == "OutOfcpu"
	}
	if !warned {
		t.Error("no OutOfcpu event")
	}
}
