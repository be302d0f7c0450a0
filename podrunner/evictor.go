package podrunner

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkeeper/podkeeper/podrunner/metrics"
)

// Node-pressure eviction, wired: with Config.Eviction set, the manager observes the node every
// Interval (ObservePressure decides), reclaims what is cheap, and evicts at most one pod per
// interval (RankForEviction). An evicted pod's containers are stopped with grace 0 and the pod
// shows Failed/Evicted; since nothing else would bring a static pod back, podkeeper starts it
// again (its containers re-created from scratch) once the node condition of the signal that
// evicted it is False again and RestartAfterEviction has passed.

// EvictionConfig turns node-pressure eviction on.
type EvictionConfig struct {
	Hard, Soft []Threshold
	Interval   time.Duration // zero: EvictionMonitorInterval
	Transition time.Duration // pressure transition period; zero: PressureTransitionPeriod
	// Observe reads the node's signals: available and capacity per signal. Signals missing from
	// the map are not acted on.
	Observe func() (map[Signal]Observation, error)
	// Usage reads a pod's use of what signal s measures (total and per container): the memory
	// working set for memory.available; bytes written (writable layers, logs, local volumes) for
	// nodefs/imagefs.available; inodes for nodefs.inodesFree; processes for pid.available. False
	// when unknown.
	Usage func(pod *corev1.Pod, s Signal) (PodUsage, bool)
	// Reclaim frees node-level resources (unused images) before pods are evicted for a disk
	// signal; nil: nothing to reclaim.
	Reclaim func(ctx context.Context) error
}

// evictMark is an evicted pod's record, kept by the manager.
type evictMark struct {
	message   string
	cond      corev1.NodeConditionType
	at        time.Time
	evictions int
	cleared   bool // pressure gone and backoff passed: the worker starts the pod again
}

// NodeConditions returns the pressure conditions the eviction loop last decided (all False,
// with a zero time, when eviction is off or nothing was observed yet).
func (m *Manager) NodeConditions() map[corev1.NodeConditionType]ConditionState {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[corev1.NodeConditionType]ConditionState{}
	for k, v := range m.conditions {
		out[k] = v
	}
	return out
}

func (m *Manager) runEvictor(ctx context.Context) {
	ec := m.cfg.Eviction
	iv := ec.Interval
	if iv <= 0 {
		iv = EvictionMonitorInterval
	}
	tr := ec.Transition
	if tr <= 0 {
		tr = PressureTransitionPeriod
	}
	var st PressureState
	t := time.NewTicker(iv)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return
	case <-m.ready:
	}
	for {
		m.evictOnce(ctx, &st, tr, iv, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// evictOnce is one round of the eviction loop.
func (m *Manager) evictOnce(ctx context.Context, st *PressureState, transition, interval time.Duration, now time.Time) {
	ec := m.cfg.Eviction
	obs, err := ec.Observe()
	if err != nil {
		m.log.Warn("eviction: cannot observe the node", "err", err)
		if obs == nil {
			return
		}
	}
	d := ObservePressure(st, ec.Hard, ec.Soft, obs, transition, now)
	m.mu.Lock()
	for c, s := range d.Conditions {
		if old := m.conditions[c]; old.True != s.True {
			m.log.Info("node condition changed", "condition", string(c), "status", s.True)
		}
	}
	m.conditions = d.Conditions
	changed := false
	// Evicted pods whose pressure is gone start again after their backoff.
	for uid, mk := range m.evicted {
		if mk.cleared || d.Conditions[mk.cond].True {
			continue
		}
		gone := d.Conditions[mk.cond].Since
		if gone.Before(mk.at) {
			gone = mk.at
		}
		if now.Sub(gone) >= RestartAfterEviction(interval, mk.evictions) {
			mk.cleared = true
			changed = true
			if w := m.workers[uid]; w != nil {
				w.wake()
			}
		}
	}
	m.mu.Unlock()
	if changed {
		m.saveEvictions()
	}
	if len(d.Act) == 0 {
		return
	}
	th := d.Act[0]
	for _, t := range d.Act { // memory first: it hurts the most
		if t.Signal == SignalMemoryAvailable {
			th = t
			break
		}
	}
	if th.Signal != SignalMemoryAvailable && ec.Reclaim != nil {
		if err := ec.Reclaim(ctx); err != nil {
			m.log.Warn("eviction: node-level reclaim", "err", err)
		}
		if again, err := ec.Observe(); err == nil && len(ThresholdsMet([]Threshold{th}, again)) == 0 {
			m.log.Info("eviction: node-level reclaim relieved the pressure", "signal", string(th.Signal))
			return
		}
	}
	var cands []Candidate
	usage := map[types.UID]PodUsage{}
	for _, p := range m.Pods() {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		m.mu.Lock()
		_, done := m.evicted[p.UID]
		_, live := m.workers[p.UID]
		m.mu.Unlock()
		if done || !live {
			continue
		}
		c := Candidate{Pod: p, Request: RequestFor(p, th.Signal)}
		if ec.Usage != nil {
			if u, ok := ec.Usage(p, th.Signal); ok {
				c.Usage, usage[p.UID] = u.Total, u
			}
		}
		cands = append(cands, c)
	}
	ranked := RankForEviction(cands)
	if len(ranked) == 0 {
		m.log.Warn("eviction: threshold met but no pod may be evicted", "threshold", th.String())
		return
	}
	victim := ranked[0].Pod
	msg := EvictionMessage(th, obs[th.Signal], victim, usage[victim.UID])
	m.mu.Lock()
	if m.evicted == nil {
		m.evicted = map[types.UID]*evictMark{}
	}
	n := 1
	if old := m.evictions[victim.UID]; old > 0 {
		n = old + 1
	}
	if m.evictions == nil {
		m.evictions = map[types.UID]int{}
	}
	m.evictions[victim.UID] = n
	m.evicted[victim.UID] = &evictMark{message: msg, cond: ConditionFor(th.Signal), at: now, evictions: n}
	w := m.workers[victim.UID]
	m.mu.Unlock()
	m.saveEvictions()
	m.log.Warn("evicting pod", "pod", victim.Namespace+"/"+victim.Name, "threshold", th.String(), "message", msg)
	m.rec.Eventf(victim, "", EventWarning, "Evicted", "%s", msg)
	metrics.Evictions.WithLabelValues(string(th.Signal)).Inc()
	if w != nil {
		w.wake()
	}
}

// evictionHold is the worker's hook: true while its pod is evicted (containers stopped, status
// Failed/Evicted); when the eviction has cleared it removes the old containers so that the pod
// starts again from scratch, and returns again: observe anew.
func (w *worker) evictionHold(ctx context.Context, pod *corev1.Pod, v PodView) (hold, again bool) {
	w.m.mu.Lock()
	mk := w.m.evicted[w.uid]
	var cleared bool
	var msg string
	if mk != nil {
		cleared, msg = mk.cleared, mk.message
		if cleared {
			delete(w.m.evicted, w.uid)
		} else if w.m.admitted != nil {
			// An evicted pod requests nothing of the node any more: it is admitted anew when it
			// starts again.
			delete(w.m.admitted, string(w.uid))
		}
	}
	w.m.mu.Unlock()
	if mk == nil {
		return false, false
	}
	if cleared {
		w.m.saveEvictions()
		w.log.Info("pressure gone: starting the evicted pod again")
		if err := w.removeAll(ctx, v); err != nil {
			w.log.Warn("remove the evicted pod's containers", "err", err)
		}
		w.startTime = time.Now()
		w.restarts = map[string]*restartMemo{}
		w.m.rec.Eventf(pod, "", EventNormal, "Restarted", "Starting the pod again after its eviction: the node condition has cleared")
		return false, true
	}
	if nv, stopped := w.stopPodForGood(ctx, pod, v, 0); stopped {
		v = nv
	}
	out := pod.DeepCopy()
	out.Status = BuildStatus(w.statusInput(pod, v, failedPlan(), false))
	out.Status.Phase, out.Status.Reason, out.Status.Message = corev1.PodFailed, "Evicted", msg
	for i := range out.Status.Conditions {
		if out.Status.Conditions[i].Type == corev1.PodReady || out.Status.Conditions[i].Type == corev1.ContainersReady {
			out.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	out.Status.Conditions = append(out.Status.Conditions, corev1.PodCondition{Type: "DisruptionTarget", Status: corev1.ConditionTrue, Reason: "TerminationByKubelet", Message: msg, LastTransitionTime: metav1.Now()})
	w.m.setStatus(out)
	return true, false
}

// stopPodForGood stops whatever of the pod runs (probes, containers with grace, sandboxes) for a
// pod that is not to run again (evicted, past its deadline). It returns the view after the stop
// and true when anything ran.
func (w *worker) stopPodForGood(ctx context.Context, pod *corev1.Pod, v PodView, grace time.Duration) (PodView, bool) {
	if !v.Running() && !sandboxRunning(v) {
		return v, false
	}
	w.m.probes.StopPod(string(w.uid), nil)
	w.stopContainers(ctx, pod, v, grace)
	for _, sb := range v.Sandboxes {
		if sb.State == StateRunning {
			_ = w.m.rt.StopContainer(ctx, sb.ID, 0)
		}
	}
	if nv, err := w.observe(ctx); err == nil {
		v = nv
	}
	return v, true
}

// failedPlan is the plan of a pod that is over: phase Failed, nothing waiting.
func failedPlan() Plan { return Plan{Phase: corev1.PodFailed, Waiting: map[string]Waiting{}} }

func sandboxRunning(v PodView) bool {
	for _, sb := range v.Sandboxes {
		if sb.State == StateRunning {
			return true
		}
	}
	return false
}
