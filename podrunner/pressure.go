package podrunner

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Pressure (pure): which thresholds act now and which node conditions hold, from one observation
// after another. Hard thresholds act as soon as they are met; a soft one once it has been met
// without a break for its grace period. A node condition stays True for the transition period
// after its last threshold stopped being met (the kubelet's --eviction-pressure-transition-period).

// Observation is one signal's (available, capacity) pair.
type Observation = [2]int64

// PressureState remembers what ObservePressure needs between observations. Zero value: no
// threshold met so far.
type PressureState struct {
	softSince map[Signal]time.Time                   // soft threshold met without a break since
	lastMet   map[corev1.NodeConditionType]time.Time // last time a threshold of the condition was met
	since     map[corev1.NodeConditionType]time.Time // last transition of the condition
	status    map[corev1.NodeConditionType]bool      // condition True?
}

// PressureDecision is the outcome of one observation.
type PressureDecision struct {
	// Act are the thresholds to act on now (hard ones met, soft ones met past their grace).
	Act []Threshold
	// Conditions says, per node condition, whether it is True and since when it has been so.
	Conditions map[corev1.NodeConditionType]ConditionState
}

// ConditionState is one node condition.
type ConditionState struct {
	True  bool
	Since time.Time // last transition; zero: never changed
}

// ConditionFor is the node condition a signal's pressure sets.
func ConditionFor(s Signal) corev1.NodeConditionType {
	switch s {
	case SignalMemoryAvailable:
		return corev1.NodeMemoryPressure
	case SignalPIDAvailable:
		return corev1.NodePIDPressure
	default:
		return corev1.NodeDiskPressure
	}
}

// ObservePressure folds one observation (taken at now) into st and decides. Pure apart from st.
func ObservePressure(st *PressureState, hard, soft []Threshold, observed map[Signal]Observation, transition time.Duration, now time.Time) PressureDecision {
	if st.softSince == nil {
		st.softSince = map[Signal]time.Time{}
		st.lastMet = map[corev1.NodeConditionType]time.Time{}
		st.since = map[corev1.NodeConditionType]time.Time{}
		st.status = map[corev1.NodeConditionType]bool{}
	}
	var d PressureDecision
	met := map[corev1.NodeConditionType]bool{}
	for _, t := range ThresholdsMet(hard, observed) {
		d.Act = append(d.Act, t)
		met[ConditionFor(t.Signal)] = true
	}
	softMet := map[Signal]bool{}
	for _, t := range ThresholdsMet(soft, observed) {
		softMet[t.Signal] = true
		met[ConditionFor(t.Signal)] = true
		first, ok := st.softSince[t.Signal]
		if !ok {
			st.softSince[t.Signal] = now
			first = now
		}
		if now.Sub(first) >= t.Grace {
			d.Act = append(d.Act, t)
		}
	}
	for s := range st.softSince {
		if !softMet[s] {
			delete(st.softSince, s)
		}
	}
	d.Conditions = map[corev1.NodeConditionType]ConditionState{}
	for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		if met[c] {
			st.lastMet[c] = now
		}
		last, ever := st.lastMet[c]
		on := met[c] || (ever && now.Sub(last) < transition)
		if on != st.status[c] {
			st.status[c] = on
			st.since[c] = now
		}
		d.Conditions[c] = ConditionState{True: on, Since: st.since[c]}
	}
	return d
}

// PodUsage is a pod's use of the resource under pressure, in total and per container.
type PodUsage struct {
	Total      int64
	Containers map[string]int64
}

// EvictionMessage is the kubelet's message for a pod evicted on threshold t with the signal's
// observation obs: "The node was low on resource: memory. Threshold quantity: 100Mi, available:
// 50Mi. Container x was using 70Mi, request is 0, has larger consumption of memory."
func EvictionMessage(t Threshold, obs Observation, pod *corev1.Pod, u PodUsage) string {
	res := resourceOf(t.Signal)
	format := resource.BinarySI
	if t.Signal == SignalNodeFsInodesFree || t.Signal == SignalPIDAvailable {
		format = resource.DecimalSI
	}
	q := func(v int64) string { return resource.NewQuantity(v, format).String() }
	msg := fmt.Sprintf("The node was low on resource: %s. Threshold quantity: %s, available: %s. ", res, q(t.Value(obs[1])), q(obs[0]))
	reqName := requestedResource(t.Signal)
	if reqName == "" {
		return strings.TrimSpace(msg)
	}
	for _, c := range pod.Spec.Containers {
		used, ok := u.Containers[c.Name]
		if !ok {
			continue
		}
		req := c.Resources.Requests[reqName]
		if used > req.Value() {
			msg += fmt.Sprintf("Container %s was using %s, request is %s, has larger consumption of %s. ", c.Name, q(used), req.String(), res)
		}
	}
	return strings.TrimSpace(msg)
}

func resourceOf(s Signal) string {
	switch s {
	case SignalMemoryAvailable:
		return "memory"
	case SignalNodeFsInodesFree:
		return "inodes"
	case SignalPIDAvailable:
		return "pids"
	default:
		return "ephemeral-storage"
	}
}

// RestartAfterEviction is how long an evicted static pod waits, once the pressure is gone, before
// it starts again: base for the first eviction, doubling with each further one, at most 5 m.
func RestartAfterEviction(base time.Duration, evictions int) time.Duration {
	d := base
	for i := 1; i < evictions && d < 5*time.Minute; i++ {
		d *= 2
	}
	if d > 5*time.Minute {
		d = 5 * time.Minute
	}
	return d
}
