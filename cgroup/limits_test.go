package cgroup

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestMilliCPUToShares(t *testing.T) {
	for _, tc := range []struct {
		milli int64
		want  uint64
	}{{0, 2}, {1, 2}, {2, 2}, {100, 102}, {250, 256}, {1000, 1024}, {1500, 1536}, {256000, 262144}, {300000, 262144}} {
		if got := MilliCPUToShares(tc.milli); got != tc.want {
			t.Errorf("MilliCPUToShares(%d) = %d, want %d", tc.milli, got, tc.want)
		}
	}
}

func TestSharesToWeight(t *testing.T) {
	for _, tc := range []struct{ shares, want uint64 }{{0, 0}, {2, 1}, {102, 4}, {1024, 39}, {262144, 10000}, {1, 1}} {
		if got := SharesToWeight(tc.shares); got != tc.want {
			t.Errorf("SharesToWeight(%d) = %d, want %d", tc.shares, got, tc.want)
		}
	}
}

func TestMilliCPUToQuota(t *testing.T) {
	for _, tc := range []struct{ milli, want int64 }{{0, 0}, {5, 1000}, {10, 1000}, {100, 10000}, {500, 50000}, {2000, 200000}} {
		if got := MilliCPUToQuota(tc.milli, QuotaPeriodUS); got != tc.want {
			t.Errorf("MilliCPUToQuota(%d) = %d, want %d", tc.milli, got, tc.want)
		}
	}
}

func TestContainerResources(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    corev1.ResourceRequirements
		want Resources
	}{
		{"besteffort", corev1.ResourceRequirements{}, Resources{CPUShares: 2, CPUPeriod: QuotaPeriodUS}},
		{"limits", corev1.ResourceRequirements{Limits: res("cpu", "500m", "memory", "64Mi")}, Resources{CPUShares: 512, CPUQuota: 50000, CPUPeriod: QuotaPeriodUS, Memory: 64 << 20}},
		{"request", corev1.ResourceRequirements{Requests: res("cpu", "250m", "memory", "32Mi")}, Resources{CPUShares: 256, CPUPeriod: QuotaPeriodUS}},
		{"hugepages", corev1.ResourceRequirements{Limits: res("hugepages-2Mi", "4Mi")}, Resources{CPUShares: 2, CPUPeriod: QuotaPeriodUS, HugePages: map[string]int64{"2MB": 4 << 20}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ContainerResources(&corev1.Pod{}, &corev1.Container{Resources: tc.r})
			if got.CPUShares != tc.want.CPUShares || got.CPUQuota != tc.want.CPUQuota || got.Memory != tc.want.Memory || len(got.HugePages) != len(tc.want.HugePages) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for k, v := range tc.want.HugePages {
				if got.HugePages[k] != v {
					t.Fatalf("hugepages %s = %d, want %d", k, got.HugePages[k], v)
				}
			}
		})
	}
}

func podWith(init []corev1.ResourceRequirements, app ...corev1.ResourceRequirements) *corev1.Pod {
	p := &corev1.Pod{}
	for _, r := range init {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "i", Resources: r})
	}
	for _, r := range app {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c", Resources: r})
	}
	return p
}

func TestPodResources(t *testing.T) {
	lim := func(kv ...string) corev1.ResourceRequirements { return corev1.ResourceRequirements{Limits: res(kv...)} }
	for _, tc := range []struct {
		name                string
		pod                 *corev1.Pod
		shares              uint64
		quota, memory, pids int64
	}{
		{"besteffort", podWith(nil, corev1.ResourceRequirements{}), 2, 0, 0, 0},
		{"guaranteed sums", podWith(nil, lim("cpu", "500m", "memory", "64Mi"), lim("cpu", "250m", "memory", "32Mi")), 768, 75000, 96 << 20, 0},
		{"one unlimited: no pod limit", podWith(nil, lim("cpu", "500m", "memory", "64Mi"), corev1.ResourceRequirements{Requests: res("cpu", "100m")}), 614, 0, 0, 0},
		{"init bigger", podWith([]corev1.ResourceRequirements{lim("cpu", "2", "memory", "1Gi")}, lim("cpu", "500m", "memory", "64Mi")), 2048, 200000, 1 << 30, 0},
		{"an init container without limits: no pod limit (the kubelet's limitsDeclared)",
			podWith([]corev1.ResourceRequirements{{Requests: res("cpu", "300m", "memory", "48Mi")}}, corev1.ResourceRequirements{Requests: res("cpu", "100m"), Limits: res("memory", "32Mi")}), 307, 0, 0, 0},
		{"overhead on limits and request", withOverhead(podWith(nil, lim("cpu", "500m", "memory", "64Mi")), "cpu", "250m", "memory", "16Mi"), 768, 75000, 80 << 20, 0},
		{"overhead on a pod without limits: the request only", withOverhead(podWith(nil, corev1.ResourceRequirements{Requests: res("cpu", "100m")}), "cpu", "100m", "memory", "16Mi"), 204, 0, 0, 0},
		{"overhead on a BestEffort pod: 2 shares", withOverhead(podWith(nil, corev1.ResourceRequirements{}), "cpu", "100m"), 2, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PodResources(tc.pod, 0)
			if got.CPUShares != tc.shares || got.CPUQuota != tc.quota || got.Memory != tc.memory || got.PidsLimit != tc.pids {
				t.Fatalf("got shares=%d quota=%d memory=%d pids=%d, want %d %d %d %d", got.CPUShares, got.CPUQuota, got.Memory, got.PidsLimit, tc.shares, tc.quota, tc.memory, tc.pids)
			}
		})
	}
	if got := PodResources(podWith(nil, corev1.ResourceRequirements{}), 128).PidsLimit; got != 128 {
		t.Fatalf("pids limit = %d, want 128", got)
	}
}

func TestOOMScoreAdj(t *testing.T) {
	const capacity = 4 << 30
	req := func(mem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: res("memory", mem)}
	}
	for _, tc := range []struct {
		name string
		r    corev1.ResourceRequirements
		want int
	}{
		{"guaranteed", corev1.ResourceRequirements{Limits: res("cpu", "1", "memory", "1Gi")}, -997},
		{"besteffort", corev1.ResourceRequirements{}, 1000},
		{"burstable quarter", req("1Gi"), 750},
		{"burstable tiny", req("1"), 999},
		{"burstable all memory", req("4Gi"), 3},
		{"burstable over capacity", req("8Gi"), 3},
		{"burstable cpu only", corev1.ResourceRequirements{Requests: res("cpu", "1")}, 999},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := podWith(nil, tc.r)
			if got := OOMScoreAdj(p, &p.Spec.Containers[0], capacity); got != tc.want {
				t.Fatalf("OOMScoreAdj = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestClampOOMScoreAdj(t *testing.T) {
	for _, tc := range []struct {
		want, floor int
		canLower    bool
		got         int
		clamped     bool
	}{
		{-997, 0, false, 0, true},
		{-997, 0, true, -997, false},
		{1000, 0, false, 1000, false},
		{500, 600, false, 600, true},
		{0, 0, false, 0, false},
	} {
		got, clamped := ClampOOMScoreAdj(tc.want, tc.floor, tc.canLower)
		if got != tc.got || clamped != tc.clamped {
			t.Errorf("Clamp(%d, floor %d, canLower %v) = %d,%v want %d,%v", tc.want, tc.floor, tc.canLower, got, clamped, tc.got, tc.clamped)
		}
	}
}

func TestBurstableShares(t *testing.T) {
	pod := func(r corev1.ResourceRequirements, init ...corev1.ResourceRequirements) *corev1.Pod {
		return podWith(init, r)
	}
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want uint64
	}{
		{"none", nil, 2},
		{"besteffort only", []*corev1.Pod{pod(corev1.ResourceRequirements{})}, 2},
		{"guaranteed not counted", []*corev1.Pod{pod(corev1.ResourceRequirements{Limits: res("cpu", "2", "memory", "1Gi")})}, 2},
		{"two burstable", []*corev1.Pod{
			pod(corev1.ResourceRequirements{Requests: res("cpu", "500m")}),
			pod(corev1.ResourceRequirements{Requests: res("cpu", "250m", "memory", "1Mi")}),
		}, 768},
		{"limit counts when no request", []*corev1.Pod{pod(corev1.ResourceRequirements{Limits: res("cpu", "1")})}, 1024},
		{"init container larger", []*corev1.Pod{pod(corev1.ResourceRequirements{Requests: res("cpu", "100m")}, corev1.ResourceRequirements{Requests: res("cpu", "2")})}, 2048},
		{"memory only", []*corev1.Pod{pod(corev1.ResourceRequirements{Requests: res("memory", "1Gi")})}, 2},
	} {
		if got := BurstableShares(tc.pods); got != tc.want {
			t.Errorf("%s: BurstableShares = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// withOverhead sets the pod's spec.overhead.
func withOverhead(p *corev1.Pod, kv ...string) *corev1.Pod {
	p.Spec.Overhead = res(kv...)
	return p
}

func TestPodRequestsCountOverhead(t *testing.T) {
	p := withOverhead(podWith(nil, corev1.ResourceRequirements{Requests: res("cpu", "100m", "memory", "32Mi")}), "cpu", "50m", "memory", "8Mi", "pods", "0")
	got := PodRequests(p)
	if c, m := got[corev1.ResourceCPU], got[corev1.ResourceMemory]; c.MilliValue() != 150 || m.Value() != 40<<20 || len(got) != 2 {
		t.Errorf("PodRequests = %v, want cpu 150m, memory 40Mi and nothing else", got)
	}
	if q := QOSClass(p); q != corev1.PodQOSBurstable {
		t.Errorf("QoS %s: the overhead does not count for the class", q)
	}
}
