package podrunner

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// activeDeadlineSeconds, as the kubelet enforces it: a pod active on the node for that long
// since its start is failed with reason DeadlineExceeded, its containers stopped (with the
// pod's grace and preStop hooks) and never started again; its manifest has to change (a new
// pod) for it to run again.

const (
	ReasonDeadlineExceeded = "DeadlineExceeded"
	MessageDeadline        = "Pod was active on the node longer than the specified deadline"
)

// PastActiveDeadline says whether a pod that started at start has been active at now for its
// activeDeadlineSeconds or longer; when it has not, it returns when it will be (zero: no
// deadline, or no start yet). Pure.
func PastActiveDeadline(pod *corev1.Pod, start, now time.Time) (bool, time.Time) {
	d := pod.Spec.ActiveDeadlineSeconds
	if d == nil || start.IsZero() {
		return false, time.Time{}
	}
	at := start.Add(time.Duration(*d) * time.Second)
	if !now.Before(at) {
		return true, time.Time{}
	}
	return false, at
}

// adoptStartTime takes the pod's start from its oldest sandbox when the worker finds the pod
// already there (an agent restart), so that status.startTime and the active deadline count from
// the pod's real start and not from the agent's. The kubelet without an API server starts both
// again at its own start; a pod failed for its deadline then ran again.
func (w *worker) adoptStartTime(v PodView) {
	if w.startAdopted {
		return
	}
	w.startAdopted = true
	for _, sb := range v.Sandboxes {
		if !sb.CreatedAt.IsZero() && sb.CreatedAt.Before(w.startTime) {
			w.startTime = sb.CreatedAt
		}
	}
}

// deadlineHold is the worker's hook: true once the pod is past its active deadline (status
// Failed/DeadlineExceeded, containers stopped); otherwise also when the deadline falls (zero:
// none), for the worker to wake up then.
func (w *worker) deadlineHold(ctx context.Context, pod *corev1.Pod, v PodView, now time.Time) (bool, time.Time) {
	if !w.deadlineHit {
		past, at := PastActiveDeadline(pod, w.startTime, now)
		if !past {
			return false, at
		}
		if ph := PodPhase(pod, v); ph == corev1.PodSucceeded || ph == corev1.PodFailed {
			// Over before its deadline: a finished pod keeps its own end (the kubelet never moves
			// a pod out of a terminal phase).
			return false, time.Time{}
		}
		w.deadlineHit = true
		w.log.Warn("pod past its active deadline: stopping it", "activeDeadlineSeconds", *pod.Spec.ActiveDeadlineSeconds, "started", w.startTime)
		w.m.rec.Eventf(pod, "", EventNormal, ReasonDeadlineExceeded, "%s", MessageDeadline)
	}
	w.publishDeadline(pod, v)
	if nv, stopped := w.stopPodForGood(ctx, pod, v, gracePeriod(pod)); stopped {
		w.publishDeadline(pod, nv)
	}
	return true, time.Time{}
}

func (w *worker) publishDeadline(pod *corev1.Pod, v PodView) {
	out := pod.DeepCopy()
	out.Status = BuildStatus(w.statusInput(pod, v, failedPlan(), false))
	out.Status.Reason, out.Status.Message = ReasonDeadlineExceeded, MessageDeadline
	w.m.setStatus(out)
}
