package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podkeeper/podkeeper/internal/ci"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func qosPods(uidSuffix string) map[corev1.PodQOSClass]*corev1.Pod {
	mk := func(uid string, r corev1.ResourceRequirements) *corev1.Pod {
		p := podWith(nil, r)
		p.UID = types.UID(uid + uidSuffix)
		return p
	}
	return map[corev1.PodQOSClass]*corev1.Pod{
		corev1.PodQOSGuaranteed: mk("g", corev1.ResourceRequirements{Limits: res("cpu", "500m", "memory", "64Mi")}),
		corev1.PodQOSBurstable:  mk("b", corev1.ResourceRequirements{Requests: res("cpu", "250m", "memory", "16Mi"), Limits: res("memory", "128Mi")}),
		corev1.PodQOSBestEffort: mk("e", corev1.ResourceRequirements{}),
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// The v2 path against a cgroup2-like tree built in a temp dir.
func TestManagerV2Files(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpuset cpu io memory hugetlb pids"), 0o644); err != nil {
		t.Fatal(err)
	}
	no := false
	floor := 0
	m, err := New(Config{Root: root, Version: V2, Layout: Layout{Parent: "pk"}, PodPidsLimit: 256, MemoryCapacity: 1 << 30, CanLowerOOM: &no, OOMFloor: &floor})
	if err != nil {
		t.Fatal(err)
	}
	pods := qosPods("")
	want := map[corev1.PodQOSClass]map[string]string{
		corev1.PodQOSGuaranteed: {"cpu.weight": "20", "cpu.max": "50000 100000", "memory.max": "67108864", "pids.max": "256"},
		corev1.PodQOSBurstable:  {"cpu.weight": "10", "memory.max": "134217728", "pids.max": "256"},
		corev1.PodQOSBestEffort: {"cpu.weight": "1", "pids.max": "256"},
	}
	absent := map[corev1.PodQOSClass][]string{
		corev1.PodQOSBurstable:  {"cpu.max"},
		corev1.PodQOSBestEffort: {"cpu.max", "memory.max"},
	}
	for qos, pod := range pods {
		if err := m.EnsurePod(pod); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, m.Layout().PodDir(qos, pod.UID))
		for f, v := range want[qos] {
			if got := readFile(t, filepath.Join(dir, f)); got != v {
				t.Errorf("%s %s = %q, want %q", qos, f, got, v)
			}
		}
		for _, f := range absent[qos] {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				t.Errorf("%s: %s written for a pod without that limit", qos, f)
			}
		}
	}
	if got := readFile(t, filepath.Join(root, "pk", "besteffort", "cpu.weight")); got != "1" {
		t.Errorf("besteffort cpu.weight = %s, want 1", got)
	}
	// The burstable QoS cgroup weighs the sum of its pods' requests: 250m, then 250m+750m.
	if got := readFile(t, filepath.Join(root, "pk", "burstable", "cpu.weight")); got != fmt.Sprint(SharesToWeight(256)) {
		t.Errorf("burstable cpu.weight = %s, want %d", got, SharesToWeight(256))
	}
	more := podWith(nil, corev1.ResourceRequirements{Requests: res("cpu", "750m")})
	more.UID = "b2"
	if err := m.EnsurePod(more); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(root, "pk", "burstable", "cpu.weight")); got != fmt.Sprint(SharesToWeight(1024)) {
		t.Errorf("burstable cpu.weight with two pods = %s, want %d", got, SharesToWeight(1024))
	}
	if err := m.RemovePod(more.UID); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(root, "cgroup.subtree_control")); got != "+cpu +memory +pids +hugetlb" {
		t.Errorf("root subtree_control = %q", got)
	}
	// Containers: runc gets the limits in the spec; check what the spec says in v2 terms.
	g := pods[corev1.PodQOSGuaranteed]
	p, r, adj := m.ContainerSpec(g, &g.Spec.Containers[0], "ctr")
	if p != "/pk/podg/ctr" || *r.Memory.Limit != 64<<20 || *r.CPU.Quota != 50000 || *r.CPU.Shares != 512 {
		t.Errorf("guaranteed container spec: %s %+v", p, r)
	}
	if adj != 0 {
		t.Errorf("guaranteed oom_score_adj without CAP_SYS_RESOURCE = %d, want clamped to 0", adj)
	}
	for qos, pod := range pods {
		if err := m.RemovePod(pod.UID); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(root, m.Layout().PodDir(qos, pod.UID))); !os.IsNotExist(err) {
			t.Errorf("%s pod cgroup still there: %v", qos, err)
		}
	}
}

// The v1 path on this machine's real cgroups, under a parent unique to the test.
func TestManagerV1Real(t *testing.T) {
	if DetectVersion() != V1 {
		ci.Missing(t, "this machine's cgroups are v2; the v1 test needs v1 (see TestManagerV2Files)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("needs root to create cgroups")
	}
	parent := fmt.Sprintf("pkt-%d", time.Now().UnixNano())
	m, err := New(Config{Layout: Layout{Parent: parent}, PodPidsLimit: 100, MemoryCapacity: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.RemoveAll(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	pods := qosPods("-" + parent)
	want := map[corev1.PodQOSClass]map[string]string{
		corev1.PodQOSGuaranteed: {"cpu/cpu.shares": "512", "cpu/cpu.cfs_quota_us": "50000", "cpu/cpu.cfs_period_us": "100000", "memory/memory.limit_in_bytes": "67108864", "pids/pids.max": "100"},
		corev1.PodQOSBurstable:  {"cpu/cpu.shares": "256", "cpu/cpu.cfs_quota_us": "-1", "memory/memory.limit_in_bytes": "134217728", "pids/pids.max": "100"},
		corev1.PodQOSBestEffort: {"cpu/cpu.shares": "2", "cpu/cpu.cfs_quota_us": "-1", "pids/pids.max": "100"},
	}
	for qos, pod := range pods {
		if err := m.EnsurePod(pod); err != nil {
			t.Fatal(err)
		}
		dir := m.Layout().PodDir(qos, pod.UID)
		for f, v := range want[qos] {
			ctrl, file, _ := strings.Cut(f, "/")
			if got := readFile(t, filepath.Join(m.Dir(ctrl, dir), file)); got != v {
				t.Errorf("%s %s = %q, want %q", qos, f, got, v)
			}
		}
		if got := readFile(t, filepath.Join(m.Dir("cpuset", dir), "cpuset.cpus")); got == "" {
			t.Errorf("%s: cpuset.cpus empty", qos)
		}
	}
	if got := readFile(t, filepath.Join(m.Dir("cpu", "/"+parent+"/besteffort"), "cpu.shares")); got != "2" {
		t.Errorf("besteffort cpu.shares = %s, want 2", got)
	}
	burst := func() string { return readFile(t, filepath.Join(m.Dir("cpu", "/"+parent+"/burstable"), "cpu.shares")) }
	if got := burst(); got != "256" {
		t.Errorf("burstable cpu.shares = %s, want 256 (its one pod's 250m)", got)
	}
	// After a restart the agent tells the manager which pods run: the sum follows them.
	two := podWith(nil, corev1.ResourceRequirements{Requests: res("cpu", "1500m")})
	two.UID = types.UID("b2-" + parent)
	if err := m.SyncQOS([]*corev1.Pod{pods[corev1.PodQOSBurstable], two, pods[corev1.PodQOSGuaranteed]}); err != nil {
		t.Fatal(err)
	}
	if got := burst(); got != "1792" {
		t.Errorf("burstable cpu.shares after SyncQOS = %s, want 1792 (250m + 1500m)", got)
	}
	if err := m.SyncQOS([]*corev1.Pod{pods[corev1.PodQOSBurstable]}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(m.Layout().PodDir(corev1.PodQOSGuaranteed, pods[corev1.PodQOSGuaranteed].UID), "/"+parent+"/podg-"+parent) {
		t.Errorf("guaranteed pod not directly under the parent")
	}
	for qos, pod := range pods {
		if err := m.RemovePod(pod.UID); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(m.Dir("memory", m.Layout().PodDir(qos, pod.UID))); !os.IsNotExist(err) {
			t.Errorf("%s pod cgroup left behind: %v", qos, err)
		}
	}
	if got := burst(); got != "2" {
		t.Errorf("burstable cpu.shares with no pod = %s, want 2", got)
	}
}
