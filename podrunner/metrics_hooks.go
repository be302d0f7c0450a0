package podrunner

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/podrunner/metrics"
)

// observeStartLocked records a pod's start latency (manifest seen -> all containers running)
// the first time its status shows every container running. Caller holds m.mu.
func (m *Manager) observeStartLocked(p *corev1.Pod, seen time.Time) {
	if m.started[p.UID] || !allRunning(p) {
		return
	}
	m.started[p.UID] = true
	metrics.PodStartDuration.Observe(time.Since(seen).Seconds())
}

// allRunning: the pod is Running and each of its app containers has a running state.
func allRunning(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

// PodLister adapts the manager to metrics.NewPodCollector.
func (m *Manager) PodLister() metrics.PodLister { return m.Pods }
