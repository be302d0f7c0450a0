package cgroup

import (
	"fmt"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// The kubelet's numbers for turning requests and limits into cgroup values.
const (
	// CPUPeriod is the CFS period (µs) every quota is computed against.
	CPUPeriod uint64 = 100000
	// MinShares is the cpu.shares of a BestEffort pod (and of a request of 0).
	MinShares uint64 = 2
	// MaxShares is the largest cpu.shares value the kernel takes.
	MaxShares uint64 = 262144
	// MinQuota is the smallest CFS quota (µs) the kubelet sets: 1 ms per period.
	MinQuota int64 = 1000

	// GuaranteedOOMScoreAdj is the oom_score_adj of Guaranteed (and node-critical) containers.
	GuaranteedOOMScoreAdj = -997
	// BestEffortOOMScoreAdj is the oom_score_adj of BestEffort containers.
	BestEffortOOMScoreAdj = 1000
	// SandboxOOMScoreAdj is the pause process's: the last to go.
	SandboxOOMScoreAdj = -998
	// CriticalPriority is system-node-critical's priority; pods at or above it are node-critical.
	CriticalPriority = 2000001000
)

// MilliCPUToShares converts a CPU request in millicores to cpu.shares (cgroup v1) as the
// kubelet does: 1 core = 1024 shares, at least MinShares, at most MaxShares.
func MilliCPUToShares(milli int64) uint64 {
	if milli <= 0 {
		return MinShares
	}
	shares := uint64(milli) * 1024 / 1000
	return min(max(shares, MinShares), MaxShares)
}

// SharesToWeight converts cpu.shares to cgroup v2 cpu.weight as runc does: [2, 262144] maps
// linearly onto [1, 10000]. 0 stays 0 (unset).
func SharesToWeight(shares uint64) uint64 {
	if shares == 0 {
		return 0
	}
	shares = min(max(shares, MinShares), MaxShares)
	return 1 + ((shares-2)*9999)/262142
}

// MilliCPUToQuota converts a CPU limit in millicores to a CFS quota (µs per CPUPeriod), at least
// MinQuota. 0 means no limit (returns 0).
func MilliCPUToQuota(milli int64) int64 {
	if milli <= 0 {
		return 0
	}
	q := milli * int64(CPUPeriod) / 1000
	return max(q, MinQuota)
}

// OOMScoreAdj is the oom_score_adj of container c of pod, as the kubelet computes it:
// node-critical pods (priority >= CriticalPriority) and Guaranteed pods -997, BestEffort 1000,
// Burstable 1000 - 1000*memoryRequest/memoryCapacity kept within [2, 999] so a Burstable
// container is always killed before a Guaranteed one and after a BestEffort one.
func OOMScoreAdj(pod *corev1.Pod, c *corev1.Container, memoryCapacity int64) int {
	if pod.Spec.Priority != nil && *pod.Spec.Priority >= CriticalPriority {
		return GuaranteedOOMScoreAdj
	}
	switch QOSClass(pod) {
	case corev1.PodQOSGuaranteed:
		return GuaranteedOOMScoreAdj
	case corev1.PodQOSBestEffort:
		return BestEffortOOMScoreAdj
	}
	if memoryCapacity <= 0 {
		return BestEffortOOMScoreAdj - 1
	}
	req := c.Resources.Requests.Memory().Value()
	adj := 1000 - (1000*req)/memoryCapacity
	return int(min(max(adj, 2), 999))
}

// ClampOOMScoreAdj keeps adj at or above floor: a process without CAP_SYS_RESOURCE cannot give a
// child a lower oom_score_adj than its own (containerd's restrict_oom_score_adj does the same).
func ClampOOMScoreAdj(adj, floor int) int {
	return max(adj, floor)
}

func milli(l corev1.ResourceList, name corev1.ResourceName) (int64, bool) {
	q, ok := l[name]
	if !ok {
		return 0, false
	}
	return q.MilliValue(), true
}

func bytes(l corev1.ResourceList, name corev1.ResourceName) (int64, bool) {
	q, ok := l[name]
	if !ok {
		return 0, false
	}
	return q.Value(), true
}

// ContainerResources is the linux.resources of one container's OCI spec: shares from its CPU
// request, CFS quota from its CPU limit, its memory limit and hugepage limits.
func ContainerResources(c *corev1.Container) *specs.LinuxResources {
	res := &specs.LinuxResources{CPU: &specs.LinuxCPU{}}
	req, hasReq := milli(c.Resources.Requests, corev1.ResourceCPU)
	if !hasReq {
		req, hasReq = milli(c.Resources.Limits, corev1.ResourceCPU) // the API server defaults request to limit
	}
	shares := MilliCPUToShares(req)
	res.CPU.Shares = &shares
	if lim, ok := milli(c.Resources.Limits, corev1.ResourceCPU); ok && lim > 0 {
		quota, period := MilliCPUToQuota(lim), CPUPeriod
		res.CPU.Quota, res.CPU.Period = &quota, &period
	}
	if mem, ok := bytes(c.Resources.Limits, corev1.ResourceMemory); ok && mem > 0 {
		res.Memory = &specs.LinuxMemory{Limit: &mem}
	}
	res.HugepageLimits = hugepageLimits(c.Resources.Limits)
	return res
}

func hugepageLimits(l corev1.ResourceList) []specs.LinuxHugepageLimit {
	var out []specs.LinuxHugepageLimit
	for name, q := range l {
		size, ok := strings.CutPrefix(string(name), corev1.ResourceHugePagesPrefix)
		if !ok {
			continue
		}
		out = append(out, specs.LinuxHugepageLimit{Pagesize: hugepageSize(size), Limit: uint64(q.Value())})
	}
	return out
}

// hugepageSize turns a Kubernetes page size (2Mi, 1Gi) into the kernel's (2MB, 1GB).
func hugepageSize(k string) string {
	for _, s := range []struct{ k, kernel string }{{"Ki", "KB"}, {"Mi", "MB"}, {"Gi", "GB"}} {
		if n, ok := strings.CutSuffix(k, s.k); ok {
			return n + s.kernel
		}
	}
	return k
}

// PodResources is the linux.resources of a pod's cgroup, as the kubelet's pod-level limits:
// shares = the sum of the containers' CPU requests (MinShares for BestEffort); a CFS quota and a
// memory limit only when every app container has that limit (the sum; init containers count
// with the largest one, as they run one at a time); pids.max = pidsLimit when > 0.
func PodResources(pod *corev1.Pod, pidsLimit int64) *specs.LinuxResources {
	var cpuReq, cpuLim, memLim int64
	allCPU, allMem := true, true
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		r, ok := milli(c.Resources.Requests, corev1.ResourceCPU)
		if !ok {
			r, _ = milli(c.Resources.Limits, corev1.ResourceCPU)
		}
		cpuReq += r
		if l, ok := milli(c.Resources.Limits, corev1.ResourceCPU); ok && l > 0 {
			cpuLim += l
		} else {
			allCPU = false
		}
		if l, ok := bytes(c.Resources.Limits, corev1.ResourceMemory); ok && l > 0 {
			memLim += l
		} else {
			allMem = false
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if r, ok := milli(c.Resources.Requests, corev1.ResourceCPU); ok {
			cpuReq = max(cpuReq, r)
		}
		if l, ok := milli(c.Resources.Limits, corev1.ResourceCPU); ok && allCPU {
			cpuLim = max(cpuLim, l)
		}
		if l, ok := bytes(c.Resources.Limits, corev1.ResourceMemory); ok && allMem {
			memLim = max(memLim, l)
		}
	}
	res := &specs.LinuxResources{CPU: &specs.LinuxCPU{}}
	shares := MilliCPUToShares(cpuReq)
	if QOSClass(pod) == corev1.PodQOSBestEffort {
		shares = MinShares
	}
	res.CPU.Shares = &shares
	if allCPU && cpuLim > 0 && len(pod.Spec.Containers) > 0 {
		quota, period := MilliCPUToQuota(cpuLim), CPUPeriod
		res.CPU.Quota, res.CPU.Period = &quota, &period
	}
	if allMem && memLim > 0 && len(pod.Spec.Containers) > 0 {
		res.Memory = &specs.LinuxMemory{Limit: &memLim}
	}
	if pidsLimit > 0 {
		res.Pids = &specs.LinuxPids{Limit: &pidsLimit}
	}
	return res
}

// V2Files is what a cgroup v2 directory's files hold for res (file name -> content), as runc
// and the kubelet write them: cpu.weight from shares, cpu.max "quota period" (or "max period"),
// memory.max, pids.max, hugetlb.<size>.max.
func V2Files(res *specs.LinuxResources) map[string]string {
	out := map[string]string{}
	if res == nil {
		return out
	}
	if c := res.CPU; c != nil {
		if c.Shares != nil {
			out["cpu.weight"] = fmt.Sprint(SharesToWeight(*c.Shares))
		}
		if c.Period != nil {
			quota := "max"
			if c.Quota != nil && *c.Quota > 0 {
				quota = fmt.Sprint(*c.Quota)
			}
			out["cpu.max"] = fmt.Sprintf("%s %d", quota, *c.Period)
		}
	}
	if m := res.Memory; m != nil && m.Limit != nil {
		out["memory.max"] = fmt.Sprint(*m.Limit)
	}
	if p := res.Pids; p != nil && p.Limit != nil && *p.Limit > 0 {
		out["pids.max"] = fmt.Sprint(*p.Limit)
	}
	for _, h := range res.HugepageLimits {
		out["hugetlb."+h.Pagesize+".max"] = fmt.Sprint(h.Limit)
	}
	return out
}

// V1Files is what the cgroup v1 controllers' files hold for res ("controller/file" -> content).
func V1Files(res *specs.LinuxResources) map[string]string {
	out := map[string]string{}
	if res == nil {
		return out
	}
	if c := res.CPU; c != nil {
		if c.Shares != nil {
			out["cpu/cpu.shares"] = fmt.Sprint(*c.Shares)
		}
		if c.Quota != nil && c.Period != nil {
			out["cpu/cpu.cfs_quota_us"] = fmt.Sprint(*c.Quota)
			out["cpu/cpu.cfs_period_us"] = fmt.Sprint(*c.Period)
		}
	}
	if m := res.Memory; m != nil && m.Limit != nil {
		out["memory/memory.limit_in_bytes"] = fmt.Sprint(*m.Limit)
	}
	if p := res.Pids; p != nil && p.Limit != nil && *p.Limit > 0 {
		out["pids/pids.max"] = fmt.Sprint(*p.Limit)
	}
	return out
}
