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
// interval (RankForEviction). An evicted pod's containers are stopped with EvictionGrace and the pod
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
	// LocalStorage reads what a pod wrote, for its local storage limits (LocalStorageViolation):
	// what cannot be read is left out of the usage (not checked); false when nothing is known.
	// Nil: local storage limits are not enforced. It is called only for pods with such a limit
	// (HasLocalStorageLimit).
	LocalStorage func(pod *corev1.Pod) (LocalStorageUsage, bool)
	// Release frees an evicted pod's local volumes (its emptyDir volumes: the kubelet tears down
	// the volumes of a pod that is over) once its containers have stopped; idempotent. Nil:
	// nothing is freed until the pod goes away.
	Release func(pod *corev1.Pod) error
}

// evictMark is an evicted pod's record, kept by the manager.
type evictMark struct {
	message   string
	cond      corev1.NodeConditionType // "": evicted for a local storage limit, no node condition
	at        time.Time
	evictions int
	cleared   bool // pressure gone and backoff passed: the worker starts the pod again
	released  bool // its local volumes were freed (not saved: Release is idempotent)
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
	// Local storage limits come first and, when they evicted a pod, end the round, as the
	// kubelet's.
	if m.evictForLocalStorage(now) {
		return
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
	for _, p := range m.evictionCandidates() {
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
	m.evict(victim, th.Signal, ConditionFor(th.Signal), msg, now, "threshold", th.String())
}

// evictionCandidates are the running pods that may be evicted and are not evicted already.
func (m *Manager) evictionCandidates() []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range m.Pods() {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || !Evictable(p) {
			continue
		}
		m.mu.Lock()
		_, done := m.evicted[p.UID]
		_, live := m.workers[p.UID]
		m.mu.Unlock()
		if !done && live {
			out = append(out, p)
		}
	}
	return out
}

// evictForLocalStorage evicts every pod over a local storage limit (LocalStorageViolation), as
// the kubelet does apart from any node pressure, and reports whether it evicted any.
func (m *Manager) evictForLocalStorage(now time.Time) bool {
	ec := m.cfg.Eviction
	if ec.LocalStorage == nil {
		return false
	}
	evicted := false
	for _, p := range m.evictionCandidates() {
		if !HasLocalStorageLimit(p) {
			continue
		}
		u, ok := ec.LocalStorage(p)
		if !ok {
			continue
		}
		if s, msg, over := LocalStorageViolation(p, u); over {
			m.evict(p, s, "", msg, now, "limit", string(s))
			evicted = true
		}
	}
	return evicted
}

// evict marks pod evicted (for signal s; cond is the node condition whose end lets it start
// again, "" for none) and wakes its worker, which stops it.
func (m *Manager) evict(pod *corev1.Pod, s Signal, cond corev1.NodeConditionType, msg string, now time.Time, logKV ...any) {
	m.mu.Lock()
	if m.evicted == nil {
		m.evicted = map[types.UID]*evictMark{}
	}
	if m.evictions == nil {
		m.evictions = map[types.UID]int{}
	}
	n := m.evictions[pod.UID] + 1
	m.evictions[pod.UID] = n
	m.evicted[pod.UID] = &evictMark{message: msg, cond: cond, at: now, evictions: n}
	w := m.workers[pod.UID]
	m.mu.Unlock()
	m.saveEvictions()
	m.log.Warn("evicting pod", append([]any{"pod", pod.Namespace + "/" + pod.Name, "message", msg}, logKV...)...)
	m.rec.Eventf(pod, "", EventWarning, "Evicted", "%s", msg)
	metrics.Evictions.WithLabelValues(string(s)).Inc()
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
	var cleared, released bool
	var msg string
	var cond corev1.NodeConditionType
	if mk != nil {
		cleared, released, msg, cond = mk.cleared, mk.released, mk.message, mk.cond
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
		why := "the node condition has cleared"
		if cond == "" {
			why = "its backoff has passed"
		}
		w.log.Info("starting the evicted pod again: " + why)
		if err := w.removeAll(ctx, v); err != nil {
			w.log.Warn("remove the evicted pod's containers", "err", err)
		}
		w.startTime = time.Now()
		w.restarts = map[string]*restartMemo{}
		w.m.rec.Eventf(pod, "", EventNormal, "Restarted", "Starting the pod again after its eviction: %s", why)
		return false, true
	}
	if nv, stopped := w.stopPodForGood(ctx, pod, v, EvictionGrace); stopped {
		v = nv
	}
	if rel := w.m.cfg.Eviction; !released && rel != nil && rel.Release != nil && !v.Running() && !sandboxRunning(v) {
		if err := rel.Release(pod); err != nil {
			w.log.Warn("free the evicted pod's local volumes", "err", err)
		} else {
			w.m.mu.Lock()
			mk.released = true
			w.m.mu.Unlock()
		}
	}
	out := pod.DeepCopy()
	out.Status = BuildStatus(w.statusInput(pod, v, failedPlan(), false))
	out.Status.Phase, out.Status.Reason, out.Status.Message = corev1.PodFailed, "Evicted", msg
	for i := range out.Status.Conditions {
		if out.Status.Conditions[i].Type == corev1.PodReady || out.Status.Conditions[i].Type == corev1.ContainersReady {
			out.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	if cond != "" { // the kubelet sets no DisruptionTarget for a local storage limit
		out.Status.Conditions = append(out.Status.Conditions, corev1.PodCondition{Type: "DisruptionTarget", Status: corev1.ConditionTrue, Reason: "TerminationByKubelet", Message: msg, LastTransitionTime: metav1.Now()})
	}
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
