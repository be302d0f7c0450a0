package podrunner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/podkeeper/podkeeper/probes"
	corev1 "k8s.io/api/core/v1"
)

// Lifecycle hooks (postStart, preStop) and the order of termination, as the kubelet does them:
//
//	stop(container):  preStop (inside the grace period; left running if it outlasts it) ─▶ stop
//	                  signal ─▶ SIGKILL at the end of what is left of the grace period, never
//	                  less than 2 s after the signal.
//	stop(pod):        every preStop at once; app containers (and running plain init containers)
//	                  get their signal after their hook ─▶ sidecars, one by one in reverse spec
//	                  order, with what is left of the one grace period. A pod's termination
//	                  grace is at least 1 s (terminationGrace).

// Events about hooks, as the kubelet records them.
const (
	ReasonFailedPostStartHook = "FailedPostStartHook"
	ReasonFailedPreStopHook   = "FailedPreStopHook"
)

// minStopGrace is the least time a container gets between its stop signal and SIGKILL, whatever
// its grace period and whatever the preStop hook took of it (the kubelet's
// minimumGracePeriodInSeconds: "always give containers a minimal shutdown window").
const minStopGrace = 2 * time.Second

// graceLeft is the time a container gets between its stop signal and SIGKILL once its
// termination spent hook on its preStop hook and turn waiting for its turn (a sidecar), counted
// as the kubelet counts them: in whole seconds, each wait's fraction of a second not taken off;
// never less than minStopGrace. Pure.
func graceLeft(grace, hook, turn time.Duration) time.Duration {
	left := grace - hook.Truncate(time.Second) - turn.Truncate(time.Second)
	if left < minStopGrace {
		left = minStopGrace
	}
	return left
}

// hookTarget is where an httpGet hook connects: the handler's host, else the pod IP, else
// 127.0.0.1 (podkeeper reaches the pod from the host). Named ports are resolved from the
// container's ports. Pure.
func hookURL(pod *corev1.Pod, c *corev1.Container, h *corev1.HTTPGetAction) (string, error) {
	host := h.Host
	if host == "" {
		host = pod.Status.PodIP
	}
	if host == "" {
		host = "127.0.0.1"
	}
	port, err := probes.ResolvePort(h.Port, c)
	if err != nil {
		return "", err
	}
	return probes.HTTPGetURL(h, host, port).String(), nil
}

// PodRef names a pod in messages as the kubelet's format.Pod does: name_namespace(uid).
func PodRef(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// hookRunner runs lifecycle handlers. The zero value works.
type hookRunner struct {
	rt     Runtime
	client *http.Client
	// leaveRunning: an exec handler still running when ctx ends is left to run (the kubelet's
	// preStop: it stops waiting, and the hook ends with the container) instead of killed.
	leaveRunning bool
}

// run executes one handler against container id and returns the kubelet's failure message with
// the error, or ("", nil) on success. ctx bounds it (the hook's share of the grace period).
func (h hookRunner) run(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, which string, lh *corev1.LifecycleHandler) (string, error) {
	switch {
	case lh.Exec != nil:
		var out bytes.Buffer
		w := &limitedWriter{w: &out, n: 10 * 1024}
		code, err := h.rt.Exec(ctx, id, ExecRequest{Cmd: lh.Exec.Command, Stdout: w, Stderr: w, LeaveRunning: h.leaveRunning})
		if err == nil && code != 0 {
			err = fmt.Errorf("command '%s' exited with %d: %s", strings.Join(lh.Exec.Command, " "), code, out.String())
		}
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				lh.Exec.Command, c.Name, PodRef(pod), err, out.String()), err
		}
		return "", nil
	case lh.HTTPGet != nil:
		err := h.httpGet(ctx, pod, c, lh.HTTPGet)
		if err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
				lh.HTTPGet.Path, c.Name, PodRef(pod), err), err
		}
		return "", nil
	case lh.Sleep != nil:
		t := time.NewTimer(time.Duration(lh.Sleep.Seconds) * time.Second)
		defer t.Stop()
		select {
		case <-t.C:
			return "", nil
		case <-ctx.Done():
			err := errors.New("container terminated before sleep hook finished")
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				lh.Sleep.Seconds, c.Name, PodRef(pod), err), err
		}
	case lh.TCPSocket != nil:
		err := errors.New("tcpSocket lifecycle handlers are deprecated and not supported")
		return fmt.Sprintf("%s hook for Container %q in Pod %q failed - error: %v", which, c.Name, PodRef(pod), err), err
	}
	err := errors.New("handler has no action")
	return fmt.Sprintf("%s hook for Container %q in Pod %q failed - error: %v", which, c.Name, PodRef(pod), err), err
}

// httpGet sends the hook's request. As the kubelet, only a failure to get an answer fails the
// hook; the status code is not looked at.
func (h hookRunner) httpGet(ctx context.Context, pod *corev1.Pod, c *corev1.Container, g *corev1.HTTPGetAction) error {
	u, err := hookURL(pod, c, g)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "kube-lifecycle/podkeeper")
	for _, hd := range g.HTTPHeaders {
		if strings.EqualFold(hd.Name, "host") {
			req.Host = hd.Value
			continue
		}
		req.Header.Add(hd.Name, hd.Value)
	}
	client := h.client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.Body.Close()
}

type limitedWriter struct {
	mu sync.Mutex
	w  io.Writer
	n  int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	if l.n <= 0 {
		return n, nil
	}
	if len(p) > l.n {
		p = p[:l.n]
	}
	l.n -= len(p)
	_, err := l.w.Write(p)
	return n, err
}

// specOf finds a container of the pod's spec by name (init containers included).
func specOf(pod *corev1.Pod, name string) *corev1.Container {
	for _, c := range allContainers(pod) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// runPostStart runs a container's postStart hook, if any, right after it started. On failure the
// container is killed (FailedPostStartHook), as the kubelet does, and the error is returned.
func (w *worker) runPostStart(ctx context.Context, pod *corev1.Pod, c *corev1.Container, rec ContainerRecord) error {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return nil
	}
	// The kubelet gives postStart no timeout; a pod told to terminate meanwhile cuts it short.
	hctx, done := w.abortable(ctx)
	msg, err := hookRunner{rt: w.m.rt}.run(hctx, pod, c, rec.ID, "PostStart", c.Lifecycle.PostStart)
	done()
	if err == nil {
		return nil
	}
	w.log.Warn("postStart hook failed; killing the container", "container", c.Name, "err", err)
	w.m.rec.Eventf(pod, c.Name, EventWarning, ReasonFailedPostStartHook, "%s", msg)
	// As the kubelet's killContainer: preStop and grace apply; the exit counts for the backoff.
	w.kill(ctx, pod, rec, gracePeriod(pod), "FailedPostStartHook", nil)
	return &postStartError{msg: msg}
}

// postStartError is a failed postStart hook: msg is the kubelet's message about it.
type postStartError struct{ msg string }

func (e *postStartError) Error() string { return ReasonPostStartHookError + ": " + e.msg }

// stopOrder splits a pod's running containers as the kubelet's termination ordering does: the
// app containers (spec.containers), whose end the sidecars wait for; the others stopped beside
// them without being waited for (a running plain init container, a container no longer in the
// spec); and the sidecars, stopped one by one in reverse spec order after the apps. Pure.
func stopOrder(pod *corev1.Pod, v PodView) (apps, beside, sidecars []ContainerRecord) {
	side := map[string]bool{}
	for _, id := range runningSidecars(pod, v) {
		side[id] = true
	}
	for _, id := range runningSidecars(pod, v) {
		for _, rs := range v.Containers {
			if rs[0].ID == id {
				sidecars = append(sidecars, rs[0])
			}
		}
	}
	app := map[string]bool{}
	for _, c := range pod.Spec.Containers {
		app[c.Name] = true
	}
	names := make([]string, 0, len(v.Containers))
	for n := range v.Containers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r := v.Containers[n][0]
		switch {
		case r.State != StateRunning || side[r.ID]:
		case app[n] && r.Kind == KindApp:
			apps = append(apps, r)
		default:
			beside = append(beside, r)
		}
	}
	return apps, beside, sidecars
}

// stopContainers stops every running container of the pod (not the sandbox) inside one grace
// period, as the kubelet orders it: every container starts terminating at once (its preStop hook
// runs now), the app containers and the others beside them get their stop signal right after
// their hook, and each sidecar waits for its turn (all app containers gone, then the sidecar
// after it in the spec; a running plain init container is not waited for) before its stop
// signal, with what is left of the grace period (at least 2 s).
func (w *worker) stopContainers(ctx context.Context, pod *corev1.Pod, v PodView, grace time.Duration) {
	apps, beside, sidecars := stopOrder(pod, v)
	var mu sync.Mutex // killedByUs is touched from the goroutines
	var appsWG, all sync.WaitGroup
	appsDone := make(chan struct{})
	for _, r := range apps {
		appsWG.Add(1)
		all.Add(1)
		go func() {
			defer all.Done()
			defer appsWG.Done()
			w.stopLocked(ctx, &mu, pod, r, grace, nil)
		}()
	}
	for _, r := range beside {
		all.Go(func() { w.stopLocked(ctx, &mu, pod, r, grace, nil) })
	}
	go func() { appsWG.Wait(); close(appsDone) }()
	prev := appsDone
	for _, r := range sidecars {
		done := make(chan struct{})
		turn := bothDone(appsDone, prev)
		all.Add(1)
		go func() {
			defer all.Done()
			defer close(done)
			w.stopLocked(ctx, &mu, pod, r, grace, turn)
		}()
		prev = done
	}
	all.Wait()
}

// bothDone is closed once a and b are.
func bothDone(a, b <-chan struct{}) <-chan struct{} {
	out := make(chan struct{})
	go func() { <-a; <-b; close(out) }()
	return out
}

// stopLocked stops one running container the pod no longer runs (no backoff is charged for it).
// mu guards killedByUs. turn, when not nil, is closed when the container may get its stop signal.
func (w *worker) stopLocked(ctx context.Context, mu *sync.Mutex, pod *corev1.Pod, r ContainerRecord, grace time.Duration, turn <-chan struct{}) {
	mu.Lock()
	w.killedByUs[r.ID] = true
	mu.Unlock()
	w.kill(ctx, pod, r, grace, "Stopping container "+r.Name, turn)
}

// kill stops one running container as the kubelet's killContainer: a Killing event with why, its
// preStop hook inside the grace period (a hook still running at its end is left to run: it ends
// with the container), its turn (if ordered) inside what is left, then the stop signal and
// SIGKILL after graceLeft.
func (w *worker) kill(ctx context.Context, pod *corev1.Pod, r ContainerRecord, grace time.Duration, why string, turn <-chan struct{}) {
	c := specOf(pod, r.Name)
	w.m.rec.Eventf(pod, r.Name, EventNormal, ReasonKilling, "%s", why)
	var hook, waited time.Duration
	if c != nil && c.Lifecycle != nil && c.Lifecycle.PreStop != nil && grace > 0 {
		began := time.Now()
		hctx, cancel := context.WithTimeout(ctx, grace)
		msg, err := hookRunner{rt: w.m.rt, leaveRunning: true}.run(hctx, w.podForRuntime(pod), c, r.ID, "PreStop", c.Lifecycle.PreStop)
		cancel()
		if err != nil {
			w.log.Warn("preStop hook failed", "container", r.Name, "err", err)
			w.m.rec.Eventf(pod, r.Name, EventWarning, ReasonFailedPreStopHook, "%s", msg)
		}
		hook = time.Since(began)
	}
	if rest := grace - hook.Truncate(time.Second); turn != nil && rest > 0 {
		began := time.Now()
		t := time.NewTimer(rest)
		select {
		case <-turn:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		waited = time.Since(began)
	}
	if err := w.m.rt.StopContainer(ctx, r.ID, graceLeft(grace, hook, waited)); err != nil {
		w.log.Warn("stop container", "container", r.Name, "err", err)
	}
}

// podForRuntime is pod with the status fields the downward API and httpGet hooks read (host IP,
// pod IP) filled from the worker's last published status.
func (w *worker) podForRuntime(pod *corev1.Pod) *corev1.Pod {
	out := pod.DeepCopy()
	out.Status.HostIP = w.m.cfg.HostIP
	if w.m.cfg.HostIP != "" {
		out.Status.HostIPs = []corev1.HostIP{{IP: w.m.cfg.HostIP}}
	}
	w.m.mu.Lock()
	last := w.m.status[pod.UID]
	w.m.mu.Unlock()
	if last != nil {
		out.Status.PodIP, out.Status.PodIPs = last.Status.PodIP, last.Status.PodIPs
	}
	if pod.Spec.HostNetwork && out.Status.PodIP == "" && w.m.cfg.HostIP != "" {
		out.Status.PodIP = w.m.cfg.HostIP
		out.Status.PodIPs = []corev1.PodIP{{IP: w.m.cfg.HostIP}}
	}
	return out
}

// VolumeRefresher is implemented by runtimes that can update a running pod's configMap, secret,
// downwardAPI and projected volumes in place (atomically, as the kubelet). It reports whether any
// content changed. The worker calls it on every sync.
type VolumeRefresher interface {
	RefreshVolumes(pod *corev1.Pod, lookup ConfigLookup) (bool, error)
}

// refreshVolumes updates the pod's projected content when the lookup's objects changed.
func (w *worker) refreshVolumes(pod *corev1.Pod) {
	vr, ok := w.m.rt.(VolumeRefresher)
	lookup := w.m.ConfigLookup()
	if !ok || lookup == nil || len(pod.Spec.Volumes) == 0 {
		return
	}
	changed, err := vr.RefreshVolumes(w.podForRuntime(pod), lookup)
	if err != nil {
		w.log.Warn("volumes keep their last content", "err", err)
	}
	if changed {
		w.log.Info("volume content updated")
	}
}
