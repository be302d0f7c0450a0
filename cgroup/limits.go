package cgroup

import (
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// The kubelet's CPU conversion constants.
const (
	MinShares     = 2
	MaxShares     = 262144
	SharesPerCPU  = 1024
	QuotaPeriodUS = 100000 // CFS period: 100 ms
	MinQuotaUS    = 1000   // the smallest quota the kubelet sets (1 ms)
)

// oom_score_adj values the kubelet uses.
const (
	GuaranteedOOMScoreAdj = -997
	BestEffortOOMScoreAdj = 1000
	SandboxOOMScoreAdj    = -998
)

// MilliCPUToShares converts a CPU request in millicores to cgroup v1 cpu.shares as the kubelet
// does: 1024 per core, at least 2 (also for no request), at most 262144.
func MilliCPUToShares(milli int64) uint64 {
	if milli <= 0 {
		return MinShares
	}
	s := milli * SharesPerCPU / 1000
	if s < MinShares {
		return MinShares
	}
	if s > MaxShares {
		return MaxShares
	}
	return uint64(s)
}

// SharesToWeight converts cgroup v1 cpu.shares [2, 262144] to cgroup v2 cpu.weight [1, 10000]
// (the formula runc and the kubelet use): 1 + ((shares-2)*9999)/262142. 0 stays 0 (unset).
func SharesToWeight(shares uint64) uint64 {
	if shares == 0 {
		return 0
	}
	if shares < MinShares {
		shares = MinShares
	}
	if shares > MaxShares {
		shares = MaxShares
	}
	return 1 + ((shares-2)*9999)/262142
}

// MilliCPUToQuota converts a CPU limit in millicores to a CFS quota for period (microseconds):
// 0 (no limit) for 0, at least 1000.
func MilliCPUToQuota(milli, period int64) int64 {
	if milli <= 0 {
		return 0
	}
	q := milli * period / 1000
	if q < MinQuotaUS {
		return MinQuotaUS
	}
	return q
}

// Resources is what podkeeper writes to one cgroup. Zero fields are left alone (no limit).
type Resources struct {
	CPUShares   uint64 // v1 cpu.shares; v2 gets SharesToWeight(CPUShares)
	CPUQuota    int64  // microseconds per CPUPeriod; 0: no limit
	CPUPeriod   uint64
	Memory      int64 // bytes; 0: no limit
	PidsLimit   int64 // 0: no limit
	HugePages   map[string]int64
	Unspecified bool // nothing to set beyond creating the cgroup
}

// hugePageSize turns "hugepages-2Mi" into the cgroup file size name "2MB"; "" when the resource
// is not a hugepages one.
func hugePageSize(name corev1.ResourceName) string {
	s, ok := strings.CutPrefix(string(name), corev1.ResourceHugePagesPrefix)
	if !ok {
		return ""
	}
	for _, u := range []struct{ k, c string }{{"Ki", "KB"}, {"Mi", "MB"}, {"Gi", "GB"}} {
		if n, ok := strings.CutSuffix(s, u.k); ok {
			return n + u.c
		}
	}
	return s
}

// ContainerResources are the limits of container c's own cgroup (the OCI spec's
// linux.resources): shares from the CPU request, CFS quota from the CPU limit, memory and
// hugepages limits. In a pod with pod-level resources (PodLevelSet) a container without its own
// CPU, memory or hugepages limit gets the pod's, as the kubelet does. A container without a CPU
// request gets the shares of its CPU limit (the pod's when it has none of its own), one without
// either 2 shares, as the kubelet gives them.
func ContainerResources(pod *corev1.Pod, c *corev1.Container) Resources {
	r := Resources{CPUPeriod: QuotaPeriodUS}
	req := c.Resources.Requests
	lim := c.Resources.Limits
	cpuReq, hasReq := req[corev1.ResourceCPU]
	cpuLim, hasLim := lim[corev1.ResourceCPU]
	var podLim corev1.ResourceList
	if PodLevelSet(pod) {
		podLim = pod.Spec.Resources.Limits
	}
	if !hasLim || cpuLim.IsZero() {
		cpuLim, hasLim = podLim[corev1.ResourceCPU]
	}
	switch {
	case hasReq:
		r.CPUShares = MilliCPUToShares(cpuReq.MilliValue())
	case hasLim: // a missing request defaults to the limit, the pod's when the container has none
		r.CPUShares = MilliCPUToShares(cpuLim.MilliValue())
	default:
		r.CPUShares = MinShares
	}
	if hasLim && !cpuLim.IsZero() {
		r.CPUQuota = MilliCPUToQuota(cpuLim.MilliValue(), QuotaPeriodUS)
	}
	if m, ok := lim[corev1.ResourceMemory]; ok && !m.IsZero() {
		r.Memory = m.Value()
	} else if m, ok := podLim[corev1.ResourceMemory]; ok {
		r.Memory = m.Value()
	}
	for _, l := range []corev1.ResourceList{podLim, lim} { // the container's own win
		for name, q := range l {
			if sz := hugePageSize(name); sz != "" {
				if r.HugePages == nil {
					r.HugePages = map[string]int64{}
				}
				r.HugePages[sz] = q.Value()
			}
		}
	}
	return r
}

// PodResources are the limits of a pod's cgroup, as the kubelet computes them: shares from the
// pod's CPU request (PodRequests); a CPU quota and a memory limit only when every container, init
// containers included, has that limit (otherwise the pod is unbounded for it); the pod's
// effective values count an init container alone when it needs more than all app containers
// together. Pod-level limits
// (spec.resources), where set, are the pod's CPU quota, memory and hugepages limits. The pod's
// overhead (spec.overhead) is added to its CPU request and to the CPU and memory limits it has.
// BestEffort pods get 2 shares. pidsLimit (podPidsLimit, 0 = none) bounds the whole pod.
func PodResources(pod *corev1.Pod, pidsLimit int64) Resources {
	sum := func(ctrs []corev1.Container, get func(corev1.ResourceList) (int64, bool)) (int64, bool, int64, bool) {
		var total, max int64
		all := true
		for i := range ctrs {
			v, ok := get(ctrs[i].Resources.Limits)
			if !ok {
				all = false
			}
			total += v
			if v > max {
				max = v
			}
		}
		return total, all, max, len(ctrs) > 0
	}
	limGetter := func(name corev1.ResourceName, milli bool) func(corev1.ResourceList) (int64, bool) {
		return func(l corev1.ResourceList) (int64, bool) {
			q, ok := l[name]
			if !ok || q.IsZero() {
				return 0, false
			}
			if milli {
				return q.MilliValue(), true
			}
			return q.Value(), true
		}
	}
	effective := func(total, initMax int64) int64 {
		if initMax > total {
			return initMax
		}
		return total
	}
	r := Resources{CPUPeriod: QuotaPeriodUS, PidsLimit: pidsLimit}
	if QOSClass(pod) == corev1.PodQOSBestEffort {
		r.CPUShares = MinShares
	} else {
		r.CPUShares = MilliCPUToShares(PodCPURequestMilli(pod))
	}
	// A limit only when every container, init containers included, has it (the kubelet's
	// cpuLimitsDeclared/memoryLimitsDeclared): one without it may use what the node has.
	var cpuLimitMilli int64
	if t, all, _, _ := sum(pod.Spec.Containers, limGetter(corev1.ResourceCPU, true)); all && t > 0 {
		if _, allInit, im, _ := sum(pod.Spec.InitContainers, limGetter(corev1.ResourceCPU, true)); allInit {
			cpuLimitMilli = effective(t, im)
		}
	}
	if t, all, _, _ := sum(pod.Spec.Containers, limGetter(corev1.ResourceMemory, false)); all && t > 0 {
		if _, allInit, im, _ := sum(pod.Spec.InitContainers, limGetter(corev1.ResourceMemory, false)); allInit {
			r.Memory = effective(t, im)
		}
	}
	// hugepages: the sum of the containers' limits, per page size.
	for _, c := range pod.Spec.Containers {
		for name, q := range c.Resources.Limits {
			if sz := hugePageSize(name); sz != "" {
				if r.HugePages == nil {
					r.HugePages = map[string]int64{}
				}
				r.HugePages[sz] += q.Value()
			}
		}
	}
	if PodLevelSet(pod) {
		for name, q := range pod.Spec.Resources.Limits {
			switch sz := hugePageSize(name); {
			case q.IsZero():
			case name == corev1.ResourceCPU:
				cpuLimitMilli = q.MilliValue()
			case name == corev1.ResourceMemory:
				r.Memory = q.Value()
			case sz != "":
				if r.HugePages == nil {
					r.HugePages = map[string]int64{}
				}
				r.HugePages[sz] = q.Value()
			}
		}
	}
	// The overhead (spec.overhead) is added to the limits the pod has, as the kubelet does.
	if o, ok := pod.Spec.Overhead[corev1.ResourceCPU]; ok && cpuLimitMilli > 0 {
		cpuLimitMilli += o.MilliValue()
	}
	if o, ok := pod.Spec.Overhead[corev1.ResourceMemory]; ok && r.Memory > 0 {
		r.Memory += o.Value()
	}
	if cpuLimitMilli > 0 {
		r.CPUQuota = MilliCPUToQuota(cpuLimitMilli, QuotaPeriodUS)
	}
	return r
}

// Spec turns r into OCI linux.resources for runc (cgroup v1 values; runc converts shares to
// weight on v2).
func (r Resources) Spec() *specs.LinuxResources {
	out := &specs.LinuxResources{}
	if r.CPUShares > 0 || r.CPUQuota > 0 {
		out.CPU = &specs.LinuxCPU{}
		if r.CPUShares > 0 {
			s := r.CPUShares
			out.CPU.Shares = &s
		}
		if r.CPUQuota > 0 {
			q, p := r.CPUQuota, r.CPUPeriod
			out.CPU.Quota, out.CPU.Period = &q, &p
		}
	}
	if r.Memory > 0 {
		m, swap := r.Memory, r.Memory // no swap on top of the limit, as the CRI sets it
		out.Memory = &specs.LinuxMemory{Limit: &m, Swap: &swap}
	}
	if r.PidsLimit > 0 {
		p := r.PidsLimit
		out.Pids = &specs.LinuxPids{Limit: &p}
	}
	for sz, v := range r.HugePages {
		out.HugepageLimits = append(out.HugepageLimits, specs.LinuxHugepageLimit{Pagesize: sz, Limit: uint64(v)})
	}
	return out
}

// OOMScoreAdj is the oom_score_adj the kubelet gives a container of pod on a node with
// memCapacity bytes: Guaranteed -997 (and a static pod of priority class system-node-critical,
// such as kubeadm's control plane, whatever its class), BestEffort 1000, Burstable
// 1000 - 1000*memoryRequest/memCapacity kept within [3, 999] (above any Guaranteed container,
// below BestEffort ones). With a pod-level memory request, the part of it no container requests
// is shared equally among all containers first; a sidecar scores no higher than the app
// container requesting the least memory.
func OOMScoreAdj(pod *corev1.Pod, c *corev1.Container, memCapacity int64) int {
	if pod.Spec.PriorityClassName == "system-node-critical" {
		return GuaranteedOOMScoreAdj
	}
	switch QOSClass(pod) {
	case corev1.PodQOSGuaranteed:
		return GuaranteedOOMScoreAdj
	case corev1.PodQOSBestEffort:
		return BestEffortOOMScoreAdj
	}
	if memCapacity <= 0 {
		return 999
	}
	memReq := func(c *corev1.Container) int64 {
		if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
			return q.Value()
		} else if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			return q.Value()
		}
		return 0
	}
	var extra int64 // the pod-level request's share no container requests, per container
	if PodLevelSet(pod) {
		if q, ok := pod.Spec.Resources.Requests[corev1.ResourceMemory]; ok && !q.IsZero() {
			agg := AggregateContainerRequests(pod)[corev1.ResourceMemory]
			extra = max(q.Value()-agg.Value(), 0) / int64(len(pod.Spec.Containers)+len(pod.Spec.InitContainers))
		}
	}
	adj := 1000 - (1000*(memReq(c)+extra))/memCapacity
	if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways && len(pod.Spec.Containers) > 0 {
		least := memReq(&pod.Spec.Containers[0])
		for i := range pod.Spec.Containers[1:] {
			least = min(least, memReq(&pod.Spec.Containers[i+1]))
		}
		adj = min(adj, 1000-(1000*(least+extra))/memCapacity)
	}
	if adj < 1000+GuaranteedOOMScoreAdj {
		return 1000 + GuaranteedOOMScoreAdj
	}
	if adj >= BestEffortOOMScoreAdj {
		return BestEffortOOMScoreAdj - 1
	}
	return int(adj)
}

// ClampOOMScoreAdj raises want to floor when the process may not lower its children's score
// below its own (no CAP_SYS_RESOURCE), as containerd's restrict_oom_score_adj does. It reports
// whether it changed the value.
func ClampOOMScoreAdj(want, floor int, canLower bool) (int, bool) {
	if canLower || want >= floor {
		return want, false
	}
	return floor, true
}

// PodCPURequestMilli is the pod's CPU request in millicores as the kubelet counts it for cgroups
// (PodRequests: the pod-level request, else its containers' aggregate).
func PodCPURequestMilli(pod *corev1.Pod) int64 {
	q := PodRequests(pod)[corev1.ResourceCPU]
	return q.MilliValue()
}

// BurstableShares is the cpu.shares of the burstable QoS cgroup, as the kubelet sets it: the sum
// of the CPU requests of the Burstable pods (at least MinShares). Pods of other classes count
// nothing.
func BurstableShares(pods []*corev1.Pod) uint64 {
	var milli int64
	for _, p := range pods {
		if QOSClass(p) == corev1.PodQOSBurstable {
			milli += PodCPURequestMilli(p)
		}
	}
	return MilliCPUToShares(milli)
}
