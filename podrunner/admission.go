package podrunner

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkeeper/podkeeper/cgroup"
)

// Admission: with Config.Allocatable set, a pod starts only when its CPU and memory requests fit
// in the node's allocatable next to the pods already admitted, as the kubelet admits pods. A pod
// that does not fit is Failed with reason OutOf<resource> and the kubelet's message; unlike the
// kubelet (which never looks at a rejected static pod again) podkeeper re-checks it every 10 s
// and whenever another pod ends, and starts it once room has freed up. A pod found running (after
// a podkeeper restart) is admitted as it is.

// AdmissionRetry is how often a rejected pod is checked again.
const AdmissionRetry = 10 * time.Second

// PodRequests is what a pod asks of the node, per resource: its pod-level request where set,
// else the larger of the sum over its app containers and sidecars and the largest init container
// (with the sidecars before it); a missing request counts its limit (cgroup.PodRequests).
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	return cgroup.PodRequests(pod)
}

// Admit decides whether pod fits next to the admitted pods in allocatable. On refusal it returns
// the kubelet's reason (OutOfcpu, OutOfmemory, OutOfpods) and message. Pure.
func Admit(pod *corev1.Pod, admitted []*corev1.Pod, allocatable corev1.ResourceList) (ok bool, reason, message string) {
	if maxPods, has := allocatable[corev1.ResourcePods]; has && int64(len(admitted)+1) > maxPods.Value() {
		return false, "OutOfpods", fmt.Sprintf("Node didn't have enough resource: pods, requested: 1, used: %d, capacity: %d", len(admitted), maxPods.Value())
	}
	want := PodRequests(pod)
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		alloc, has := allocatable[name]
		req, asks := want[name]
		if !has || !asks {
			continue
		}
		var used resource.Quantity
		for _, p := range admitted {
			if q, ok := PodRequests(p)[name]; ok {
				used.Add(q)
			}
		}
		total := used.DeepCopy()
		total.Add(req)
		if total.Cmp(alloc) > 0 {
			val := func(q resource.Quantity) int64 {
				if name == corev1.ResourceCPU {
					return q.MilliValue()
				}
				return q.Value()
			}
			return false, "OutOf" + string(name), fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
				name, val(req), val(used), val(alloc))
		}
	}
	return true, "", ""
}

// Allocatable is capacity minus the reservations and the hard eviction threshold (memory), never
// below zero: what pods may request.
func Allocatable(capacity corev1.ResourceList, reserved ...corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range capacity {
		v := q.DeepCopy()
		for _, r := range reserved {
			if rq, ok := r[name]; ok {
				v.Sub(rq)
			}
		}
		if v.Sign() < 0 {
			v = *resource.NewQuantity(0, q.Format)
		}
		out[name] = v
	}
	return out
}

// admit asks the manager whether the worker's pod may start. Admitted pods stay admitted until
// their worker ends.
// The checks run in the kubelet's order and the first refusal is the reason: the OS, then
// resources (only with an allocatable: --admission), then node selector and affinity, then host
// ports.
func (m *Manager) admit(w *worker, pod *corev1.Pod, running bool) (bool, string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.admitted == nil {
		m.admitted = map[string]*corev1.Pod{}
	}
	if _, ok := m.admitted[string(w.uid)]; ok {
		return true, "", ""
	}
	if !running {
		others := make([]*corev1.Pod, 0, len(m.admitted))
		for _, p := range m.admitted {
			others = append(others, p)
		}
		if ok, reason, msg := AdmitOS(pod); !ok {
			return false, reason, msg
		}
		if m.cfg.Allocatable != nil {
			if ok, reason, msg := Admit(pod, others, m.cfg.Allocatable); !ok {
				return false, reason, msg
			}
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: m.cfg.NodeName, Labels: m.cfg.NodeLabels}}
		if ok, reason, msg := AdmitPlacement(pod, node, others); !ok {
			return false, reason, msg
		}
	}
	m.admitted[string(w.uid)] = pod
	return true, "", ""
}

// releaseAdmission forgets an ended worker's pod and wakes the rejected ones: room may have freed.
// Called with m.mu held.
func (m *Manager) releaseAdmissionLocked(w *worker) {
	if m.admitted == nil {
		return
	}
	delete(m.admitted, string(w.uid))
	for uid, o := range m.workers {
		if _, ok := m.admitted[string(uid)]; !ok && o != w {
			o.wake()
		}
	}
}

// admitted checks admission before the worker acts; a rejected pod is published Failed with the
// reason (one Warning event per rejection reason) and checked again later.
func (w *worker) admitted(pod *corev1.Pod, v PodView) bool {
	running := v.Running()
	if !running {
		for _, r := range v.Sandboxes {
			if r.State == StateRunning {
				running = true
			}
		}
	}
	ok, reason, msg := AdmitAppArmor(pod, w.m.cfg.AppArmorHost)
	if ok {
		ok, reason, msg = AdmitSELinux(pod, w.m.cfg.SELinuxHost)
	}
	if ok {
		ok, reason, msg = w.m.cfg.Sysctls.AdmitSysctls(pod)
	}
	if ok {
		ok, reason, msg = w.m.admit(w, pod, running)
	}
	if ok {
		w.rejected = ""
		return true
	}
	if w.rejected != reason {
		w.rejected = reason
		w.log.Warn("pod rejected", "reason", reason, "message", msg)
		w.m.rec.Eventf(pod, "", corev1.EventTypeWarning, reason, "%s", msg)
	}
	out := pod.DeepCopy()
	st := metav1.NewTime(w.startTime)
	out.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: reason, Message: "Pod was rejected: " + msg, StartTime: &st, HostIP: w.m.cfg.HostIP,
		QOSClass: cgroup.QOSClass(pod)} // the kubelet's rejected pods show it too (make conformance)
	w.m.setStatus(out)
	return false
}
