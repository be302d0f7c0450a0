package runtime

import (
	"context"
	"os"
	"strconv"
	"strings"

	"github.com/containerd/containerd/api/types/runc/options"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/cgroup"
)

// Resources is how podkeeper places pods in cgroups and limits them. The zero value (no
// Cgroups manager) leaves containers where runc puts them by default, without limits.
type Resources struct {
	Cgroups      *cgroup.Manager
	PodPidsLimit int64 // pids.max of each pod's cgroup; 0: no limit
}

// oomPolicy is the oom_score_adj floor this process may set (see cgroup.OOMScoreAdjFloor).
type oomPolicy struct {
	floor      int
	restricted bool
	memory     int64 // node memory capacity, for Burstable scores
}

func newOOMPolicy() oomPolicy {
	floor, restricted := cgroup.OOMScoreAdjFloor()
	return oomPolicy{floor: floor, restricted: restricted, memory: memoryCapacity()}
}

// memoryCapacity is MemTotal of /proc/meminfo in bytes (0 when unknown).
func memoryCapacity() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// oomScore clamps want to what this process may set, warning once when it had to.
func (r *Runtime) oomScore(want int) int {
	got := cgroup.ClampOOMScoreAdj(want, r.oom.floor)
	if got != want {
		r.oomWarn.Do(func() {
			r.log.Warn("no CAP_SYS_RESOURCE: oom_score_adj values below the agent's own are raised to it (as containerd's restrict_oom_score_adj)",
				"floor", r.oom.floor, "asked", want)
		})
	}
	return got
}

func withOOMScoreAdj(adj int) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		s.Process.OOMScoreAdj = &adj
		return nil
	}
}

func withResources(res *specs.LinuxResources) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Resources == nil {
			s.Linux.Resources = &specs.LinuxResources{}
		}
		s.Linux.Resources.CPU = res.CPU
		s.Linux.Resources.Memory = res.Memory
		s.Linux.Resources.Pids = res.Pids
		s.Linux.Resources.HugepageLimits = res.HugepageLimits
		return nil
	}
}

// sandboxCgroupOpts creates the pod's cgroup (with pod-level limits) and places the sandbox in it.
func (r *Runtime) sandboxCgroupOpts(pod *corev1.Pod, id string) ([]oci.SpecOpts, error) {
	opts := []oci.SpecOpts{withOOMScoreAdj(r.oomScore(cgroup.SandboxOOMScoreAdj))}
	m := r.cfg.Resources.Cgroups
	if m == nil {
		return opts, nil
	}
	if _, err := m.EnsurePod(pod, r.cfg.Resources.PodPidsLimit); err != nil {
		return nil, err
	}
	cpath := m.Tree.ContainerCgroupsPath(string(pod.UID), cgroup.QOSClass(pod), id)
	return append(opts, oci.WithCgroup(cpath)), nil
}

// containerCgroupOpts places a container in its pod's cgroup with its own limits and score.
func (r *Runtime) containerCgroupOpts(pod *corev1.Pod, ctr *corev1.Container, id string) []oci.SpecOpts {
	opts := []oci.SpecOpts{withOOMScoreAdj(r.oomScore(cgroup.OOMScoreAdj(pod, ctr, r.oom.memory)))}
	m := r.cfg.Resources.Cgroups
	if m == nil {
		return opts
	}
	cpath := m.Tree.ContainerCgroupsPath(string(pod.UID), cgroup.QOSClass(pod), id)
	return append(opts, oci.WithCgroup(cpath), withResources(cgroup.ContainerResources(ctr)))
}

// runcOptions are the runc shim's options: systemd cgroups when the systemd driver is used.
func (r *Runtime) runcOptions() containerd.NewContainerOpts {
	if m := r.cfg.Resources.Cgroups; m != nil && m.Tree.Driver == cgroup.Systemd {
		return containerd.WithRuntime("io.containerd.runc.v2", &options.Options{SystemdCgroup: true})
	}
	return containerd.WithRuntime("io.containerd.runc.v2", nil)
}

// oomKilled reports whether the kernel's OOM killer struck container id (its cgroup's counter,
// read before the task is deleted, or a /tasks/oom event seen for it).
func (r *Runtime) oomKilled(id string, spec *oci.Spec) bool {
	r.mu.Lock()
	seen := r.oomed[id]
	r.mu.Unlock()
	if seen {
		return true
	}
	m := r.cfg.Resources.Cgroups
	if m == nil || spec == nil || spec.Linux == nil || spec.Linux.CgroupsPath == "" {
		return false
	}
	return m.OOMKills(spec.Linux.CgroupsPath) > 0
}
