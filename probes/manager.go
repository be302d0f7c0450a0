package probes

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Config configures a Manager.
type Config struct {
	// Exec runs exec probes inside containers.
	Exec Execer
	// Events, when set, is called (from probe goroutines) for every failed, errored or warned
	// probe run, with the event the kubelet records for it.
	Events func(Event)
	Logger *slog.Logger
	// LivenessLag returns how long a liveness probe waits for its first run once it may run
	// (initial delay passed, startup probe passed); nil: random in (0, period], where the
	// kubelet's prober worker, ticking every period, first meets the running container. It also
	// keeps pods started together from probing in lockstep. Readiness and startup probes run at
	// once (see NewMachine).
	LivenessLag func(period time.Duration) time.Duration
}

// Event is an Unhealthy (or ProbeWarning) event about one probe run.
type Event struct {
	PodUID      string
	Container   string
	ContainerID string
	Kind        Kind
	Reason      string // "Unhealthy" or "ProbeWarning" (both Warning events)
	Message     string // e.g. "Liveness probe failed: HTTP probe failed with statuscode: 500"
}

// Update tells that a probe's result changed.
type Update struct {
	PodUID      string
	Container   string
	ContainerID string
	Kind        Kind
	Result      Result
}

// Event reasons, as the kubelet's.
const (
	ReasonUnhealthy    = "Unhealthy"
	ReasonProbeWarning = "ProbeWarning"
)

// Manager runs the probes of running containers: one goroutine per container probe. Safe for
// concurrent use.
type Manager struct {
	cfg     Config
	tr      *http.Transport
	updates chan Update

	mu         sync.Mutex
	containers map[string]*probed // by container ID
}

// probed is one container instance being probed.
type probed struct {
	podUID, name, id string
	has              map[Kind]bool
	results          map[Kind]Result // guarded by Manager.mu
	cancel           context.CancelFunc
	// startedC is closed once the startup probe's success has been delivered to Updates (never,
	// without a startup probe): liveness and readiness run from then on, so no consumer sees
	// their results before the startup probe's.
	startedC chan struct{}
}

// NewManager returns a manager; nothing runs until Start.
func NewManager(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.LivenessLag == nil {
		cfg.LivenessLag = func(period time.Duration) time.Duration {
			if period <= 0 {
				return 0
			}
			return period - rand.N(period)
		}
	}
	return &Manager{cfg: cfg, tr: newTransport(), updates: make(chan Update, 256), containers: map[string]*probed{}}
}

// Updates delivers every change of a probe's result. Receive from it continuously: probe
// goroutines wait while it is full.
func (m *Manager) Updates() <-chan Update { return m.updates }

// HasProbes reports whether container c has any probe.
func HasProbes(c *corev1.Container) bool {
	return c.StartupProbe != nil || c.LivenessProbe != nil || c.ReadinessProbe != nil
}

// Start begins probing container instance t.ContainerID (container c of pod podUID, started at
// startedAt) until ctx ends or Stop/StopPod. Idempotent: a container already probed is left as
// it is. A container without probes is not tracked.
func (m *Manager) Start(ctx context.Context, podUID string, c *corev1.Container, t Target, startedAt time.Time) {
	if !HasProbes(c) || t.ContainerID == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.containers[t.ContainerID]; ok {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &probed{podUID: podUID, name: c.Name, id: t.ContainerID, has: map[Kind]bool{}, results: map[Kind]Result{}, cancel: cancel, startedC: make(chan struct{})}
	m.containers[t.ContainerID] = p
	// p.has is complete before any worker starts: the workers read it without the lock.
	var launch []func()
	for _, k := range []Kind{Startup, Liveness, Readiness} {
		pr := probeOf(c, k)
		if pr == nil {
			continue
		}
		spec := SpecOf(k, pr)
		p.has[k] = true
		p.results[k] = InitialResult(k)
		h, err := newHandler(pr, c, m.cfg.Exec, m.tr)
		if err != nil {
			herr := err
			h = func(context.Context, Target, time.Duration) Outcome { return Outcome{Result: Failure, Err: herr} }
		}
		mach := NewMachine(k, spec, startedAt, time.Now(), m.cfg.LivenessLag(spec.Period))
		launch = append(launch, func() { go m.run(ctx, p, k, mach, h, t, spec) })
	}
	for _, f := range launch {
		f()
	}
}

// Stop ends the probing of one container instance and forgets its results. Idempotent.
func (m *Manager) Stop(containerID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.containers[containerID]; p != nil {
		p.cancel()
		delete(m.containers, containerID)
	}
}

// StopPod ends the probing of every container instance of pod podUID for which keep returns
// false (nil keep: all of them). Idempotent.
func (m *Manager) StopPod(podUID string, keep func(containerID string) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, p := range m.containers {
		if p.podUID == podUID && (keep == nil || !keep(id)) {
			p.cancel()
			delete(m.containers, id)
		}
	}
}

// Status reports whether a running container instance of container c has started (its startup
// probe passed, or it has none) and is ready (started, and its readiness probe passed or it has
// none). An instance not being probed yet reports what its probes would say before their first
// run.
func (m *Manager) Status(containerID string, c *corev1.Container) (started, ready bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.containers[containerID]
	if p == nil {
		started = c.StartupProbe == nil
		return started, started && c.ReadinessProbe == nil
	}
	started = startedLocked(p)
	ready = started && (!p.has[Readiness] || p.results[Readiness] == Success)
	return started, ready
}

// Failed reports whether the liveness or startup probe of a container instance has failed (the
// container must be killed), and which.
func (m *Manager) Failed(containerID string) (Kind, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.containers[containerID]
	if p == nil {
		return "", false
	}
	for _, k := range []Kind{Startup, Liveness} {
		if p.has[k] && p.results[k] == Failure {
			return k, true
		}
	}
	return "", false
}

func startedLocked(p *probed) bool {
	return !p.has[Startup] || p.results[Startup] == Success
}

// gateOpen says whether liveness and readiness of p may run: it has no startup probe, or that
// probe's success has been delivered (p.has is never written once the workers run).
func gateOpen(p *probed) bool {
	if !p.has[Startup] {
		return true
	}
	select {
	case <-p.startedC:
		return true
	default:
		return false
	}
}

// run is the worker of one container probe.
func (m *Manager) run(ctx context.Context, p *probed, k Kind, mach *Machine, h handler, t Target, spec Spec) {
	log := m.cfg.Logger.With("containerID", p.id, "container", p.name, "probe", k)
	timer := time.NewTimer(time.Until(mach.Due()))
	defer timer.Stop()
	var gate <-chan struct{} // liveness and readiness run as soon as the startup probe passed
	if k != Startup && p.has[Startup] {
		gate = p.startedC
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-gate:
			gate = nil
			timer.Stop() // (Go >= 1.23 timers: no stale tick after Stop or Reset)
			mach.RunNow(time.Now())
		}
		if k != Startup && !gateOpen(p) {
			mach.Skip(time.Now())
		} else {
			o := h(ctx, t, spec.Timeout)
			if ctx.Err() != nil {
				return // stopped while probing: the container is going away
			}
			if o.Result == Unknown {
				mach.Skip(time.Now())
			} else {
				m.event(p, k, o)
				res, changed := mach.Record(time.Now(), o.Result)
				if changed {
					log.Info("probe result changed", "result", res, "output", o.Output)
					if !m.set(ctx, p, k, res) {
						return
					}
				}
			}
		}
		if mach.Done() {
			return
		}
		timer.Reset(time.Until(mach.Due()))
	}
}

// set stores a changed result and sends the update. It returns false when ctx ended first.
func (m *Manager) set(ctx context.Context, p *probed, k Kind, r Result) bool {
	m.mu.Lock()
	if m.containers[p.id] != p {
		m.mu.Unlock()
		return false // stopped
	}
	p.results[k] = r
	m.mu.Unlock()
	select {
	case m.updates <- Update{PodUID: p.podUID, Container: p.name, ContainerID: p.id, Kind: k, Result: r}:
	case <-ctx.Done():
		return false
	}
	if k == Startup && r == Success {
		close(p.startedC) // once: a startup probe's machine is done after its success
	}
	return true
}

func (m *Manager) event(p *probed, k Kind, o Outcome) {
	if m.cfg.Events == nil {
		return
	}
	ev := Event{PodUID: p.podUID, Container: p.name, ContainerID: p.id, Kind: k, Reason: ReasonUnhealthy}
	switch {
	case o.Err != nil:
		ev.Message = fmt.Sprintf("%s probe errored: %v", k, o.Err)
	case o.Result == Failure:
		ev.Message = fmt.Sprintf("%s probe failed: %s", k, o.Output)
	case o.Warning:
		ev.Reason, ev.Message = ReasonProbeWarning, fmt.Sprintf("%s probe warning: %s", k, o.Output)
	default:
		return
	}
	m.cfg.Events(ev)
}
