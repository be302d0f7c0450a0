package podrunner

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Eviction decisions (pure): signals, thresholds and the ranking of pods. The monitoring loop
// that observes the node and evicts is in evictor.go, its pressure state machine in pressure.go.

// Signal is an eviction signal, as the kubelet names them.
type Signal string

const (
	SignalMemoryAvailable    Signal = "memory.available"
	SignalNodeFsAvailable    Signal = "nodefs.available"
	SignalNodeFsInodesFree   Signal = "nodefs.inodesFree"
	SignalImageFsAvailable   Signal = "imagefs.available"
	SignalPIDAvailable       Signal = "pid.available"
	NeverEvictAnnotation            = "podkeeper.io/never-evict" // "true": podkeeper never evicts the pod
	CriticalPriority         int32  = 2000000000                 // system-cluster-critical and above: never evicted
	EvictionMonitorInterval         = 10 * time.Second
	PressureTransitionPeriod        = 5 * time.Minute
)

var knownSignals = map[Signal]bool{SignalMemoryAvailable: true, SignalNodeFsAvailable: true, SignalNodeFsInodesFree: true, SignalImageFsAvailable: true, SignalPIDAvailable: true}

// Threshold is "<signal> < quantity" or "<signal> < percent%" of the capacity; Grace 0 is hard.
type Threshold struct {
	Signal   Signal
	Quantity *resource.Quantity // absolute; nil when Percent is used
	Percent  float64            // 0 < Percent <= 100
	Grace    time.Duration
}

// Value is the threshold in the signal's units for a resource of capacity.
func (t Threshold) Value(capacity int64) int64 {
	if t.Quantity != nil {
		return t.Quantity.Value()
	}
	return int64(float64(capacity) * t.Percent / 100)
}

func (t Threshold) String() string {
	if t.Quantity != nil {
		return fmt.Sprintf("%s<%s", t.Signal, t.Quantity.String())
	}
	return fmt.Sprintf("%s<%g%%", t.Signal, t.Percent)
}

// DefaultHardThresholds are the kubelet's: memory.available<100Mi, nodefs.available<10%,
// imagefs.available<15%, nodefs.inodesFree<5%.
func DefaultHardThresholds() []Threshold {
	t, _ := ParseThresholds("memory.available<100Mi,nodefs.available<10%,imagefs.available<15%,nodefs.inodesFree<5%", "")
	return t
}

// ParseThresholds reads the kubelet's --eviction-hard / --eviction-soft syntax
// ("memory.available<100Mi,nodefs.available<10%") and, for soft thresholds, the grace periods
// ("memory.available=1m30s"). Every soft threshold needs a grace period; a grace period for a
// signal without a threshold is an error.
func ParseThresholds(spec, grace string) ([]Threshold, error) {
	graces := map[Signal]time.Duration{}
	if strings.TrimSpace(grace) != "" {
		for _, kv := range strings.Split(grace, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok {
				return nil, fmt.Errorf("grace period %q: want signal=duration", kv)
			}
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("grace period %q: want a positive duration", kv)
			}
			if !knownSignals[Signal(k)] {
				return nil, fmt.Errorf("grace period %q: unknown signal %q", kv, k)
			}
			graces[Signal(k)] = d
		}
	}
	var out []Threshold
	seen := map[Signal]bool{}
	if strings.TrimSpace(spec) != "" {
		for _, part := range strings.Split(spec, ",") {
			part = strings.TrimSpace(part)
			k, v, ok := strings.Cut(part, "<")
			if !ok {
				return nil, fmt.Errorf("threshold %q: want signal<quantity or signal<percent%%", part)
			}
			sig := Signal(k)
			if !knownSignals[sig] {
				return nil, fmt.Errorf("threshold %q: unknown signal %q (memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, pid.available)", part, k)
			}
			if seen[sig] {
				return nil, fmt.Errorf("threshold %q: %s given twice", part, sig)
			}
			seen[sig] = true
			t := Threshold{Signal: sig, Grace: graces[sig]}
			if p, isPct := strings.CutSuffix(v, "%"); isPct {
				var f float64
				if _, err := fmt.Sscanf(p, "%g", &f); err != nil || f <= 0 || f > 100 {
					return nil, fmt.Errorf("threshold %q: percentage must be in (0, 100]", part)
				}
				t.Percent = f
			} else {
				q, err := resource.ParseQuantity(v)
				if err != nil || q.Sign() < 0 {
					return nil, fmt.Errorf("threshold %q: bad quantity %q", part, v)
				}
				t.Quantity = &q
			}
			out = append(out, t)
		}
	}
	if grace != "" {
		for sig := range graces {
			if !seen[sig] {
				return nil, fmt.Errorf("grace period for %s without a threshold", sig)
			}
		}
		for _, t := range out {
			if t.Grace == 0 {
				return nil, fmt.Errorf("soft threshold %s has no grace period", t)
			}
		}
	}
	return out, nil
}

// Candidate is a pod and its usage of the resource under pressure.
type Candidate struct {
	Pod     *corev1.Pod
	Usage   int64 // bytes (memory, disk), inodes or processes
	Request int64 // the pod's request of that resource (memory requests for memory.available)
}

// requestedResource is the resource pods request of what signal s measures: memory for
// memory.available, ephemeral-storage for nodefs/imagefs.available; "" for inodes and processes
// (Kubernetes has no request for them).
func requestedResource(s Signal) corev1.ResourceName {
	switch s {
	case SignalMemoryAvailable:
		return corev1.ResourceMemory
	case SignalNodeFsAvailable, SignalImageFsAvailable:
		return corev1.ResourceEphemeralStorage
	}
	return ""
}

// RequestFor is what pod requests of the resource signal s measures (requestedResource); 0 when
// nothing can be requested.
func RequestFor(pod *corev1.Pod, s Signal) int64 {
	name := requestedResource(s)
	if name == "" {
		return 0
	}
	q := PodRequests(pod)[name]
	return q.Value()
}

// Evictable says whether podkeeper may evict pod at all: never a pod with priority >=
// 2000000000 (system-cluster-critical, system-node-critical) nor one annotated
// podkeeper.io/never-evict: "true".
func Evictable(pod *corev1.Pod) bool {
	if pod.Spec.Priority != nil && *pod.Spec.Priority >= CriticalPriority {
		return false
	}
	return pod.Annotations[NeverEvictAnnotation] != "true"
}

// RankForEviction orders the evictable candidates as the kubelet ranks them: pods using more
// than they request first, then by priority (lower first), then by usage above the request (more
// first). The same order serves every signal: for disk it is the kubelet's ephemeral-storage
// ranking, and for inodes and processes, which nothing requests, it comes down to the kubelet's
// priority, then usage. Pods that may not be evicted are left out.
func RankForEviction(cands []Candidate) []Candidate {
	out := make([]Candidate, 0, len(cands))
	for _, c := range cands {
		if Evictable(c.Pod) {
			out = append(out, c)
		}
	}
	prio := func(p *corev1.Pod) int32 {
		if p.Spec.Priority != nil {
			return *p.Spec.Priority
		}
		return 0
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		ao, bo := a.Usage > a.Request, b.Usage > b.Request
		if ao != bo {
			return ao
		}
		if pa, pb := prio(a.Pod), prio(b.Pod); pa != pb {
			return pa < pb
		}
		return a.Usage-a.Request > b.Usage-b.Request
	})
	return out
}

// ThresholdsMet returns the thresholds whose signal's available amount is below them.
// observed maps a signal to (available, capacity); signals not observed are not met.
func ThresholdsMet(thresholds []Threshold, observed map[Signal][2]int64) []Threshold {
	var out []Threshold
	for _, t := range thresholds {
		o, ok := observed[t.Signal]
		if ok && o[0] < t.Value(o[1]) {
			out = append(out, t)
		}
	}
	return out
}
