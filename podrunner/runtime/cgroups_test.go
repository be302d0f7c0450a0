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
	"github.com/podkeeper/podkeeper/internal/ci"
	"github.com/podkeeper/podkeeper/internal/testenv"
	"github.com/podkeeper/podkeeper/podrunner"
	. "github.com/podkeeper/podkeeper/podrunner/runtime"
)

// newCgroupRuntime is newRuntime with a pod cgroup tree under a parent unique to the test.
func newCgroupRuntime(t *testing.T) (*Runtime, *cgroup.Manager, context.Context) {
	t.Helper()
	if cgroup.DetectVersion() != cgroup.V1 {
		ci.Missing(t, "the real-cgroup tests need a cgroup v1 hierarchy")
	}
	pause, err := testenv.PauseBinary()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cg, err := cgroup.New(cgroup.Config{Layout: cgroup.Layout{Parent: fmt.Sprintf("pkt-rt-%d", time.Now().UnixNano())}, PodPidsLimit: 64, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	rt, err := Connect(ctx, Config{Address: env.Address, Namespace: testNS, RootDir: t.TempDir(), PauseBinary: pause, Logger: log, Cgroups: cg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	// Registered before startPod's cleanup, so it runs after the containers are removed.
	t.Cleanup(func() {
		if err := cg.RemoveAll(); err != nil {
			t.Errorf("remove test cgroups: %v", err)
		}
	})
	return rt, cg, ctx
}

func rl(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func cgFile(t *testing.T, cg *cgroup.Manager, ctrl, dir, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cg.Dir(ctrl, dir), file))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestContainersLandInTheirPodCgroupWithLimits(t *testing.T) {
	rt, cg, ctx := newCgroupRuntime(t)
	memCap := cg.MemoryCapacity()
	for _, tc := range []struct {
		qos                  corev1.PodQOSClass
		r                    corev1.ResourceRequirements
		shares, quota, limit string
		oom                  int
	}{
		{corev1.PodQOSGuaranteed, corev1.ResourceRequirements{Limits: rl("cpu", "500m", "memory", "64Mi")}, "512", "50000", "67108864", 0 /* -997 clamped: no CAP_SYS_RESOURCE */},
		{corev1.PodQOSBurstable, corev1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "32Mi"), Limits: rl("memory", "96Mi")}, "102", "-1", "100663296", int(1000 - 1000*(32<<20)/memCap)},
		{corev1.PodQOSBestEffort, corev1.ResourceRequirements{}, "2", "-1", "", 1000},
	} {
		t.Run(string(tc.qos), func(t *testing.T) {
			c := sh("app", "sleep 60")
			c.Resources = tc.r
			pod := testPod(t, c)
			if got := cgroup.QOSClass(pod); got != tc.qos {
				t.Fatalf("QoS %s, want %s", got, tc.qos)
			}
			sb, ctrs := startPod(t, rt, ctx, pod, t.TempDir())
			podDir := cg.Layout().PodDir(tc.qos, pod.UID)
			ctrDir := cg.Layout().ContainerDir(tc.qos, pod.UID, ctrs[0].ID)
			for _, rec := range []podrunner.ContainerRecord{sb, ctrs[0]} {
				b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", rec.PID))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(b), "memory:"+podDir+"/") {
					t.Fatalf("%s is not in its pod cgroup %s:\n%s", rec.ID, podDir, b)
				}
			}
			if got := cgFile(t, cg, "cpu", ctrDir, "cpu.shares"); got != tc.shares {
				t.Errorf("cpu.shares = %s, want %s", got, tc.shares)
			}
			if got := cgFile(t, cg, "cpu", ctrDir, "cpu.cfs_quota_us"); got != tc.quota {
				t.Errorf("cpu.cfs_quota_us = %s, want %s", got, tc.quota)
			}
			if tc.limit != "" {
				if got := cgFile(t, cg, "memory", ctrDir, "memory.limit_in_bytes"); got != tc.limit {
					t.Errorf("container memory.limit_in_bytes = %s, want %s", got, tc.limit)
				}
				if got := cgFile(t, cg, "memory", podDir, "memory.limit_in_bytes"); got != tc.limit {
					t.Errorf("pod memory.limit_in_bytes = %s, want %s", got, tc.limit)
				}
			}
			if got := cgFile(t, cg, "pids", podDir, "pids.max"); got != "64" {
				t.Errorf("pod pids.max = %s, want 64", got)
			}
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", ctrs[0].PID))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(b)); got != fmt.Sprint(tc.oom) {
				t.Errorf("oom_score_adj = %s, want %d", got, tc.oom)
			}
			// Usage from the same cgroups: two samples give a CPU rate.
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", ContainerID: "containerd://" + ctrs[0].ID,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			cg.PodStats(pod)
			time.Sleep(100 * time.Millisecond)
			ps := cg.PodStats(pod)
			if ps.Memory == nil || *ps.Memory.UsageBytes == 0 || ps.CPU == nil || ps.CPU.UsageNanoCores == nil {
				t.Errorf("pod stats without memory or CPU rate: %+v", ps)
			}
			if len(ps.Containers) != 1 || ps.Containers[0].Memory == nil || *ps.Containers[0].Memory.WorkingSetBytes == 0 || *ps.Containers[0].Memory.WorkingSetBytes > *ps.Memory.UsageBytes {
				t.Errorf("container stats: %+v", ps.Containers)
			}
			// The pod's end removes its cgroup.
			for _, rec := range append(ctrs, sb) {
				if err := rt.StopContainer(ctx, rec.ID, time.Second); err != nil {
					t.Fatal(err)
				}
				if err := rt.RemoveContainer(ctx, rec.ID); err != nil {
					t.Fatal(err)
				}
			}
			if err := rt.RemovePodFiles(string(pod.UID)); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(cg.Dir("memory", podDir)); !os.IsNotExist(err) {
				t.Errorf("pod cgroup %s still there after the pod was removed (%v)", podDir, err)
			}
		})
	}
}

// Pod-level resources (spec.resources): the pod cgroup takes the pod's limits and its CPU
// request, a container without limits of its own gets the pod's limits, one with its own keeps
// them; a memory hog without a limit of its own is OOM-killed at the pod's.
func TestPodLevelResourcesInCgroups(t *testing.T) {
	rt, cg, ctx := newCgroupRuntime(t)
	bare, own := sh("bare", "sleep 60"), sh("own", "sleep 60")
	own.Resources = corev1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "32Mi"), Limits: rl("cpu", "100m", "memory", "32Mi")}
	pod := testPod(t, bare, own)
	pod.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "500m", "memory", "64Mi"), Limits: rl("cpu", "500m", "memory", "64Mi")}
	if got := cgroup.QOSClass(pod); got != corev1.PodQOSGuaranteed {
		t.Fatalf("QoS %s, want Guaranteed (pod-level requests = limits)", got)
	}
	_, ctrs := startPod(t, rt, ctx, pod, t.TempDir())
	l := cg.Layout()
	podDir := l.PodDir(corev1.PodQOSGuaranteed, pod.UID)
	for _, f := range []struct{ ctrl, dir, file, want string }{
		{"memory", podDir, "memory.limit_in_bytes", "67108864"},
		{"cpu", podDir, "cpu.cfs_quota_us", "50000"},
		{"cpu", podDir, "cpu.shares", "512"},
		{"memory", l.ContainerDir(corev1.PodQOSGuaranteed, pod.UID, ctrs[0].ID), "memory.limit_in_bytes", "67108864"},
		{"cpu", l.ContainerDir(corev1.PodQOSGuaranteed, pod.UID, ctrs[0].ID), "cpu.cfs_quota_us", "50000"},
		{"cpu", l.ContainerDir(corev1.PodQOSGuaranteed, pod.UID, ctrs[0].ID), "cpu.shares", "512"}, // no request: the pod's CPU limit's, as the kubelet
		{"memory", l.ContainerDir(corev1.PodQOSGuaranteed, pod.UID, ctrs[1].ID), "memory.limit_in_bytes", "33554432"},
		{"cpu", l.ContainerDir(corev1.PodQOSGuaranteed, pod.UID, ctrs[1].ID), "cpu.cfs_quota_us", "10000"},
	} {
		if got := cgFile(t, cg, f.ctrl, f.dir, f.file); got != f.want {
			t.Errorf("%s/%s = %s, want %s", f.dir, f.file, got, f.want)
		}
	}

	hog := sh("hog", "head -c 128m /dev/zero | tail")
	hogPod := testPod(t, hog)
	hogPod.Name += "-hog"
	hogPod.UID += "-hog"
	hogPod.Spec.Resources = &corev1.ResourceRequirements{Limits: rl("memory", "32Mi")}
	_, hctrs := startPod(t, rt, ctx, hogPod, t.TempDir())
	waitExited(t, rt, ctx, string(hogPod.UID), hctrs[0].ID)
	if rec, err := rt.RecordExit(ctx, hctrs[0].ID); err != nil || rec.Reason != "OOMKilled" || rec.ExitCode != 137 {
		t.Errorf("memory hog under a 32Mi pod-level limit ended %s (exit %d, %v), want OOMKilled (137)", rec.Reason, rec.ExitCode, err)
	}
}

func TestMemoryHogEndsOOMKilled(t *testing.T) {
	rt, _, ctx := newCgroupRuntime(t)
	c := sh("hog", "head -c 128m /dev/zero | tail")
	c.Resources.Limits = rl("memory", "32Mi")
	pod := testPod(t, c)
	_, ctrs := startPod(t, rt, ctx, pod, t.TempDir())
	waitExited(t, rt, ctx, string(pod.UID), ctrs[0].ID)
	// As the worker does: the exit is recorded while the task stays, the task released later.
	// Every view in between says OOMKilled, never the task status's plain "Error".
	check := func(when string, rec podrunner.ContainerRecord) {
		t.Helper()
		if rec.Reason != "OOMKilled" || rec.ExitCode != 137 {
			t.Fatalf("%s: memory hog ended %s (exit %d), want OOMKilled (exit 137)", when, rec.Reason, rec.ExitCode)
		}
	}
	rec, err := rt.RecordExit(ctx, ctrs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	check("RecordExit", rec)
	check("listed with its task still there", waitExited(t, rt, ctx, string(pod.UID), ctrs[0].ID))
	if rec, err = rt.Finalize(ctx, ctrs[0].ID); err != nil {
		t.Fatal(err)
	}
	check("Finalize", rec)
	check("listed after the task's release", waitExited(t, rt, ctx, string(pod.UID), ctrs[0].ID))
}
