package probes

import "time"

// Machine is one probe's schedule and threshold logic, with no clock and no I/O: the caller
// passes the time in. It decides when the probe runs and turns the results of single runs into
// the probe's result, as the kubelet does:
//
//   - The first run is due once initialDelay has passed since the container started, and never
//     before the machine exists (a container adopted long after its start is probed at once);
//     a liveness probe's first run then waits its lag too. Then every period (a run that
//     overran its period is not repeated to catch up).
//
//   - The result changes to Success after successThreshold consecutive successes and to Failure
//     after failureThreshold consecutive failures; anything in between keeps the old result.
//
//   - Before any verdict a readiness probe is Failure (not ready), a liveness probe Success, a
//     startup probe Unknown (not started).
//
//   - A startup probe stops once it succeeded; liveness and startup probes stop once they
//     failed (the container is killed; its next instance gets a new Machine).
type Machine struct {
	kind    Kind
	spec    Spec
	lag     time.Duration // liveness: from "may run" to the first run
	next    time.Time
	lastRaw Result
	run     int
	result  Result
	done    bool
}

// InitialResult is a probe's result before its first verdict.
func InitialResult(k Kind) Result {
	switch k {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	}
	return Unknown
}

// NewMachine returns the machine, made at now, of a probe of a container that started at
// startedAt. lag delays a liveness probe's first run (after the initial delay, or after the
// startup probe passed: RunNow); readiness and startup probes ignore it.
//
// This is the kubelet's timing: its prober triggers a readiness run as soon as it sees a running
// container that is not ready yet, while a liveness probe waits for its worker's next tick, which
// comes at a random point of the period. Probing liveness in the first instants of a process
// that has not had time to listen would restart containers the kubelet never restarts.
func NewMachine(kind Kind, spec Spec, startedAt, now time.Time, lag time.Duration) *Machine {
	if kind != Liveness {
		lag = 0
	}
	first := startedAt.Add(spec.InitialDelay)
	if first.Before(now) {
		first = now
	}
	return &Machine{kind: kind, spec: spec, lag: lag, next: first.Add(lag), result: InitialResult(kind)}
}

// Result is the probe's current result.
func (m *Machine) Result() Result { return m.result }

// Done reports that the probe never runs again.
func (m *Machine) Done() bool { return m.done }

// Due is when the probe should run next (meaningless once Done).
func (m *Machine) Due() time.Time { return m.next }

// RunNow makes the next run due at now (a liveness probe: now plus its lag) when it was due
// later: the startup probe just passed, so liveness and readiness need not wait for their next
// period.
func (m *Machine) RunNow(now time.Time) {
	if at := now.Add(m.lag); at.Before(m.next) {
		m.next = at
	}
}

// Skip passes over a due run that must not happen (the startup probe has not passed yet, or the
// run could not reach the container): the next one is a period later.
func (m *Machine) Skip(now time.Time) { m.advance(now) }

// Record takes the result (Success or Failure) of the run that was due, finished at now, and
// returns the probe's result and whether it changed. Unknown counts as a Skip.
func (m *Machine) Record(now time.Time, r Result) (Result, bool) {
	if m.done {
		return m.result, false
	}
	m.advance(now)
	if r == Unknown {
		return m.result, false
	}
	if r == m.lastRaw {
		m.run++
	} else {
		m.lastRaw, m.run = r, 1
	}
	prev := m.result
	switch {
	case r == Success && m.run >= m.spec.SuccessThreshold:
		m.result = Success
	case r == Failure && m.run >= m.spec.FailureThreshold:
		m.result = Failure
	}
	switch {
	case m.kind == Startup && m.result == Success:
		m.done = true
	case (m.kind == Liveness || m.kind == Startup) && m.result == Failure:
		m.done = true
	}
	return m.result, m.result != prev
}

func (m *Machine) advance(now time.Time) {
	m.next = m.next.Add(m.spec.Period)
	for m.next.Before(now) {
		m.next = m.next.Add(m.spec.Period)
	}
}
