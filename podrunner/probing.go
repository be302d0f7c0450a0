package podrunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkeeper/podkeeper/probes"
)

// Probing, as the kubelet does it:
//   - the pod's worker starts the probes of a container instance when it sees it running and
//     stops them when it is not running any more, and stops all of them when the pod terminates
//     (syncProbes, terminatePod);
//   - readiness feeds the container's Ready and the pod's Ready/ContainersReady conditions
//     (BuildStatus reads probes.Manager.Status), never a restart;
//   - a failed liveness or startup probe kills the instance with the probe's
//     terminationGracePeriodSeconds (else the pod's); restart policy and CrashLoopBackOff then
//     apply as to any exit;
//   - every failed probe run records an Unhealthy Warning event; a change of result wakes the
//     pod's worker (routeProbeUpdates).

// ProbeStatus tells BuildStatus whether a running container instance has started and is ready.
type ProbeStatus func(c *corev1.Container, r ContainerRecord) (started, ready bool)

// runtimeExecer runs exec probes through the Runtime.
type runtimeExecer struct{ rt Runtime }

func (e runtimeExecer) Exec(ctx context.Context, id string, cmd []string, out io.Writer) (int, error) {
	code, err := e.rt.Exec(ctx, id, ExecRequest{Cmd: cmd, Stdout: out, Stderr: out})
	if err != nil && errors.Is(err, ErrNotFound) && ctx.Err() == nil {
		return code, fmt.Errorf("%w: %w", probes.ErrNotRunning, err)
	}
	return code, err
}

func newProber(m *Manager) *probes.Manager {
	return probes.NewManager(probes.Config{Exec: runtimeExecer{m.rt}, Events: m.probeEvent, Logger: m.log})
}

// probeEvent records the Unhealthy (or ProbeWarning) event of one probe run.
func (m *Manager) probeEvent(ev probes.Event) {
	m.mu.Lock()
	w := m.workers[types.UID(ev.PodUID)]
	m.mu.Unlock()
	if w == nil {
		return
	}
	pod, _ := w.state()
	m.rec.Eventf(pod, ev.Container, EventWarning, ev.Reason, "%s", ev.Message)
}

// routeProbeUpdates wakes the worker of a pod whose probe result changed, until ctx ends.
func (m *Manager) routeProbeUpdates(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-m.probes.Updates():
			m.mu.Lock()
			w := m.workers[types.UID(u.PodUID)]
			m.mu.Unlock()
			if w != nil {
				w.wake()
			}
		}
	}
}

// podIP is the pod IP the latest status of pod uid reports ("" when none yet).
func (m *Manager) podIP(uid types.UID) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.status[uid]; p != nil {
		return p.Status.PodIP
	}
	return ""
}

// probedContainers are the containers that may have probes: app containers and sidecars
// (init containers with restartPolicy Always).
func probedContainers(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// syncProbes starts probing the running container instances of the pod, stops probing those
// not running any more, and kills the instances whose liveness or startup probe failed. It
// reports whether it killed one (the pod's state changed).
func (w *worker) syncProbes(ctx context.Context, pod *corev1.Pod, v PodView) bool {
	running := map[string]bool{}
	killed := false
	for _, c := range probedContainers(pod) {
		r, ok := v.Latest(c.Name)
		if !ok || r.State != StateRunning {
			continue
		}
		running[r.ID] = true
		if !probes.HasProbes(c) {
			continue
		}
		w.m.probes.Start(ctx, string(w.uid), c, probes.Target{ContainerID: r.ID, Host: w.probeHost(pod)}, r.StartedAt)
		if kind, failed := w.m.probes.Failed(r.ID); failed {
			w.killUnhealthy(ctx, pod, c, r, kind)
			killed = true
		}
	}
	w.m.probes.StopPod(string(w.uid), func(id string) bool { return running[id] })
	return killed
}

// probeHost is where HTTP, TCP and gRPC probes without a host go: the pod IP; for a
// hostNetwork pod (or before the pod has an IP) 127.0.0.1.
func (w *worker) probeHost(pod *corev1.Pod) func() string {
	if pod.Spec.HostNetwork {
		return nil
	}
	return func() string { return w.m.podIP(w.uid) }
}

// killUnhealthy stops a container instance whose liveness or startup probe failed, its preStop
// hook first, within the probe's grace period. It restarts by ProbeKillRestarts (the record's
// ProbeKilled), after ProbeKillDelay.
func (w *worker) killUnhealthy(ctx context.Context, pod *corev1.Pod, c *corev1.Container, r ContainerRecord, kind probes.Kind) {
	p := c.LivenessProbe
	if kind == probes.Startup {
		p = c.StartupProbe
	}
	grace := probes.GracePeriod(p, gracePeriod(pod))
	msg := fmt.Sprintf("Container %s failed %s probe", c.Name, strings.ToLower(string(kind)))
	if ProbeKillRestarts(pod, c) {
		msg += ", will be restarted"
	}
	w.log.Info("killing unhealthy container", "container", c.Name, "probe", kind, "grace", grace)
	w.probeKilled[r.ID] = true
	w.kill(ctx, pod, r, grace, msg, nil) // its preStop hook first, as the kubelet's killContainer
	w.m.probes.Stop(r.ID)
}

// probeStatus reports whether a running instance has started and is ready, per its probes.
func (w *worker) probeStatus(c *corev1.Container, r ContainerRecord) (bool, bool) {
	return w.m.probes.Status(r.ID, c)
}
