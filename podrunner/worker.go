package podrunner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkeeper/podkeeper/podrunner/metrics"
)

// worker is the single owner of one pod (one UID). It goes through three phases:
//
//	running ──(manifest gone or changed)──▶ terminating ──(all containers gone)──▶ terminated
//
// Nothing else writes the pod's containers. The manager hands it the latest desired spec (latest
// wins), wakes it on exits, and it plans and acts until the plan asks for nothing, then sleeps
// until the next exit, backoff expiry or resync.
type worker struct {
	m        *Manager
	uid      types.UID
	fullName string
	log      *slog.Logger
	wakeC    chan struct{}
	done     chan struct{}

	mu        sync.Mutex
	desired   *corev1.Pod
	terminate bool
	// aborts end the long waits in flight (image pulls, a sandbox's creation, a postStart hook:
	// see abortable): a pod being removed or replaced must not wait for a registry that stopped
	// sending, a CNI plugin that never returns or a hook that hangs.
	aborts   map[int]context.CancelFunc
	abortSeq int

	// Owned by the worker goroutine only.
	startTime   time.Time
	restarts    map[string]*restartMemo // container name -> backoff memory
	pulls       map[string]*retryMemo   // image -> pull backoff memory
	configErrs  map[string]*retryMemo   // container name -> start failures nothing was kept of
	interrupts  map[string]*retryMemo   // container name -> starts an interrupted earlier create blocked
	killedByUs  map[string]bool         // instances podkeeper stopped itself: no backoff charged
	probeKilled map[string]bool         // instances stopped for a failed liveness or startup probe (their records' ProbeKilled)
	reported    map[string]bool         // exited instances whose BackOff event was recorded
	imgWaiting  map[string]Waiting      // container name -> pull or config problem, until it starts
	runErrs     map[string]Waiting      // container name -> its last start's failure (RunContainerError, PostStartHookError), shown during its back-off until the next attempt
	rejected    string                  // admission refusal reason last reported (admission.go)
	// deadline.go: the start taken from the pod's sandbox once; the active deadline passed.
	startAdopted, deadlineHit bool
}

// restartMemo remembers the backoff decision for the newest exited instance of a container.
type restartMemo struct {
	forID     string
	notBefore time.Time
	state     BackoffState
}

// retryMemo remembers repeated failures of one thing (an image pull, a container's config).
type retryMemo struct {
	notBefore time.Time
	state     BackoffState
	lastErr   string
	reason    string // the waiting reason (lastErr its message): an ImageError's, ContainerCreating for a VolumeError, the start failure's; empty: the memo's default (a pull failure)
}

func newWorker(m *Manager, pod *corev1.Pod) *worker {
	return &worker{
		m:           m,
		uid:         pod.UID,
		fullName:    pod.Namespace + "/" + pod.Name,
		log:         m.log.With("pod", pod.Namespace+"/"+pod.Name, "uid", string(pod.UID)),
		wakeC:       make(chan struct{}, 1),
		done:        make(chan struct{}),
		desired:     pod,
		startTime:   time.Now(),
		restarts:    map[string]*restartMemo{},
		pulls:       map[string]*retryMemo{},
		configErrs:  map[string]*retryMemo{},
		interrupts:  map[string]*retryMemo{},
		killedByUs:  map[string]bool{},
		probeKilled: map[string]bool{},
		reported:    map[string]bool{},
		imgWaiting:  map[string]Waiting{},
		runErrs:     map[string]Waiting{},
	}
}

// update hands the worker a newer spec of the same pod. Latest wins.
func (w *worker) update(pod *corev1.Pod) {
	w.mu.Lock()
	w.desired = pod
	w.mu.Unlock()
	w.wake()
}

// setDesired replaces the desired pod without a sync (an equal spec).
func (w *worker) setDesired(pod *corev1.Pod) {
	w.mu.Lock()
	w.desired = pod
	w.mu.Unlock()
}

// stop moves the worker to terminating, ending the long waits in flight (image pulls, a
// sandbox's creation, a postStart hook: see abortable), as the kubelet cancels a pod's sync when
// it is deleted. Idempotent.
func (w *worker) stop() {
	w.mu.Lock()
	w.terminate = true
	for _, cancel := range w.aborts {
		cancel()
	}
	w.mu.Unlock()
	w.wake()
}

// abortable is ctx for one long wait (an image pull, a sandbox's creation, a postStart hook),
// ended by stop; done must be called when the wait returns (nothing may use actx after), and
// reports whether stop ended it (ctx itself still on).
func (w *worker) abortable(ctx context.Context) (actx context.Context, done func() (stopped bool)) {
	actx, cancel := context.WithCancel(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	id := 0
	if w.terminate {
		cancel()
	} else {
		if w.aborts == nil {
			w.aborts = map[int]context.CancelFunc{}
		}
		w.abortSeq++
		id = w.abortSeq
		w.aborts[id] = cancel
	}
	return actx, func() bool {
		w.mu.Lock()
		delete(w.aborts, id)
		w.mu.Unlock()
		stopped := actx.Err() != nil && ctx.Err() == nil
		cancel()
		return stopped
	}
}

// errStopped marks a sandbox creation ended by stop: no failure to report.
var errStopped = errors.New("ended: the pod is being removed or replaced")

func (w *worker) wake() {
	select {
	case w.wakeC <- struct{}{}:
	default:
	}
}

func (w *worker) state() (*corev1.Pod, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.desired, w.terminate
}

func (w *worker) run(ctx context.Context) {
	defer close(w.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		pod, terminate := w.state()
		if terminate {
			w.terminatePod(ctx, pod)
			return
		}
		syncStart := time.Now()
		next := w.sync(ctx, pod)
		metrics.SyncDuration.Observe(time.Since(syncStart).Seconds())
		if ctx.Err() != nil {
			return
		}
		d := w.m.cfg.Resync
		if !next.IsZero() {
			if until := time.Until(next); until < d {
				d = until
			}
		}
		if d < 0 {
			d = 0
		}
		timer.Reset(d)
		select {
		case <-ctx.Done():
			return
		case <-w.wakeC:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// observe lists the pod's containers and records the exits of those whose task has stopped. Their
// tasks stay until releaseExited, which the sync runs after acting on the view: a replacement's
// start does not wait for the old task's delete.
func (w *worker) observe(ctx context.Context) (PodView, error) {
	recs, err := w.m.rt.ListContainers(ctx, string(w.uid))
	if err != nil {
		return PodView{}, err
	}
	for i, r := range recs {
		// An exit not recorded yet: its task stopped, or is gone (the pod's shim died).
		if r.State == StateExited && (r.TaskPresent || r.TaskLost) && !r.ExitRecorded {
			fin, err := w.m.rt.RecordExit(ctx, r.ID)
			if err != nil {
				w.log.Warn("record exit", "container", r.Name, "id", r.ID, "err", err)
				continue
			}
			if fin.State != StateExited {
				continue // (not recorded: the list's view of it stands)
			}
			fin.CreatedAt, fin.ImageID = r.CreatedAt, r.ImageID
			recs[i] = fin
			if r.Kind != KindSandbox {
				w.log.Info("container exited", "container", r.Name, "exitCode", fin.ExitCode, "restartCount", fin.Attempt)
			}
		}
	}
	forgetGone(w.killedByUs, recs)
	forgetGone(w.probeKilled, recs)
	forgetGone(w.reported, recs)
	for i := range recs {
		recs[i].ProbeKilled = w.probeKilled[recs[i].ID]
	}
	return NewPodView(recs), nil
}

// releaseExited deletes the tasks of the exited containers of v (shim resources, FIFOs); the
// containers stay for lastState and `logs --previous`. A failure is retried at the next sync.
func (w *worker) releaseExited(ctx context.Context, v PodView) {
	release := func(r ContainerRecord) {
		if r.State != StateExited || !r.TaskPresent {
			return
		}
		if _, err := w.m.rt.Finalize(ctx, r.ID); err != nil && !errors.Is(err, ErrNotFound) {
			w.log.Warn("release exited task", "container", r.Name, "id", r.ID, "err", err)
		}
	}
	for _, rs := range v.Containers {
		for _, r := range rs {
			release(r)
		}
	}
	for _, r := range v.Sandboxes {
		release(r)
	}
}

// forgetGone drops the entries of set whose container no longer exists, so the worker's
// memory of a long crash loop stays as small as the pod's record.
func forgetGone(set map[string]bool, recs []ContainerRecord) {
	if len(set) == 0 {
		return
	}
	live := make(map[string]bool, len(recs))
	for _, r := range recs {
		live[r.ID] = true
	}
	for id := range set {
		if !live[id] {
			delete(set, id)
		}
	}
}

// gate computes, once per exited instance, when it may be replaced (CrashLoopBackOff). An
// instance killed for a failed probe that restarts for the kill (ProbeKillRestarts) is paced by
// ProbeKillDelay; one that restarts only for its exit (a restartPolicyRules match), as a crash.
func (w *worker) gate(pod *corev1.Pod, v PodView, now time.Time) RestartGate {
	for name, rs := range v.Containers {
		latest := rs[0]
		if latest.State != StateExited {
			continue
		}
		memo := w.restarts[name]
		if memo == nil {
			// After a podkeeper restart the memory is gone: charge the restarts already made.
			memo = &restartMemo{state: BackoffState{Restarts: latest.Attempt}}
			w.restarts[name] = memo
		}
		if memo.forID == latest.ID {
			continue
		}
		finished := latest.FinishedAt
		if finished.IsZero() {
			finished = now
		}
		memo.forID = latest.ID
		if w.killedByUs[latest.ID] {
			memo.notBefore = time.Time{}
			continue
		}
		delay, next := w.m.cfg.Backoff.Next(memo.state, latest.StartedAt, finished)
		if c := specOf(pod, name); latest.ProbeKilled && c != nil && ProbeKillRestarts(pod, c) {
			var prev *ContainerRecord
			if len(rs) > 1 && rs[1].State == StateExited {
				prev = &rs[1]
			}
			delay, next = ProbeKillDelay(w.m.cfg.Backoff, memo.state, latest.StartedAt, finished, prev)
		}
		memo.state = next
		memo.notBefore = finished.Add(delay)
	}
	return func(r ContainerRecord) time.Time {
		if m := w.restarts[r.Name]; m != nil && m.forID == r.ID {
			return m.notBefore
		}
		return time.Time{}
	}
}

// sync brings the pod one step at a time towards its spec and publishes its status. It returns
// when the next change is due by itself (zero: none).
func (w *worker) sync(ctx context.Context, pod *corev1.Pod) time.Time {
	w.refreshVolumes(pod)
	for step := 0; step < 8; step++ {
		now := time.Now()
		v, err := w.observe(ctx)
		if err != nil {
			w.log.Warn("cannot read pod state from the runtime", "err", err)
			return now.Add(2 * time.Second)
		}
		next, again := w.step(ctx, pod, v, now)
		if !again {
			w.releaseExited(ctx, v)
			return next
		}
		// Acted (a replacement started, say): the exited tasks are released once the next step
		// has published the new state, so that neither the start nor its status waits for them.
	}
	if v, err := w.observe(ctx); err == nil {
		w.releaseExited(ctx, v)
	}
	return time.Now()
}

// step acts once on the view v: it returns whether to observe and act again at once, else when
// the next change is due by itself (zero: none).
func (w *worker) step(ctx context.Context, pod *corev1.Pod, v PodView, now time.Time) (time.Time, bool) {
	if hold, again := w.evictionHold(ctx, pod, v); hold {
		return now.Add(time.Minute), false // woken when the eviction clears
	} else if again {
		return time.Time{}, true
	}
	w.adoptStartTime(v)
	hold, deadline := w.deadlineHold(ctx, pod, v, now)
	if hold {
		return time.Time{}, false // for good: only a new manifest (a new pod) runs again
	}
	if !w.admitted(pod, v) {
		return now.Add(AdmissionRetry), false
	}
	if w.syncProbes(ctx, pod, v) {
		return time.Time{}, true // a container failed its liveness probe and was stopped: look again
	}
	plan := PlanPodProbed(pod, v, w.gate(pod, v, now), w.probeStatus, now)
	w.noteBackoffs(pod, plan)
	w.publish(pod, v, plan, false)
	acted, retryAt := w.execute(ctx, pod, v, plan)
	if acted {
		return time.Time{}, true
	}
	if len(w.imgWaiting) > 0 {
		w.publish(pod, v, plan, false)
	}
	wake := plan.WakeAt
	for _, t := range []time.Time{retryAt, deadline} {
		if !t.IsZero() && (wake.IsZero() || t.Before(wake)) {
			wake = t
		}
	}
	return wake, false
}

// noteBackoffs records a BackOff event once per exited instance kept waiting.
func (w *worker) noteBackoffs(pod *corev1.Pod, plan Plan) {
	for name, wt := range plan.Waiting {
		if wt.Reason != ReasonCrashLoopBackOff {
			continue
		}
		memo := w.restarts[name]
		if memo == nil || w.reported[memo.forID] {
			continue
		}
		w.reported[memo.forID] = true
		w.m.rec.Eventf(pod, name, EventWarning, ReasonBackOff, "Back-off restarting failed container %s in pod %s", name, pod.Name)
	}
}

// execute performs a plan. It reports whether anything changed (plan again) and, when an action
// failed, when to try again.
func (w *worker) execute(ctx context.Context, pod *corev1.Pod, v PodView, plan Plan) (bool, time.Time) {
	acted := false
	for _, id := range plan.Remove {
		if err := w.m.rt.RemoveContainer(ctx, id); err != nil {
			w.log.Warn("remove old container", "id", id, "err", err)
		}
	}
	switch {
	case plan.KillPod:
		w.m.rec.Eventf(pod, "", EventNormal, ReasonSandboxChanged, "Pod sandbox changed, it will be killed and re-created.")
		w.stopContainers(ctx, pod, v, gracePeriod(pod))
		return true, time.Time{}
	case plan.Reset != nil:
		w.resetPod(ctx, pod, plan)
		return true, time.Time{}
	case len(plan.StopSidecars) > 0:
		// The app containers are done: the sidecars stop, in reverse order, then the sandbox.
		stop := PodView{Containers: map[string][]ContainerRecord{}}
		for _, id := range plan.StopSidecars {
			for name, rs := range v.Containers {
				if rs[0].ID == id {
					stop.Containers[name] = rs[:1]
				}
			}
		}
		w.stopContainers(ctx, pod, stop, gracePeriod(pod))
		return true, time.Time{}
	case plan.StopSandbox:
		if sb, ok := v.Sandbox(); ok {
			if err := w.m.rt.StopContainer(ctx, sb.ID, 2*time.Second); err != nil {
				w.log.Warn("stop sandbox", "err", err)
				return false, time.Now().Add(5 * time.Second)
			}
			return true, time.Time{}
		}
	case plan.CreateSandbox:
		if old, ok := v.Sandbox(); ok {
			// The previous sandbox is dead (or never started): as the kubelet stops it before it
			// makes the next, its network (IP) and pinned namespaces are released first, not
			// only once the new one runs; its record stays until the next plan removes it.
			if err := w.m.rt.StopContainer(ctx, old.ID, 0); err != nil {
				w.log.Warn("release the previous sandbox", "sandbox", old.ID, "err", err)
			}
		}
		if err := w.createSandbox(ctx, pod, v, plan.SandboxAttempt); err != nil {
			if errors.Is(err, errStopped) {
				w.log.Info("sandbox creation abandoned: the pod is being removed or replaced", "err", err)
				return false, time.Now()
			}
			w.log.Warn("create sandbox", "err", err)
			w.m.rec.Eventf(pod, "", EventWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
			return false, time.Now().Add(5 * time.Second)
		}
		return true, time.Time{}
	}
	var retryAt time.Time
	sb, _ := v.Sandbox()
	for _, a := range plan.Start {
		ok, retry := w.start(ctx, pod, sb, a, nil, nil)
		if ok {
			acted = true
		}
		if !retry.IsZero() && (retryAt.IsZero() || retry.Before(retryAt)) {
			retryAt = retry
		}
	}
	return acted, retryAt
}

// resetPod stops the previous run's containers for an in-place pod restart, one after the
// other in the plan's order, as the kubelet does: no preStop hook, SIGTERM and 2 seconds before
// SIGKILL (its minimum grace period). No backoff is charged for them.
func (w *worker) resetPod(ctx context.Context, pod *corev1.Pod, plan Plan) {
	w.log.Info("restarting all containers in place", "container", plan.Reset.Container, "exitCode", plan.Reset.ExitCode)
	for _, r := range plan.ResetKill {
		w.killedByUs[r.ID] = true
		w.m.rec.Eventf(pod, r.Name, EventNormal, ReasonKilling, "Stopping container %s: container %s exited with code %d, all containers restart (RestartAllContainers)",
			r.Name, plan.Reset.Container, plan.Reset.ExitCode)
		if err := w.m.rt.StopContainer(ctx, r.ID, resetGrace); err != nil {
			w.log.Warn("stop container", "container", r.Name, "err", err)
		}
	}
}

// resetGrace is how long a container stopped for an in-place pod restart gets after SIGTERM: the
// kubelet's minimum grace period (it asks for none).
const resetGrace = 2 * time.Second

// createSandbox creates the pod's sandbox. While the sandbox's network and process come up, the
// containers that start first once it runs are created against it (their processes start once
// it has): a new pod's first containers then do not wait for the whole sandbox before their own
// create, which is most of a start. Only the sandbox's failure is returned; the containers'
// starts report their own.
func (w *worker) createSandbox(ctx context.Context, pod *corev1.Pod, v PodView, attempt int) error {
	type result struct {
		rec ContainerRecord
		err error
	}
	created := make(chan ContainerRecord, 1)
	done := make(chan result, 1)
	// Only the sandbox's own creation is ended by a stop (its CNI ADD may wait on a plugin that
	// never returns); the containers started early wait for it and then see its failure.
	sctx, endAbortable := w.abortable(ctx)
	go func() {
		rec, err := w.m.rt.CreateSandbox(sctx, pod, attempt, func(r ContainerRecord) { created <- r })
		if stopped := endAbortable(); err != nil && stopped {
			err = fmt.Errorf("%w (%v)", errStopped, err)
		}
		done <- result{rec, err}
	}()
	var res *result
	wait := func() result {
		if res == nil {
			r := <-done
			res = &r
		}
		return *res
	}
	ready := func() (ContainerRecord, error) { r := wait(); return r.rec, r.err }
	select {
	case sb := <-created:
		w.startEarly(ctx, pod, v, sb, ready)
	case r := <-done:
		res = &r
		// Created and started before the select: either case may be picked when both are
		// ready, and its first containers start now all the same.
		if r.err == nil {
			select {
			case sb := <-created:
				w.startEarly(ctx, pod, v, sb, ready)
			default:
			}
		}
	}
	return wait().err
}

// startEarly starts what the plan starts once sandbox sb (created, not started yet) runs, in the
// plan's order, up to the first container whose environment needs the pod's IP (known once the
// network is up) or whose image is not on the node (a pull, whose failure the kubelet shows as
// ErrImagePull first): it and those after it start at the next step. ready waits for the sandbox.
func (w *worker) startEarly(ctx context.Context, pod *corev1.Pod, v PodView, sb ContainerRecord, ready func() (ContainerRecord, error)) {
	up := sb
	up.State = StateRunning
	now := time.Now()
	withSB := v.WithSandbox(up)
	plan := PlanPodProbed(pod, withSB, w.gate(pod, withSB, now), w.probeStatus, now)
	if plan.CreateSandbox || plan.KillPod || plan.StopSandbox || len(plan.StopSidecars) > 0 || plan.Reset != nil {
		return
	}
	for _, a := range plan.Start {
		if NeedsPodIP(a.Container) {
			return
		}
		img, err := w.m.rt.EnsureImage(ctx, a.Container.Image, corev1.PullNever, PullOptions{})
		if err != nil {
			return // not on the node: its pull (and how a failed one shows) is the next step's
		}
		present := &img
		if a.Container.ImagePullPolicy == corev1.PullAlways {
			present = nil // pulled all the same
		}
		if ok, _ := w.start(ctx, pod, sb, a, ready, present); !ok {
			return
		}
	}
}

// start pulls the image of one container if needed and starts it. With ready, sb is a sandbox
// still starting (see StartRequest.SandboxReady). present, when not nil, is what EnsureImage
// just found on the node for a container whose policy pulls only a missing image: it is not
// asked again.
func (w *worker) start(ctx context.Context, pod *corev1.Pod, sb ContainerRecord, a StartAction, ready func() (ContainerRecord, error), present *ImageResult) (bool, time.Time) {
	c := a.Container
	delete(w.runErrs, c.Name) // a new attempt: the last one's failure is no longer the reason
	if m := w.configErrs[c.Name]; m != nil && time.Now().Before(m.notBefore) {
		reason := m.reason // ContainerCreating for a volume's set-up
		if reason == "" {
			reason = "CreateContainerConfigError"
		}
		w.setWaiting(c.Name, reason, m.lastErr)
		return false, m.notBefore
	}
	if m := w.interrupts[c.Name]; m != nil && time.Now().Before(m.notBefore) {
		w.setWaiting(c.Name, "ContainerCreating", m.lastErr)
		return false, m.notBefore
	}
	began := time.Now()
	secrets, missing := PullSecrets(w.m.ConfigLookup(), pod)
	if pm := w.pulls[c.Image]; len(missing) > 0 && a.Attempt == 0 && (pm == nil || !began.Before(pm.notBefore)) { // not again while a pull backs off
		w.m.rec.Eventf(pod, "", EventWarning, ReasonFailedToRetrieveImagePullSecret, "Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", "))
	}
	// Image volumes first (the kubelet pulls them before it starts any container), then the
	// container's own image; a failure shows on the container as its own image's would.
	for _, v := range ImageVolumesOf(pod, c) {
		if ok, retry := w.ensureImage(ctx, pod, c, v.Image.Reference, v.Image.PullPolicy, secrets, nil, a.Attempt, began); !ok {
			return false, retry
		}
	}
	if ok, retry := w.ensureImage(ctx, pod, c, c.Image, c.ImagePullPolicy, secrets, present, a.Attempt, began); !ok {
		return false, retry
	}
	pod = w.podForRuntime(pod)
	rec, err := w.m.rt.StartContainer(ctx, StartRequest{
		Pod:          pod,
		Sandbox:      sb,
		Container:    c,
		Kind:         a.Kind,
		Attempt:      a.Attempt,
		LogPath:      w.m.LogPath(pod, c.Name, a.Attempt),
		SpecHash:     SpecHash(c),
		Config:       w.m.ConfigLookup(),
		SandboxReady: ready,
	})
	if errors.Is(err, ErrSandboxNotReady) {
		return false, time.Time{} // the sandbox's failure is reported (and retried) on its own
	}
	if errors.Is(err, ErrCreateInterrupted) {
		// Not the container's failure (it never ran): it waits as ContainerCreating and goes
		// again soon, with no failure event and none of a bad spec's backoff.
		m := w.failed(interruptedBackoff, w.interrupts, c.Name, err)
		w.log.Info("start container: will retry soon", "container", c.Name, "at", m.notBefore, "err", err)
		w.setWaiting(c.Name, "ContainerCreating", err.Error())
		return false, m.notBefore
	}
	if ve := (*VolumeError)(nil); errors.As(err, &ve) {
		// As the kubelet's volume manager: a FailedMount event for the pod, the container
		// ContainerCreating, the set-up tried again with the volume backoff.
		m := w.failed(VolumeBackoff, w.configErrs, c.Name, ve)
		m.reason = "ContainerCreating"
		w.log.Warn("start container: volume set-up failed", "container", c.Name, "volume", ve.Volume, "retryAt", m.notBefore, "err", ve.Err)
		w.m.rec.Eventf(pod, "", EventWarning, ReasonFailedMount, "%s", ve.Error())
		w.setWaiting(c.Name, "ContainerCreating", ve.Error())
		return false, m.notBefore
	}
	if err != nil {
		w.log.Warn("start container", "container", c.Name, "err", err)
		reason, shown := "CreateContainerConfigError", err
		if ce := (*CreateError)(nil); errors.As(err, &ce) {
			reason, shown = "CreateContainerError", ce // the CRI's message, without podkeeper's wrapping
		}
		w.m.rec.Eventf(pod, c.Name, EventWarning, ReasonFailed, "Error: %v", shown)
		if errors.Is(err, ErrExitRecorded) {
			msg := shown.Error()
			if sf := (*StartFailure)(nil); errors.As(err, &sf) {
				msg = sf.Err.Error() // the CRI's words, without podkeeper's "start container <id>: "
			}
			w.runErrs[c.Name] = Waiting{Reason: ReasonRunContainerError, Message: msg}
			return true, time.Time{} // plan again: restart policy and CrashLoopBackOff apply
		}
		// Nothing was kept (bad spec, image gone): retry with backoff, never in a tight loop.
		m := w.failed(w.m.cfg.Backoff, w.configErrs, c.Name, shown)
		m.reason = reason
		w.setWaiting(c.Name, reason, shown.Error())
		return false, m.notBefore
	}
	delete(w.configErrs, c.Name)
	delete(w.interrupts, c.Name)
	w.m.rec.Eventf(pod, c.Name, EventNormal, ReasonCreated, "Created container: %s", c.Name)
	w.m.rec.Eventf(pod, c.Name, EventNormal, ReasonStarted, "Started container %s", c.Name)
	if err := w.runPostStart(ctx, pod, c, rec); err != nil {
		if pe := (*postStartError)(nil); errors.As(err, &pe) {
			w.runErrs[c.Name] = Waiting{Reason: ReasonPostStartHookError, Message: pe.msg}
		}
		return true, time.Time{} // killed: restart policy and CrashLoopBackOff apply
	}
	w.log.Info("container started", "container", c.Name, "restartCount", a.Attempt, "pid", rec.PID, "took", time.Since(began).Round(time.Millisecond))
	return true, time.Time{}
}

// ensureImage makes image present for container c (its own image, or one of its image volumes')
// as policy asks, with the kubelet's events and waiting reasons (ErrImagePull, ImagePullBackOff,
// ErrImageNeverPull...) on c. present, when not nil, is what EnsureImage just found for it. It
// returns false, with when to try again, when c cannot start yet.
func (w *worker) ensureImage(ctx context.Context, pod *corev1.Pod, c *corev1.Container, image string, policy corev1.PullPolicy, secrets []*corev1.Secret, present *ImageResult, attempt int, began time.Time) (bool, time.Time) {
	if pm := w.pulls[image]; pm != nil && time.Now().Before(pm.notBefore) {
		if pm.reason != "" { // an ImageError: shown as is until the next try
			w.setWaiting(c.Name, pm.reason, pm.lastErr)
		} else {
			w.setWaiting(c.Name, "ImagePullBackOff", fmt.Sprintf("Back-off pulling image %q: %s", image, pm.lastErr))
		}
		return false, pm.notBefore
	}
	var img ImageResult
	var err error
	if present != nil {
		img = *present
	} else {
		pctx, done := w.abortable(ctx)
		img, err = w.m.rt.EnsureImage(pctx, image, policy, PullOptions{
			Secrets: secrets,
			OnPull: func() {
				w.m.rec.Eventf(pod, c.Name, EventNormal, ReasonPulling, "Pulling image %q", image)
			},
		})
		if stopped := done(); err != nil && stopped {
			// Ended by stop: the pod goes; no pull failure to charge or report.
			w.log.Info("image pull abandoned: the pod is being removed or replaced", "container", c.Name, "image", image)
			return false, time.Now()
		}
	}
	var ie *ImageError
	if errors.As(err, &ie) {
		// No pull was tried and none would help: the kubelet's reason and message, no back-off
		// phase; tried again later all the same (a tarball of the image may be dropped in).
		m := w.failed(w.m.cfg.Backoff, w.pulls, image, err)
		m.reason, m.lastErr = ie.Reason, ie.Message
		w.m.rec.Eventf(pod, c.Name, EventWarning, ie.Event, "%s", ie.Message)
		w.setWaiting(c.Name, ie.Reason, ie.Message)
		return false, m.notBefore
	}
	if err != nil {
		w.failed(w.m.cfg.Backoff, w.pulls, image, err)
		w.m.rec.Eventf(pod, c.Name, EventWarning, ReasonFailed, "Failed to pull image %q: %v", image, err)
		w.m.rec.Eventf(pod, c.Name, EventNormal, ReasonBackOff, "Back-off pulling image %q", image)
		w.setWaiting(c.Name, "ErrImagePull", err.Error())
		// Sync again soon: the status then says ImagePullBackOff until the backoff ends, as the
		// kubelet's does.
		return false, time.Now().Add(time.Second)
	}
	delete(w.pulls, image)
	delete(w.imgWaiting, c.Name)
	if img.Pulled {
		w.m.rec.Eventf(pod, c.Name, EventNormal, ReasonPulled, "Successfully pulled image %q in %s (%s including waiting). Image size: %d bytes.", image, img.Duration.Round(time.Millisecond), time.Since(began).Round(time.Millisecond), img.Size)
	} else if attempt == 0 {
		w.m.rec.Eventf(pod, c.Name, EventNormal, ReasonPulled, "Container image %q already present on machine", image)
	}
	if img.Warning != "" {
		w.m.rec.Eventf(pod, c.Name, EventWarning, ReasonFailed, "%s", img.Warning)
	}
	return true, time.Time{}
}

// ImageVolumesOf lists the image volumes of pod that container c mounts.
func ImageVolumesOf(pod *corev1.Pod, c *corev1.Container) []*corev1.Volume {
	var out []*corev1.Volume
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.Image == nil {
			continue
		}
		for _, vm := range c.VolumeMounts {
			if vm.Name == v.Name {
				out = append(out, v)
				break
			}
		}
	}
	return out
}

// failed charges one more failure to memo[key] and returns it with its next retry time, spaced
// by policy p.
func (w *worker) failed(p BackoffPolicy, memo map[string]*retryMemo, key string, err error) *retryMemo {
	m := memo[key]
	if m == nil {
		m = &retryMemo{state: BackoffState{Restarts: 1}}
		memo[key] = m
	}
	delay, next := p.Next(m.state, time.Time{}, time.Time{})
	m.state, m.notBefore, m.lastErr, m.reason = next, time.Now().Add(delay), err.Error(), ""
	return m
}

// interruptedBackoff spaces the starts of a container that met an interrupted earlier create:
// 500 ms, doubling, at most 8 s. Such a leftover is usually gone within seconds (containerd
// finishes or gives up the create, or podkeeper ends it); a bad spec's backoff (10 s, doubling)
// would only hold the pod back.
var interruptedBackoff = BackoffPolicy{Initial: 500 * time.Millisecond, Max: 8 * time.Second}

// setWaiting shows a pull or config problem in the container's waiting state.
func (w *worker) setWaiting(name, reason, msg string) {
	w.imgWaiting[name] = Waiting{Reason: reason, Message: msg}
}

// terminatePod stops everything of the pod, removes its containers and files, and returns once
// nothing of it is left (or ctx ends). The grace period is the pod's.
func (w *worker) terminatePod(ctx context.Context, pod *corev1.Pod) {
	grace := terminationGrace(gracePeriod(pod))
	w.log.Info("terminating pod", "grace", grace)
	w.m.probes.StopPod(string(w.uid), nil) // probes stop during termination
	for attempt := 0; ctx.Err() == nil; attempt++ {
		v, err := w.observe(ctx)
		if err == nil {
			now := time.Now()
			plan := Plan{Phase: PodPhase(pod, v), Waiting: map[string]Waiting{}}
			w.publish(pod, v, plan, true)
			w.stopContainers(ctx, pod, v, grace)
			err = w.removeAll(ctx, v)
			if err == nil {
				_ = w.m.rt.RemovePodFiles(string(w.uid))
				_ = os.RemoveAll(w.m.podLogDir(pod))
				w.log.Info("pod terminated", "took", time.Since(now).Round(time.Millisecond))
				w.m.workerDone(w)
				return
			}
		}
		w.log.Warn("terminating pod: will retry", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}

// removeAll removes every container and sandbox of v. The pod's containers have exited
// (stopContainers ran first), so their removal (task and container deletes, one shim round trip
// each) and the sandboxes' stop (the pause process, CNI DEL) do not wait for each other: they
// run at once, and the sandboxes are removed once both are done (about a fifth off a
// one-container pod's teardown here). The debug line "pod teardown" gives the split.
func (w *worker) removeAll(ctx context.Context, v PodView) error {
	var (
		mu   sync.Mutex
		errs []error
	)
	fail := func(err error) {
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	t0 := time.Now()
	var ctrs, sbs sync.WaitGroup
	for _, rs := range v.Containers {
		for _, r := range rs {
			ctrs.Go(func() { fail(w.m.rt.RemoveContainer(ctx, r.ID)) })
		}
	}
	stopped := make([]bool, len(v.Sandboxes))
	for i, sb := range v.Sandboxes {
		sbs.Go(func() {
			if sb.State == StateRunning {
				if err := w.m.rt.StopContainer(ctx, sb.ID, 2*time.Second); err != nil {
					fail(err)
					return
				}
			}
			stopped[i] = true
		})
	}
	ctrs.Wait()
	removedContainers := time.Since(t0)
	sbs.Wait()
	t1 := time.Now()
	for i, sb := range v.Sandboxes {
		if stopped[i] {
			fail(w.m.rt.RemoveContainer(ctx, sb.ID))
		}
	}
	w.log.Debug("pod teardown", "removeContainers", removedContainers.Round(time.Millisecond),
		"stopSandbox", t1.Sub(t0).Round(time.Millisecond), "removeSandbox", time.Since(t1).Round(time.Millisecond))
	return errors.Join(errs...)
}

// publish stores the pod with its current status for readers.
func (w *worker) publish(pod *corev1.Pod, v PodView, plan Plan, terminating bool) {
	for name, wt := range w.imgWaiting {
		if latest, ok := v.Latest(name); !ok || latest.State != StateRunning {
			plan.Waiting[name] = wt
		}
	}
	showStartFailures(plan.Waiting, w.runErrs)
	out := pod.DeepCopy()
	out.Status = BuildStatus(w.statusInput(pod, v, plan, terminating))
	if terminating {
		t := metav1.Now()
		out.DeletionTimestamp = &t
		g := int64(gracePeriod(pod) / time.Second)
		out.DeletionGracePeriodSeconds = &g
	}
	w.m.setStatus(out)
}

// statusInput is what BuildStatus reads for this worker's pod in view v under plan.
func (w *worker) statusInput(pod *corev1.Pod, v PodView, plan Plan, terminating bool) StatusInput {
	return StatusInput{Pod: pod, View: v, Plan: plan, StartTime: w.startTime, HostIP: w.m.cfg.HostIP,
		Terminating: terminating, Now: time.Now(), Probes: w.probeStatus, RecursiveReadOnly: w.m.cfg.RecursiveReadOnly}
}

// terminationGrace is the grace period a pod that ends (removed, evicted) is stopped with: as
// the kubelet's pod worker, never under 1 s, so a terminationGracePeriodSeconds of 0 still runs
// the preStop hooks (for up to 1 s) and sends the stop signal (minStopGrace before SIGKILL). Pure.
func terminationGrace(grace time.Duration) time.Duration {
	return max(grace, time.Second)
}

func gracePeriod(pod *corev1.Pod) time.Duration {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return 30 * time.Second
}

// LogPath is where a container instance's output goes, as the kubelet lays it out:
// <log-dir>/<namespace>_<pod>_<uid>/<container>/<restartCount>.log
func (m *Manager) LogPath(pod *corev1.Pod, container string, attempt int) string {
	return filepath.Join(m.podLogDir(pod), container, fmt.Sprintf("%d.log", attempt))
}

func (m *Manager) podLogDir(pod *corev1.Pod) string {
	return filepath.Join(m.cfg.LogDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

// Waiting reasons of a container whose last start failed, as the kubelet shows them: its task
// could not be created or started, or its postStart hook failed (the container was then killed).
// The kubelet keeps the failure as the container's reason until its next sync of the pod, which
// after a failed start comes with the next attempt (make conformance's edge-workdir-relative:
// RunContainerError through each back-off, CrashLoopBackOff for a second before the attempt).
// podkeeper shows it through the back-off, in place of CrashLoopBackOff, until the next attempt;
// under Never the instance stays terminated (StartError), as the kubelet shows it.
const (
	ReasonRunContainerError  = "RunContainerError"
	ReasonPostStartHookError = "PostStartHookError"
)

// showStartFailures puts each container's failed last start (failures, by container name) in
// place of its CrashLoopBackOff in waiting: the reason shown through the back-off. A container
// waiting for anything else (its image, its config), or not waiting, is left as it is.
func showStartFailures(waiting, failures map[string]Waiting) {
	for name, f := range failures {
		if waiting[name].Reason == ReasonCrashLoopBackOff {
			waiting[name] = f
		}
	}
}
