package runtime_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podkeeper/podkeeper/cgroup"
	"github.com/podkeeper/podkeeper/internal/testenv"
	"github.com/podkeeper/podkeeper/podrunner"
	. "github.com/podkeeper/podkeeper/podrunner/runtime"
)

// newCgroupRuntime is a runtime that puts pods under a cgroup parent of the test's own.
func newCgroupRuntime(t *testing.T, pidsLimit int64) (*Runtime, context.Context, *cgroup.Manager) {
	t.Helper()
	pause, err := testenv.PauseBinary()
	if err != nil {
		t.Fatal(err)
	}
	m := cgroup.NewManager(cgroup.Tree{Parent: fmt.Sprintf("pktest%d", time.Now().UnixNano()%1e9)})
	if m.Unified {
		t.Log("cgroup v2 host: the v1 file checks below read the unified tree instead")
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	rt, err := Connect(ctx, Config{
		Address: env.Address, Namespace: testNS, RootDir: t.TempDir(), PauseBinary: pause,
		Resources: Resources{Cgroups: m, PodPidsLimit: pidsLimit},
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rt.Close()
		for _, q := range []corev1.PodQOSClass{corev1.PodQOSBurstable, corev1.PodQOSBestEffort, corev1.PodQOSGuaranteed} {
			for _, ctl := range []string{"cpu", "cpuacct", "memory", "pids", "hugetlb", "cpuset"} {
				_ = os.Remove(filepath.Join("/sys/fs/cgroup", ctl, m.Tree.QOSPath(q)))
			}
		}
	})
	return rt, ctx, m
}

func limits(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func readCg(t *testing.T, ctl, p, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", ctl, p, file))
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	return strings.TrimSpace(string(b))
}

// Limits land in the pod's and the containers' cgroup files, at the kubelet's paths, per QoS class.
func TestCgroupLimitsPerQOSClass(t *testing.T) {
	if cgroup.NewManager(cgroup.Tree{}).Unified {
		t.Skip("this test reads cgroup v1 files; the v2 values are unit-tested in package cgroup")
	}
	rt, ctx, m := newCgroupRuntime(t, 200)
	for _, tc := range []struct {
		name      string
		req, lim  corev1.ResourceList
		qos       corev1.PodQOSClass
		podFiles  map[string]string // "ctl/file" -> value in the pod cgroup
		ctrFiles  map[string]string // in the container's cgroup
		oomScores []int             // acceptable oom_score_adj of the app (clamped or not)
	}{
		{"guaranteed", limits("cpu", "500m", "memory", "64Mi"), limits("cpu", "500m", "memory", "64Mi"), corev1.PodQOSGuaranteed,
			map[string]string{"cpu/cpu.shares": "512", "cpu/cpu.cfs_quota_us": "50000", "memory/memory.limit_in_bytes": "67108864", "pids/pids.max": "200"},
			map[string]string{"cpu/cpu.shares": "512", "cpu/cpu.cfs_quota_us": "50000", "memory/memory.limit_in_bytes": "67108864"},
			[]int{-997}},
		{"burstable", limits("cpu", "100m", "memory", "32Mi"), limits("memory", "128Mi"), corev1.PodQOSBurstable,
			map[string]string{"cpu/cpu.shares": "102", "cpu/cpu.cfs_quota_us": "-1", "memory/memory.limit_in_bytes": "134217728", "pids/pids.max": "200"},
			map[string]string{"cpu/cpu.shares": "102", "cpu/cpu.cfs_quota_us": "-1", "memory/memory.limit_in_bytes": "134217728"},
			nil},
		{"besteffort", nil, nil, corev1.PodQOSBestEffort,
			map[string]string{"cpu/cpu.shares": "2", "pids/pids.max": "200"},
			map[string]string{"cpu/cpu.shares": "2"},
			[]int{1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := sh("app", "exec sleep 1000")
			c.Resources = corev1.ResourceRequirements{Requests: tc.req, Limits: tc.lim}
			if tc.req == nil && tc.lim != nil {
				c.Resources.Requests = tc.lim
			}
			pod := testPod(t, c)
			if got := cgroup.QOSClass(pod); got != tc.qos {
				t.Fatalf("QoS %s, want %s", got, tc.qos)
			}
			_, recs := startPod(t, rt, ctx, pod, t.TempDir())
			podPath := m.Tree.PodPath(string(pod.UID), tc.qos)
			for f, want := range tc.podFiles {
				ctl, file, _ := strings.Cut(f, "/")
				if got := readCg(t, ctl, podPath, file); got != want {
					t.Errorf("pod %s = %s, want %s", f, got, want)
				}
			}
			ctrPath := filepath.Join(podPath, recs[0].ID)
			for f, want := range tc.ctrFiles {
				ctl, file, _ := strings.Cut(f, "/")
				if got := readCg(t, ctl, ctrPath, file); got != want {
					t.Errorf("container %s = %s, want %s", f, got, want)
				}
			}
			procs := readCg(t, "memory", ctrPath, "cgroup.procs")
			if !strings.Contains(procs, fmt.Sprint(recs[0].PID)) {
				t.Errorf("container pid %d not in %s (procs %q)", recs[0].PID, ctrPath, procs)
			}
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", recs[0].PID))
			if err != nil {
				t.Fatal(err)
			}
			score := strings.TrimSpace(string(b))
			want := cgroup.OOMScoreAdj(pod, &pod.Spec.Containers[0], memTotal(t))
			if floor, restricted := cgroup.OOMScoreAdjFloor(); restricted {
				want = cgroup.ClampOOMScoreAdj(want, floor)
			}
			if score != fmt.Sprint(want) {
				t.Errorf("oom_score_adj %s, want %d", score, want)
			}
			// Removing the pod removes its cgroup.
			for _, r := range append(recs, mustList(t, rt, ctx, pod)...) {
				_ = rt.StopContainer(ctx, r.ID, time.Second)
				_ = rt.RemoveContainer(ctx, r.ID)
			}
			if err := rt.RemovePodFiles(string(pod.UID)); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/memory", podPath)); !os.IsNotExist(err) {
				t.Errorf("pod cgroup %s still there: %v", podPath, err)
			}
		})
	}
}

func mustList(t *testing.T, rt *Runtime, ctx context.Context, pod *corev1.Pod) []podrunner.ContainerRecord {
	recs, err := rt.ListContainers(ctx, string(pod.UID))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func memTotal(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	var kb int64
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "MemTotal:") {
			fmt.Sscanf(strings.TrimPrefix(line, "MemTotal:"), "%d", &kb)
		}
	}
	return kb * 1024
}

// A container that allocates past its memory limit ends OOMKilled with exit code 137.
func TestMemoryLimitEndsOOMKilled(t *testing.T) {
	rt, ctx, _ := newCgroupRuntime(t, 0)
	// The shell (the container's main process) reads 64 MiB into a variable.
	c := sh("hog", "a=$(head -c 67108864 /dev/zero | tr '\\0' x); echo survived ${#a}; sleep 1000")
	c.Resources = corev1.ResourceRequirements{Requests: limits("memory", "32Mi"), Limits: limits("memory", "32Mi")}
	pod := testPod(t, c)
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	_, recs := startPod(t, rt, ctx, pod, t.TempDir())
	waitExited(t, rt, ctx, string(pod.UID), recs[0].ID)
	rec, err := rt.Finalize(ctx, recs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Reason != "OOMKilled" || rec.ExitCode != 137 {
		t.Fatalf("hog ended %s with %d, want OOMKilled 137", rec.Reason, rec.ExitCode)
	}
}
