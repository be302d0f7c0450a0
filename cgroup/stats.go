package cgroup

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The summary API types: the kubelet's /stats/summary shape (k8s.io/kubelet/pkg/apis/stats/v1alpha1)
// for the fields podkeeper fills, with the same JSON names.

// Summary is GET /stats/summary.
type Summary struct {
	Node NodeStats  `json:"node"`
	Pods []PodStats `json:"pods"`
}

// NodeStats is the machine's usage.
type NodeStats struct {
	NodeName  string       `json:"nodeName"`
	StartTime metav1.Time  `json:"startTime"`
	CPU       *CPUStats    `json:"cpu,omitempty"`
	Memory    *MemoryStats `json:"memory,omitempty"`
}

// PodReference names a pod.
type PodReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
}

// PodStats is one pod's usage (its cgroup: every container and the sandbox).
type PodStats struct {
	PodRef     PodReference     `json:"podRef"`
	StartTime  metav1.Time      `json:"startTime"`
	Containers []ContainerStats `json:"containers"`
	CPU        *CPUStats        `json:"cpu,omitempty"`
	Memory     *MemoryStats     `json:"memory,omitempty"`
}

// ContainerStats is one running container's usage.
type ContainerStats struct {
	Name      string       `json:"name"`
	StartTime metav1.Time  `json:"startTime"`
	CPU       *CPUStats    `json:"cpu,omitempty"`
	Memory    *MemoryStats `json:"memory,omitempty"`
}

// CPUStats: usageNanoCores is the rate since the previous sample of the same cgroup (absent on
// the first one); usageCoreNanoSeconds the cumulative CPU time.
type CPUStats struct {
	Time                 metav1.Time `json:"time"`
	UsageNanoCores       *uint64     `json:"usageNanoCores,omitempty"`
	UsageCoreNanoSeconds *uint64     `json:"usageCoreNanoSeconds,omitempty"`
}

// MemoryStats: workingSetBytes = usage - inactive file cache, what eviction and `top` use.
type MemoryStats struct {
	Time            metav1.Time `json:"time"`
	AvailableBytes  *uint64     `json:"availableBytes,omitempty"`
	UsageBytes      *uint64     `json:"usageBytes,omitempty"`
	WorkingSetBytes *uint64     `json:"workingSetBytes,omitempty"`
	RSSBytes        *uint64     `json:"rssBytes,omitempty"`
}

// Usage is one cgroup's counters read at Time.
type Usage struct {
	Time       time.Time
	CPUNanos   uint64 // cumulative CPU time
	Memory     uint64 // usage including page cache
	WorkingSet uint64
	RSS        uint64
}

// ReadUsage reads the counters of cgroup path dir (below the hierarchy root).
func (m *Manager) ReadUsage(dir string) (Usage, error) {
	u := Usage{Time: time.Now()}
	if m.cfg.Version == V2 {
		base := m.Dir("", dir)
		stat, err := readKV(filepath.Join(base, "cpu.stat"))
		if err != nil {
			return u, err
		}
		u.CPUNanos = stat["usage_usec"] * 1000
		if u.Memory, err = readUint(filepath.Join(base, "memory.current")); err != nil {
			return u, err
		}
		ms, err := readKV(filepath.Join(base, "memory.stat"))
		if err != nil {
			return u, err
		}
		u.RSS = ms["anon"]
		u.WorkingSet = sub(u.Memory, ms["inactive_file"])
		return u, nil
	}
	var err error
	if u.CPUNanos, err = readUint(filepath.Join(m.Dir("cpuacct", dir), "cpuacct.usage")); err != nil {
		return u, err
	}
	if u.Memory, err = readUint(filepath.Join(m.Dir("memory", dir), "memory.usage_in_bytes")); err != nil {
		return u, err
	}
	ms, err := readKV(filepath.Join(m.Dir("memory", dir), "memory.stat"))
	if err != nil {
		return u, err
	}
	u.RSS = ms["total_rss"]
	u.WorkingSet = sub(u.Memory, ms["total_inactive_file"])
	return u, nil
}

func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

func readUint(p string) (uint64, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", p, err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", p, err)
	}
	return v, nil
}

func readKV(p string) (map[string]uint64, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	defer f.Close()
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out, sc.Err()
}

// CPURate is the usage in nanocores between two samples of one cgroup; false when it cannot be
// computed (no time passed, or the counter went back: a new cgroup).
func CPURate(prev, cur Usage) (uint64, bool) {
	dt := cur.Time.Sub(prev.Time)
	if dt <= 0 || cur.CPUNanos < prev.CPUNanos {
		return 0, false
	}
	return uint64(float64(cur.CPUNanos-prev.CPUNanos) / dt.Seconds()), true
}

// sample reads dir and turns it into summary stats, with the rate against the previous sample.
func (m *Manager) sample(dir string) (*CPUStats, *MemoryStats, error) {
	u, err := m.ReadUsage(dir)
	if err != nil {
		return nil, nil, err
	}
	m.mu.Lock()
	if m.prev == nil {
		m.prev = map[string]Usage{}
	}
	prev, had := m.prev[dir]
	m.prev[dir] = u
	m.mu.Unlock()
	t := metav1.NewTime(u.Time)
	cpu := &CPUStats{Time: t, UsageCoreNanoSeconds: ptr(u.CPUNanos)}
	if had {
		if r, ok := CPURate(prev, u); ok {
			cpu.UsageNanoCores = ptr(r)
		}
	}
	mem := &MemoryStats{Time: t, UsageBytes: ptr(u.Memory), WorkingSetBytes: ptr(u.WorkingSet), RSSBytes: ptr(u.RSS)}
	return cpu, mem, nil
}

func ptr(v uint64) *uint64 { return &v }

// PodStats reads a pod's cgroup and its running containers' (from the pod's status). A pod
// without a cgroup (not started, or already gone) has no CPU/memory fields.
func (m *Manager) PodStats(pod *corev1.Pod) PodStats {
	qos := QOSClass(pod)
	ps := PodStats{PodRef: PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID)}}
	if pod.Status.StartTime != nil {
		ps.StartTime = *pod.Status.StartTime
	}
	if cpu, mem, err := m.sample(m.cfg.Layout.PodDir(qos, pod.UID)); err == nil {
		ps.CPU, ps.Memory = cpu, mem
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil {
			continue
		}
		_, id, ok := strings.Cut(cs.ContainerID, "://")
		if !ok {
			continue
		}
		c := ContainerStats{Name: cs.Name, StartTime: cs.State.Running.StartedAt}
		if cpu, mem, err := m.sample(m.cfg.Layout.ContainerDir(qos, pod.UID, id)); err == nil {
			c.CPU, c.Memory = cpu, mem
		}
		ps.Containers = append(ps.Containers, c)
	}
	return ps
}

// Summary is the usage of the node (its root cgroup) and of every pod given.
func (m *Manager) Summary(nodeName string, pods []*corev1.Pod) Summary {
	s := Summary{Node: NodeStats{NodeName: nodeName}, Pods: []PodStats{}}
	if cpu, mem, err := m.sample("/"); err == nil {
		s.Node.CPU, s.Node.Memory = cpu, mem
		if avail, err := MemAvailable(); err == nil {
			s.Node.Memory.AvailableBytes = ptr(uint64(avail))
		}
		if m.memoryCap > 0 && s.Node.Memory.AvailableBytes != nil {
			// The root cgroup's counters are not the machine's on v1: use meminfo for the node.
			used := sub(uint64(m.memoryCap), *s.Node.Memory.AvailableBytes)
			s.Node.Memory.WorkingSetBytes = ptr(used)
		}
	}
	for _, p := range pods {
		s.Pods = append(s.Pods, m.PodStats(p))
	}
	return s
}

// MemAvailable reads MemAvailable from /proc/meminfo in bytes.
func MemAvailable() (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "MemAvailable:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("meminfo: %w", err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("meminfo: no MemAvailable")
}

// PodProcesses is the number of processes (tasks) in pod's cgroup, from the pids controller's
// pids.current: what PID-pressure eviction ranks by.
func (m *Manager) PodProcesses(pod *corev1.Pod) (int64, error) {
	n, err := readUint(filepath.Join(m.Dir("pids", m.cfg.Layout.PodDir(QOSClass(pod), pod.UID)), "pids.current"))
	if err != nil {
		return 0, fmt.Errorf("processes of pod %s: %w", pod.UID, err)
	}
	return int64(n), nil
}
