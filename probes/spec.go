package probes

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Kind is a probe's purpose, spelled as the kubelet spells it in events.
type Kind string

const (
	Startup   Kind = "Startup"
	Liveness  Kind = "Liveness"
	Readiness Kind = "Readiness"
)

// Result is a probe's result as its users see it.
type Result int8

const (
	Unknown Result = iota // not decided yet (a startup probe before its first verdict)
	Success
	Failure
)

func (r Result) String() string {
	switch r {
	case Success:
		return "success"
	case Failure:
		return "failure"
	}
	return "unknown"
}

// The kubelet's (the API server's) probe defaults.
const (
	DefaultPeriod           = 10 * time.Second
	DefaultTimeout          = 1 * time.Second
	DefaultSuccessThreshold = 1
	DefaultFailureThreshold = 3
)

// Spec is a probe's timing with the defaults applied.
type Spec struct {
	InitialDelay     time.Duration
	Period           time.Duration
	Timeout          time.Duration
	SuccessThreshold int
	FailureThreshold int
}

// SpecOf reads a probe's timing; zero or negative fields get the kubelet's defaults, and the
// success threshold of liveness and startup probes is always 1 (the API requires it).
func SpecOf(kind Kind, p *corev1.Probe) Spec {
	s := Spec{
		InitialDelay:     time.Duration(p.InitialDelaySeconds) * time.Second,
		Period:           time.Duration(p.PeriodSeconds) * time.Second,
		Timeout:          time.Duration(p.TimeoutSeconds) * time.Second,
		SuccessThreshold: int(p.SuccessThreshold),
		FailureThreshold: int(p.FailureThreshold),
	}
	if s.InitialDelay < 0 {
		s.InitialDelay = 0
	}
	if s.Period <= 0 {
		s.Period = DefaultPeriod
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.SuccessThreshold <= 0 || kind != Readiness {
		s.SuccessThreshold = DefaultSuccessThreshold
	}
	if s.FailureThreshold <= 0 {
		s.FailureThreshold = DefaultFailureThreshold
	}
	return s
}

// probeOf returns container c's probe of kind k, or nil.
func probeOf(c *corev1.Container, k Kind) *corev1.Probe {
	switch k {
	case Startup:
		return c.StartupProbe
	case Liveness:
		return c.LivenessProbe
	case Readiness:
		return c.ReadinessProbe
	}
	return nil
}

// GracePeriod is the grace to kill a container with after its liveness or startup probe
// failed: the probe's terminationGracePeriodSeconds when set, else podGrace.
func GracePeriod(p *corev1.Probe, podGrace time.Duration) time.Duration {
	if p != nil && p.TerminationGracePeriodSeconds != nil && *p.TerminationGracePeriodSeconds >= 0 {
		return time.Duration(*p.TerminationGracePeriodSeconds) * time.Second
	}
	return podGrace
}
