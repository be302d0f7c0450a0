package runtime

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/containerd/api/types/runc/options"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkeeper/podkeeper/cgroup"
)

// Cgroups: with Config.Cgroups set, every pod gets its cgroup from the cgroup.Manager before its
// sandbox starts (pod-level limits), every container (the sandbox too) is created inside it with
// its own limits and oom_score_adj in the OCI spec (runc creates the container's cgroup), and the
// pod's cgroup is removed with the pod's files. Without it containerd's defaults apply.

// sandboxCgroupOpts creates the pod's cgroup and places the sandbox in it.
func (r *Runtime) sandboxCgroupOpts(pod *corev1.Pod, id string) ([]oci.SpecOpts, error) {
	m := r.cfg.Cgroups
	if m == nil {
		return nil, nil
	}
	r.cgMu.Lock()
	delete(r.cgRetry, string(pod.UID)) // the pod is back: its cgroup is wanted again
	err := m.EnsurePod(pod)
	r.cgMu.Unlock()
	if err != nil {
		return nil, err
	}
	p, _, adj := m.ContainerSpec(pod, nil, id)
	return []oci.SpecOpts{oci.WithCgroup(p), withOOMScoreAdj(adj)}, nil
}

// containerCgroupOpts places container ctr (ID id) in its pod's cgroup with its limits.
func (r *Runtime) containerCgroupOpts(pod *corev1.Pod, ctr *corev1.Container, id string) []oci.SpecOpts {
	m := r.cfg.Cgroups
	if m == nil {
		return nil
	}
	p, res, adj := m.ContainerSpec(pod, ctr, id)
	return []oci.SpecOpts{
		oci.WithCgroup(p),
		withOOMScoreAdj(adj),
		func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
			if s.Linux == nil || res == nil {
				return nil
			}
			if s.Linux.Resources == nil {
				s.Linux.Resources = res
				return nil
			}
			s.Linux.Resources.CPU = res.CPU
			s.Linux.Resources.Memory = res.Memory
			s.Linux.Resources.Pids = res.Pids
			s.Linux.Resources.HugepageLimits = res.HugepageLimits
			return nil
		},
	}
}

// runcOptions are the runc shim's options for every container: with the systemd cgroup driver
// runc must ask systemd for the containers' scopes (SystemdCgroup), as the CRI plugin tells it
// when containerd's config says so. Nil (the shim's defaults: cgroupfs) otherwise.
func (r *Runtime) runcOptions() any {
	if r.cfg.Cgroups == nil || r.cfg.Cgroups.Layout().Driver != cgroup.DriverSystemd {
		return nil
	}
	return &options.Options{SystemdCgroup: true}
}

func withOOMScoreAdj(v int) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process != nil {
			s.Process.OOMScoreAdj = &v
		}
		return nil
	}
}

// removePodCgroup removes the pod's cgroup (its containers are gone). It never blocks the pod's
// end: a cgroup still busy (a process of the pod still exiting, e.g. a task that containerd's
// clean-up of an interrupted create ends only now) is retried in the background every
// cgroupRetryEvery for cgroupRetryFor, unless the pod comes back meanwhile.
func (r *Runtime) removePodCgroup(uid string) {
	if r.cfg.Cgroups == nil {
		return
	}
	r.mu.Lock()
	delete(r.podOOM, uid)
	r.mu.Unlock()
	r.cgMu.Lock()
	defer r.cgMu.Unlock()
	err := r.cfg.Cgroups.RemovePod(types.UID(uid))
	if err == nil {
		return
	}
	if r.endPodLeftovers(uid) > 0 {
		if err = r.cfg.Cgroups.RemovePod(types.UID(uid)); err == nil {
			return
		}
	}
	r.log.Warn("could not remove pod cgroup; retrying in the background", "pod", uid, "err", err)
	if r.cgRetry == nil {
		r.cgRetry = map[string]time.Time{}
	}
	if len(r.cgRetry) == 0 {
		go r.retryPodCgroups()
	}
	if _, ok := r.cgRetry[uid]; !ok {
		r.cgRetry[uid] = time.Now()
	}
}

// Retries of a pod cgroup whose removal failed.
var (
	cgroupRetryEvery = time.Second
	cgroupRetryFor   = 2 * time.Minute
)

// retryPodCgroups retries the removal of the pod cgroups in r.cgRetry until none is left.
func (r *Runtime) retryPodCgroups() {
	for {
		time.Sleep(cgroupRetryEvery)
		r.cgMu.Lock()
		for uid, since := range r.cgRetry {
			err := r.cfg.Cgroups.RemovePod(types.UID(uid))
			if err != nil && r.endPodLeftovers(uid) > 0 {
				err = r.cfg.Cgroups.RemovePod(types.UID(uid))
			}
			switch {
			case err == nil:
				r.log.Info("removed pod cgroup", "pod", uid, "after", time.Since(since).Round(time.Millisecond))
			case time.Since(since) > cgroupRetryFor:
				r.log.Warn("gave up removing pod cgroup", "pod", uid, "err", err)
			default:
				continue
			}
			delete(r.cgRetry, uid)
		}
		left := len(r.cgRetry)
		r.cgMu.Unlock()
		if left == 0 {
			return
		}
	}
}

// noteOOM remembers that containerd reported an OOM kill in container id's cgroup.
func (r *Runtime) noteOOM(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.oomed == nil {
		r.oomed = map[string]bool{}
	}
	r.oomed[id] = true
}

// wasOOMKilled says whether container id of pod uid ended by the kernel's OOM killer: containerd
// published /tasks/oom for it, or its memory cgroup counts an OOM kill (read before the task is
// deleted, since runc removes the cgroup then). Only meaningful for a non-zero exit.
func (r *Runtime) wasOOMKilled(uid, id string, code int32) bool {
	r.mu.Lock()
	seen := r.oomed[id]
	delete(r.oomed, id)
	r.mu.Unlock()
	if code == 0 {
		return false
	}
	if seen {
		return true
	}
	if r.cfg.Cgroups == nil || code != 137 {
		return false
	}
	if cgroupOOMKills(r.cfg.Cgroups, uid, id, false) > 0 {
		return true
	}
	// The pod cgroup's limit (the sum of the containers', the sandbox charged too) is often hit
	// first: a new kill counted there since the last one attributed is this container's.
	n := cgroupOOMKills(r.cfg.Cgroups, uid, "", true)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.podOOM == nil {
		r.podOOM = map[string]int{}
	}
	if n > r.podOOM[uid] {
		r.podOOM[uid] = n
		return true
	}
	return false
}

// cgroupOOMKills reads the OOM kill count of container id's memory cgroup, or with pod of the
// pod's (v1 memory.oom_control "oom_kill N", v2 memory.events "oom_kill N"), whatever the pod's
// QoS class.
func cgroupOOMKills(m *cgroup.Manager, uid, id string, pod bool) int {
	file := "memory.oom_control"
	if m.Version() == cgroup.V2 {
		file = "memory.events"
	}
	for _, qos := range []corev1.PodQOSClass{corev1.PodQOSGuaranteed, corev1.PodQOSBurstable, corev1.PodQOSBestEffort} {
		dir := m.Dir("memory", m.Layout().ContainerDir(qos, types.UID(uid), id))
		if pod {
			dir = m.Dir("memory", m.Layout().PodDir(qos, types.UID(uid)))
		}
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "oom_kill "); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				return n
			}
		}
	}
	return 0
}
