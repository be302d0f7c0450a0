package cgroup

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCPUConversions(t *testing.T) {
	for _, tc := range []struct {
		milli  int64
		shares uint64
		weight uint64
		quota  int64
	}{
		{0, 2, 1, 0},
		{1, 2, 1, 1000}, // quota floor: 1 ms per 100 ms period
		{5, 5, 1, 1000},
		{100, 102, 4, 10000},
		{250, 256, 10, 25000},
		{1000, 1024, 39, 100000},
		{2500, 2560, 98, 250000},
		{300000, 262144, 10000, 30000000},
	} {
		if got := MilliCPUToShares(tc.milli); got != tc.shares {
			t.Errorf("MilliCPUToShares(%d) = %d, want %d", tc.milli, got, tc.shares)
		}
		if got := SharesToWeight(MilliCPUToShares(tc.milli)); got != tc.weight {
			t.Errorf("SharesToWeight(shares of %dm) = %d, want %d", tc.milli, got, tc.weight)
		}
		if got := MilliCPUToQuota(tc.milli); got != tc.quota {
			t.Errorf("MilliCPUToQuota(%d) = %d, want %d", tc.milli, got, tc.quota)
		}
	}
	if SharesToWeight(0) != 0 {
		t.Error("shares 0 must stay unset")
	}
}

func rl(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func podWith(reqs, lims corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u-1"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "a", Resources: corev1.ResourceRequirements{Requests: reqs, Limits: lims}}}}}
}

func TestOOMScoreAdj(t *testing.T) {
	capacity := int64(8 << 30)
	crit := int32(CriticalPriority)
	critical := podWith(nil, nil)
	critical.Spec.Priority = &crit
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want int
	}{
		{"best effort", podWith(nil, nil), 1000},
		{"guaranteed", podWith(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi")), -997},
		{"burstable 1Gi of 8Gi", podWith(rl("memory", "1Gi"), nil), 875},
		{"burstable tiny request", podWith(rl("cpu", "10m"), nil), 999},
		{"burstable asks everything", podWith(rl("memory", "8Gi"), rl("memory", "16Gi")), 2},
		{"node-critical best effort", critical, -997},
	} {
		if got := OOMScoreAdj(tc.pod, &tc.pod.Spec.Containers[0], capacity); got != tc.want {
			t.Errorf("%s: OOMScoreAdj = %d, want %d", tc.name, got, tc.want)
		}
	}
	if ClampOOMScoreAdj(-997, 0) != 0 || ClampOOMScoreAdj(1000, 0) != 1000 || ClampOOMScoreAdj(-998, -1000) != -998 {
		t.Error("ClampOOMScoreAdj")
	}
}

func TestTreePaths(t *testing.T) {
	fs := Tree{Parent: "podkeeper", Driver: Cgroupfs}
	sd := Tree{Parent: "podkeeper", Driver: Systemd}
	uid := "1234-abcd"
	for _, tc := range []struct {
		tree Tree
		q    corev1.PodQOSClass
		pod  string
		ctr  string
	}{
		{fs, corev1.PodQOSGuaranteed, "/podkeeper/pod1234-abcd", "/podkeeper/pod1234-abcd/c1"},
		{fs, corev1.PodQOSBurstable, "/podkeeper/burstable/pod1234-abcd", "/podkeeper/burstable/pod1234-abcd/c1"},
		{fs, corev1.PodQOSBestEffort, "/podkeeper/besteffort/pod1234-abcd", "/podkeeper/besteffort/pod1234-abcd/c1"},
		{sd, corev1.PodQOSGuaranteed, "/podkeeper.slice/podkeeper-pod1234_abcd.slice", "podkeeper-pod1234_abcd.slice:podkeeper:c1"},
		{sd, corev1.PodQOSBurstable, "/podkeeper.slice/podkeeper-burstable.slice/podkeeper-burstable-pod1234_abcd.slice", "podkeeper-burstable-pod1234_abcd.slice:podkeeper:c1"},
		{sd, corev1.PodQOSBestEffort, "/podkeeper.slice/podkeeper-besteffort.slice/podkeeper-besteffort-pod1234_abcd.slice", "podkeeper-besteffort-pod1234_abcd.slice:podkeeper:c1"},
	} {
		if got := tc.tree.PodPath(uid, tc.q); got != tc.pod {
			t.Errorf("%s %s PodPath = %q, want %q", tc.tree.Driver, tc.q, got, tc.pod)
		}
		if got := tc.tree.ContainerCgroupsPath(uid, tc.q, "c1"); got != tc.ctr {
			t.Errorf("%s %s ContainerCgroupsPath = %q, want %q", tc.tree.Driver, tc.q, got, tc.ctr)
		}
	}
	if got := (Tree{}).PodPath("u", corev1.PodQOSBurstable); got != "/podkeeper/burstable/podu" {
		t.Errorf("default parent: %q", got)
	}
	if _, err := ParseDriver("lxc"); err == nil {
		t.Error("ParseDriver accepted lxc")
	}
}

func TestPodAndContainerResources(t *testing.T) {
	g := podWith(rl("cpu", "500m", "memory", "64Mi"), rl("cpu", "500m", "memory", "64Mi"))
	g.Spec.Containers = append(g.Spec.Containers, corev1.Container{Name: "b", Resources: corev1.ResourceRequirements{
		Requests: rl("cpu", "250m", "memory", "32Mi"), Limits: rl("cpu", "250m", "memory", "32Mi")}})
	v1 := V1Files(PodResources(g, 100))
	want := map[string]string{
		"cpu/cpu.shares": "768", "cpu/cpu.cfs_quota_us": "75000", "cpu/cpu.cfs_period_us": "100000",
		"memory/memory.limit_in_bytes": "100663296", "pids/pids.max": "100",
	}
	for k, v := range want {
		if v1[k] != v {
			t.Errorf("guaranteed pod %s = %q, want %q (all: %v)", k, v1[k], v, v1)
		}
	}
	// One container without a memory limit: no pod-level memory limit, but the CPU one stays.
	b := podWith(rl("cpu", "100m"), rl("cpu", "200m"))
	b.Spec.Containers = append(b.Spec.Containers, corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Limits: rl("cpu", "100m", "memory", "16Mi")}})
	v1 = V1Files(PodResources(b, 0))
	if _, ok := v1["memory/memory.limit_in_bytes"]; ok {
		t.Errorf("burstable pod got a memory limit: %v", v1)
	}
	if v1["cpu/cpu.cfs_quota_us"] != "30000" || v1["cpu/cpu.shares"] != "204" {
		t.Errorf("burstable pod cpu: %v", v1)
	}
	if _, ok := v1["pids/pids.max"]; ok {
		t.Errorf("pids limit 0 must leave pids.max alone: %v", v1)
	}
	be := V1Files(PodResources(podWith(nil, nil), 0))
	if be["cpu/cpu.shares"] != "2" || len(be) != 1 {
		t.Errorf("best-effort pod: %v", be)
	}
	c := V1Files(ContainerResources(&b.Spec.Containers[1]))
	if c["cpu/cpu.shares"] != "102" || c["cpu/cpu.cfs_quota_us"] != "10000" || c["memory/memory.limit_in_bytes"] != "16777216" {
		t.Errorf("container resources: %v", c)
	}
	h := ContainerResources(&corev1.Container{Resources: corev1.ResourceRequirements{Limits: rl("hugepages-2Mi", "4Mi")}})
	if len(h.HugepageLimits) != 1 || h.HugepageLimits[0].Pagesize != "2MB" || h.HugepageLimits[0].Limit != 4<<20 {
		t.Errorf("hugepages: %+v", h.HugepageLimits)
	}
}

// The v2 path writes the values runc and the kubelet write, into a cgroup2-like tree.
func TestWriteV2Tree(t *testing.T) {
	root := t.TempDir()
	tree := Tree{Parent: "podkeeper"}
	pod := podWith(rl("cpu", "250m", "memory", "32Mi"), rl("cpu", "500m", "memory", "64Mi", "hugepages-2Mi", "2Mi"))
	q := QOSClass(pod)
	p := tree.PodPath(string(pod.UID), q)
	res := PodResources(pod, 64)
	res.HugepageLimits = ContainerResources(&pod.Spec.Containers[0]).HugepageLimits
	if err := WriteV2(root, p, res); err != nil {
		t.Fatal(err)
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	dir := filepath.Join("podkeeper", "burstable", "podu-1")
	for f, want := range map[string]string{
		"cpu.weight": "10", "cpu.max": "50000 100000", "memory.max": "67108864", "pids.max": "64", "hugetlb.2MB.max": "2097152",
	} {
		if got := read(filepath.Join(dir, f)); got != want {
			t.Errorf("%s = %q, want %q", f, got, want)
		}
	}
	for _, anc := range []string{"", "podkeeper", "podkeeper/burstable"} {
		if got := read(filepath.Join(anc, "cgroup.subtree_control")); got != "+cpu +hugetlb +memory +pids" {
			t.Errorf("%s/cgroup.subtree_control = %q", anc, got)
		}
	}
	m := &Manager{Tree: tree, Root: root, Unified: true}
	if got, err := m.EnsurePod(pod, 64); err != nil || got != p {
		t.Fatalf("EnsurePod = %q, %v", got, err)
	}
	if err := m.RemovePod(string(pod.UID)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, dir)); !os.IsNotExist(err) {
		t.Fatalf("pod cgroup still there: %v", err)
	}
	// A CPU limit without quota writes "max".
	if got := V2Files(ContainerResources(&corev1.Container{}))["cpu.max"]; got != "" {
		t.Errorf("no CPU limit must not write cpu.max, got %q", got)
	}
}
