package podrunner

import (
	corev1 "k8s.io/api/core/v1"
)

// Held pods: after an agent restart, a pod found running whose manifest is rejected now (so no
// good content of it is known) is neither adopted nor terminated: it keeps running untouched
// until its manifest is fixed (then it is replaced by the fixed pod, which waits for it as any
// new instance does) or deleted (then it is terminated).

// UpdateHeld hands the manager the namespace/name of the pods that rejected manifests seem to
// declare (watcher.Snapshot.Held). Call it before Update with the same snapshot. Never blocks.
func (m *Manager) UpdateHeld(keys []string) {
	set := make(map[string]bool, len(keys))
	for _, k := range keys {
		set[k] = true
	}
	m.heldNames.Store(&set)
}

func (m *Manager) isHeld(key string) bool {
	if s := m.heldNames.Load(); s != nil {
		return (*s)[key]
	}
	return false
}

// holdLocked keeps an orphan found at start running when its name is held, and reports whether
// it did. Called with m.mu held.
func (m *Manager) holdLocked(orphan *corev1.Pod) bool {
	key := orphan.Namespace + "/" + orphan.Name
	if !m.isHeld(key) {
		return false
	}
	if m.held == nil {
		m.held = map[string]*corev1.Pod{}
	}
	m.held[key] = orphan
	m.log.Warn("keeping a running pod whose manifest is rejected; fix the manifest to replace it, delete it to stop it",
		"pod", key, "uid", string(orphan.UID))
	return true
}

// releaseHeldLocked terminates the held pods whose name is no longer held (the manifest was fixed
// or deleted) or is now declared by a good manifest (wanted). Called with m.mu held, before new
// pods are started, so that a new instance of the name waits for the held one.
func (m *Manager) releaseHeldLocked(wanted map[string]*corev1.Pod) {
	for key, p := range m.held {
		if _, declared := wanted[key]; !declared && m.isHeld(key) {
			continue
		}
		delete(m.held, key)
		m.log.Info("terminating a held pod: its manifest was fixed or removed", "pod", key, "uid", string(p.UID))
		w := newWorker(m, p)
		w.terminate = true
		m.startWorkerLocked(w)
	}
}

// heldPodsLocked lists the held pods for readers: Running as found, with the ManifestValid=False
// condition saying why nothing manages them. Called with m.mu held.
func (m *Manager) heldPodsLocked() []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range m.held {
		q := p.DeepCopy()
		q.Spec = corev1.PodSpec{}
		q.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{
			Type: ConditionManifestValid, Status: corev1.ConditionFalse, Reason: ReasonManifestInvalid,
			Message: "found running at start while its manifest is rejected: kept untouched until the manifest is fixed or deleted",
		}}}
		out = append(out, q)
	}
	return out
}
