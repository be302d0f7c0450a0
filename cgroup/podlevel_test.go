package cgroup

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// plPod is a pod with pod-level resources pod (nil: none) and one app container per entry of ctrs.
func plPod(pod *corev1.ResourceRequirements, ctrs ...corev1.ResourceRequirements) *corev1.Pod {
	p := &corev1.Pod{}
	p.Spec.Resources = pod
	for i, r := range ctrs {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: string(rune('a' + i)), Resources: r})
	}
	return p
}

func TestQOSClassPodLevel(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want corev1.PodQOSClass
	}{
		{"pod-level equal, containers bare", plPod(&corev1.ResourceRequirements{Requests: res("cpu", "1", "memory", "64Mi"), Limits: res("cpu", "1", "memory", "64Mi")}, corev1.ResourceRequirements{}), corev1.PodQOSGuaranteed},
		{"pod-level limits only (request defaults to limit)", plPod(&corev1.ResourceRequirements{Limits: res("cpu", "1", "memory", "64Mi")}, corev1.ResourceRequirements{}), corev1.PodQOSGuaranteed},
		{"pod-level requests only", plPod(&corev1.ResourceRequirements{Requests: res("cpu", "100m")}, corev1.ResourceRequirements{Limits: res("cpu", "1", "memory", "64Mi")}), corev1.PodQOSBurstable},
		{"pod-level decides over Guaranteed containers", plPod(&corev1.ResourceRequirements{Requests: res("memory", "64Mi")}, corev1.ResourceRequirements{Limits: res("cpu", "1", "memory", "64Mi")}), corev1.PodQOSBurstable},
		{"empty spec.resources: the containers decide", plPod(&corev1.ResourceRequirements{}, corev1.ResourceRequirements{Limits: res("cpu", "1", "memory", "64Mi")}), corev1.PodQOSGuaranteed},
		{"only unsupported names: the containers decide", plPod(&corev1.ResourceRequirements{Limits: res("example.com/x", "1")}, corev1.ResourceRequirements{}), corev1.PodQOSBestEffort},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := QOSClass(tc.pod); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sidecars := plPod(nil, corev1.ResourceRequirements{Requests: res("cpu", "100m", "memory", "10Mi")})
	sidecars.Spec.InitContainers = []corev1.Container{
		{Name: "side", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: res("cpu", "50m")}},
		{Name: "init", Resources: corev1.ResourceRequirements{Requests: res("cpu", "200m", "memory", "5Mi")}},
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want corev1.ResourceList
	}{
		{"containers: a missing request counts the limit", plPod(nil, corev1.ResourceRequirements{Requests: res("cpu", "100m")}, corev1.ResourceRequirements{Limits: res("cpu", "200m", "memory", "1Gi")}),
			res("cpu", "300m", "memory", "1Gi")},
		{"a sidecar adds; a regular init counts with the sidecars before it", sidecars, res("cpu", "250m", "memory", "10Mi")},
		{"pod-level requests win where set", plPod(&corev1.ResourceRequirements{Requests: res("cpu", "1")}, corev1.ResourceRequirements{Requests: res("cpu", "100m", "memory", "32Mi")}),
			res("cpu", "1", "memory", "32Mi")},
		{"nothing requested", plPod(nil, corev1.ResourceRequirements{}), res()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PodRequests(tc.pod)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for n, q := range tc.want {
				if g := got[n]; g.Cmp(q) != 0 {
					t.Errorf("%s: got %s, want %s", n, g.String(), q.String())
				}
			}
		})
	}
}

func TestPodResourcesPodLevel(t *testing.T) {
	pl := &corev1.ResourceRequirements{Requests: res("cpu", "500m", "memory", "64Mi"), Limits: res("cpu", "1", "memory", "128Mi", "hugepages-2Mi", "4Mi")}
	// One container without limits: without pod-level resources the pod would be unbounded.
	got := PodResources(plPod(pl, corev1.ResourceRequirements{}, corev1.ResourceRequirements{Limits: res("memory", "32Mi")}), 0)
	want := Resources{CPUShares: MilliCPUToShares(500), CPUQuota: MilliCPUToQuota(1000, QuotaPeriodUS), CPUPeriod: QuotaPeriodUS, Memory: 128 << 20, HugePages: map[string]int64{"2MB": 4 << 20}}
	if got.CPUShares != want.CPUShares || got.CPUQuota != want.CPUQuota || got.Memory != want.Memory || got.HugePages["2MB"] != want.HugePages["2MB"] {
		t.Errorf("pod cgroup %+v, want %+v", got, want)
	}
	// Pod-level requests only: shares from them, limits from the containers as usual (none).
	got = PodResources(plPod(&corev1.ResourceRequirements{Requests: res("cpu", "250m")}, corev1.ResourceRequirements{}), 0)
	if got.CPUShares != MilliCPUToShares(250) || got.CPUQuota != 0 || got.Memory != 0 {
		t.Errorf("requests-only pod cgroup %+v", got)
	}
}

func TestContainerResourcesPodLevel(t *testing.T) {
	pod := plPod(&corev1.ResourceRequirements{Limits: res("cpu", "2", "memory", "128Mi")},
		corev1.ResourceRequirements{}, corev1.ResourceRequirements{Limits: res("cpu", "500m", "memory", "32Mi")})
	bare := ContainerResources(pod, &pod.Spec.Containers[0])
	// Its missing CPU request defaults to the pod's CPU limit, as in the kubelet (make conformance's
	// inside-cgroup-pod-level reads 512 shares for a 500m pod limit there).
	if bare.CPUQuota != MilliCPUToQuota(2000, QuotaPeriodUS) || bare.Memory != 128<<20 || bare.CPUShares != MilliCPUToShares(2000) {
		t.Errorf("container without limits: %+v, want the pod's limits and the shares of its CPU limit", bare)
	}
	own := ContainerResources(pod, &pod.Spec.Containers[1])
	if own.CPUQuota != MilliCPUToQuota(500, QuotaPeriodUS) || own.Memory != 32<<20 {
		t.Errorf("container with limits: %+v, want its own", own)
	}
}

func TestOOMScoreAdjPodLevel(t *testing.T) {
	const capacity = 1000 << 20
	// Burstable by pod-level resources: 400Mi requested at pod level, 100Mi by container a, none by
	// b: the 300Mi no container asks for is shared, 150Mi each.
	pod := plPod(&corev1.ResourceRequirements{Requests: res("memory", "400Mi"), Limits: res("memory", "800Mi")},
		corev1.ResourceRequirements{Requests: res("memory", "100Mi")}, corev1.ResourceRequirements{})
	if got, want := OOMScoreAdj(pod, &pod.Spec.Containers[0], capacity), 1000-1000*250/1000; got != want {
		t.Errorf("container a: %d, want %d", got, want)
	}
	if got, want := OOMScoreAdj(pod, &pod.Spec.Containers[1], capacity), 1000-1000*150/1000; got != want {
		t.Errorf("container b: %d, want %d", got, want)
	}
	// A sidecar scores no higher than the app container asking the least memory.
	always := corev1.ContainerRestartPolicyAlways
	sc := plPod(nil, corev1.ResourceRequirements{Requests: res("memory", "200Mi")}, corev1.ResourceRequirements{Requests: res("memory", "300Mi")})
	sc.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: res("memory", "10Mi")}}}
	if got, want := OOMScoreAdj(sc, &sc.Spec.InitContainers[0], capacity), 1000-1000*200/1000; got != want {
		t.Errorf("sidecar: %d, want %d (the least app container's)", got, want)
	}
	// system-node-critical (kubeadm's control plane): -997 whatever the class.
	crit := plPod(nil, corev1.ResourceRequirements{Requests: res("cpu", "100m")})
	crit.Spec.PriorityClassName = "system-node-critical"
	if got := OOMScoreAdj(crit, &crit.Spec.Containers[0], capacity); got != GuaranteedOOMScoreAdj {
		t.Errorf("system-node-critical: %d, want %d", got, GuaranteedOOMScoreAdj)
	}
}
