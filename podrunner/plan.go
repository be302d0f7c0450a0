package podrunner

import (
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodView is what the runtime shows of one pod, grouped for planning. Build it with NewPodView.
type PodView struct {
	Sandboxes  []ContainerRecord            // newest attempt first
	Containers map[string][]ContainerRecord // by container name, newest attempt first
}

// NewPodView groups a pod's container records.
func NewPodView(recs []ContainerRecord) PodView {
	v := PodView{Containers: map[string][]ContainerRecord{}}
	for _, r := range recs {
		if r.Kind == KindSandbox {
			v.Sandboxes = append(v.Sandboxes, r)
			continue
		}
		v.Containers[r.Name] = append(v.Containers[r.Name], r)
	}
	newestFirst := func(rs []ContainerRecord) {
		sort.Slice(rs, func(i, j int) bool {
			if rs[i].Attempt != rs[j].Attempt {
				return rs[i].Attempt > rs[j].Attempt
			}
			return rs[i].CreatedAt.After(rs[j].CreatedAt)
		})
	}
	newestFirst(v.Sandboxes)
	for _, rs := range v.Containers {
		newestFirst(rs)
	}
	return v
}

// WithSandbox returns v with sb as its newest sandbox (v's records are shared, not copied).
func (v PodView) WithSandbox(sb ContainerRecord) PodView {
	return PodView{Sandboxes: append([]ContainerRecord{sb}, v.Sandboxes...), Containers: v.Containers}
}

// Sandbox returns the newest sandbox, if any.
func (v PodView) Sandbox() (ContainerRecord, bool) {
	if len(v.Sandboxes) == 0 {
		return ContainerRecord{}, false
	}
	return v.Sandboxes[0], true
}

// Latest returns the newest instance of a container, if any.
func (v PodView) Latest(name string) (ContainerRecord, bool) {
	rs := v.Containers[name]
	if len(rs) == 0 {
		return ContainerRecord{}, false
	}
	return rs[0], true
}

// Previous returns the instance before the newest, if any (the lastState of a container).
func (v PodView) Previous(name string) (ContainerRecord, bool) {
	rs := v.Containers[name]
	if len(rs) < 2 {
		return ContainerRecord{}, false
	}
	return rs[1], true
}

// Running reports whether any container (not the sandbox) is running.
func (v PodView) Running() bool {
	for _, rs := range v.Containers {
		if len(rs) > 0 && rs[0].State == StateRunning {
			return true
		}
	}
	return false
}

// RestartGate tells the planner the earliest time an exited instance may be replaced (the
// worker's CrashLoopBackOff memory). The zero time means now.
type RestartGate func(ContainerRecord) time.Time

// Plan is what a pod needs next. The worker executes it and plans again until a plan asks for
// nothing; the planner never performs anything itself.
type Plan struct {
	// podDesc names the pod in back-off messages as the kubelet does: name_namespace(uid).
	podDesc string
	// KillPod: the sandbox is gone while containers run; stop them all, then plan again.
	KillPod bool
	// CreateSandbox with SandboxAttempt; nothing else is planned until it exists.
	CreateSandbox  bool
	SandboxAttempt int
	// StopSandbox: the pod reached Succeeded or Failed; its sandbox can go.
	StopSandbox bool
	// StopSidecars lists running sidecar IDs to stop, in the order to stop them (reverse of the
	// spec), before the sandbox: the pod's app containers are done.
	StopSidecars []string
	// Reset is set when a container exited with a code its RestartAllContainers rule names: the
	// pod restarts in place (its sandbox kept). ResetKill lists the running instances to stop
	// first, in order (app containers, then init containers, each in spec order); once none is
	// left every container runs again from the first init container.
	Reset     *ResetCause
	ResetKill []ContainerRecord
	Start     []StartAction
	// Waiting says why a container is not running and not started now.
	Waiting map[string]Waiting
	// Remove lists container IDs no longer needed (instances older than the previous one, dead
	// sandboxes other than the newest).
	Remove []string
	// WakeAt is when the plan changes by itself (a backoff expires); zero if never.
	WakeAt time.Time
	Phase  corev1.PodPhase
}

// StartAction starts one container instance.
type StartAction struct {
	Container *corev1.Container
	Kind      ContainerKind
	Attempt   int
}

// ResetCause is the exit that restarts a pod in place.
type ResetCause struct {
	Container string
	ExitCode  int32
	At        time.Time // the exit's time: instances started before it belong to the old run
}

// Waiting is a container's waiting state as the kubelet reports it.
type Waiting struct {
	Reason  string
	Message string
	Until   time.Time
}

// Reasons of waiting containers, as the kubelet reports them.
const (
	ReasonContainerCreating = "ContainerCreating"
	ReasonPodInitializing   = "PodInitializing"
	ReasonCrashLoopBackOff  = "CrashLoopBackOff"
	// ReasonStartError is the terminated reason (exit code 128) of an instance whose task could
	// not be created or started, as the kubelet 1.37 on containerd reports it.
	ReasonStartError = "StartError"
	// ReasonRestartingAllContainers is the waiting reason of containers stopped for an in-place
	// pod restart (RestartAllContainers), as the kubelet 1.37 reports it.
	ReasonRestartingAllContainers = "RestartingAllContainers"
)

// ContainerShouldRestart says whether container c of pod is started again after exiting with
// exitCode, as the kubelet 1.37 decides it (ContainerRestartRules, beta and on since 1.35): with
// a restartPolicy of its own, the first of its restartPolicyRules whose exit codes match decides
// (action Restart or RestartAllContainers: yes), else its own policy; without one, the pod's restartPolicy. A sidecar
// (restartPolicy Always) always restarts. Pure.
func ContainerShouldRestart(pod *corev1.Pod, c *corev1.Container, exitCode int32) bool {
	if c.RestartPolicy != nil {
		if r := matchingRule(c, exitCode); r != nil && (r.Action == corev1.ContainerRestartRuleActionRestart || r.Action == corev1.ContainerRestartRuleActionRestartAllContainers) {
			return true
		} // no rule matches, or another action (refused at validation): the container's policy decides
		switch *c.RestartPolicy {
		case corev1.ContainerRestartPolicyAlways:
			return true
		case corev1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case corev1.ContainerRestartPolicyNever:
			return false
		}
	}
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	default:
		return true
	}
}

// ProbeKillRestarts says whether container c of pod is started again after podkeeper stopped it
// for a failed liveness or startup probe, as the kubelet decides it when it kills: unless its
// policy (its own, else the pod's) is Never, whatever the exit code (a process that exits 0 on
// SIGTERM under OnFailure restarts too); its restartPolicyRules are not read, since the
// container was still running. Pure.
func ProbeKillRestarts(pod *corev1.Pod, c *corev1.Container) bool {
	if c.RestartPolicy != nil {
		return *c.RestartPolicy != corev1.ContainerRestartPolicyNever
	}
	return pod.Spec.RestartPolicy != corev1.RestartPolicyNever
}

// restartsAfter says whether container c restarts after its instance rec ended: by
// ContainerShouldRestart, and after a probe kill also by ProbeKillRestarts (the kubelet decides
// at the kill, and the exit is then judged as any other: a restartPolicyRules match restarts a
// container whose policy is Never). Pure.
//
// The kubelet keeps its decision at the kill only when its back-off lets the container start in
// that same sync (the first two probe kills, ProbeKillDelay); a later kill inside a back-off
// leaves the exit to be judged alone, so an OnFailure container whose SIGTERM handler exits 0
// ends the pod Succeeded though its probe failed. podkeeper keeps restarting it, on purpose.
func restartsAfter(pod *corev1.Pod, c *corev1.Container, rec ContainerRecord) bool {
	if rec.ProbeKilled && ProbeKillRestarts(pod, c) {
		return true
	}
	return ContainerShouldRestart(pod, c, rec.ExitCode)
}

// matchingRule is the first of container c's restartPolicyRules whose exit codes match exitCode,
// nil when none does or c has no restartPolicy of its own (rules are read only with one).
func matchingRule(c *corev1.Container, exitCode int32) *corev1.ContainerRestartRule {
	if c.RestartPolicy == nil {
		return nil
	}
	for i, r := range c.RestartPolicyRules {
		if r.ExitCodes != nil && exitCodesMatch(*r.ExitCodes, exitCode) {
			return &c.RestartPolicyRules[i]
		}
	}
	return nil
}

// exitCodesMatch says whether exitCode is In (or NotIn) the rule's values.
func exitCodesMatch(r corev1.ContainerRestartRuleOnExitCodes, exitCode int32) bool {
	in := slices.Contains(r.Values, exitCode)
	if r.Operator == corev1.ContainerRestartRuleOnExitCodesOpNotIn {
		return !in
	}
	return r.Operator == corev1.ContainerRestartRuleOnExitCodesOpIn && in
}

// belongsTo reports whether an instance ran in the given sandbox generation: it started after the
// sandbox did. Instances from before a sandbox was replaced do not count as done.
func belongsTo(r, sandbox ContainerRecord) bool {
	return !r.StartedAt.Before(sandbox.StartedAt.Add(-time.Second))
}

// restartsAll reports whether container c's exit with exitCode restarts the whole pod: the first
// of its restartPolicyRules that matches has action RestartAllContainers (the kubelet's
// RestartAllContainersOnContainerExits, beta and on since 1.36).
func restartsAll(c *corev1.Container, exitCode int32) bool {
	r := matchingRule(c, exitCode)
	return r != nil && r.Action == corev1.ContainerRestartRuleActionRestartAllContainers
}

// CouldRestartAll reports whether any container of pod has a RestartAllContainers rule (such a
// pod reports the AllContainersRestarting condition).
func CouldRestartAll(pod *corev1.Pod) bool {
	for _, c := range allContainers(pod) {
		for _, r := range c.RestartPolicyRules {
			if r.Action == corev1.ContainerRestartRuleActionRestartAllContainers {
				return true
			}
		}
	}
	return false
}

// lastReset finds the newest exit, in the current sandbox, that restarts the whole pod: every
// instance started before it belongs to the pod's previous run. Records of every instance count
// (the newest and the previous), so the boundary holds while the pod runs again. Nil: none.
func lastReset(pod *corev1.Pod, v PodView, sb ContainerRecord) *ResetCause {
	var out *ResetCause
	for _, c := range allContainers(pod) {
		for _, r := range v.Containers[c.Name] {
			if r.State != StateExited || r.FinishedAt.IsZero() || !belongsTo(r, sb) || !restartsAll(c, r.ExitCode) {
				continue
			}
			if out == nil || r.FinishedAt.After(out.At) {
				out = &ResetCause{Container: c.Name, ExitCode: r.ExitCode, At: r.FinishedAt}
			}
		}
	}
	return out
}

// current reports whether instance r belongs to the pod's current run: its sandbox's, and after
// the last in-place restart (reset, nil: none).
func current(r, sb ContainerRecord, reset *ResetCause) bool {
	return belongsTo(r, sb) && (reset == nil || !r.StartedAt.Before(reset.At))
}

// resetKill lists the instances an in-place restart stops: those of the previous run still
// running (or created), app containers first, then init containers, each in spec order.
func resetKill(pod *corev1.Pod, v PodView, sb ContainerRecord, reset *ResetCause) []ContainerRecord {
	var out []ContainerRecord
	add := func(cs []corev1.Container) {
		for i := range cs {
			if latest, ok := v.Latest(cs[i].Name); ok && latest.State == StateRunning && !current(latest, sb, reset) {
				out = append(out, latest)
			}
		}
	}
	add(pod.Spec.Containers)
	add(pod.Spec.InitContainers)
	return out
}

// PlanPod decides what pod needs now, given what the runtime shows and when exited instances may
// be replaced, taking every running container as started (PlanPodProbed without probes). Pure:
// the same inputs give the same plan.
func PlanPod(pod *corev1.Pod, v PodView, gate RestartGate, now time.Time) Plan {
	return PlanPodProbed(pod, v, gate, nil, now)
}

// PlanPodProbed is PlanPod with the probes' view of the running containers: a sidecar whose
// startup probe has not passed yet (started false) holds the init sequence, as the kubelet's
// (nil: running means started). Pure.
func PlanPodProbed(pod *corev1.Pod, v PodView, gate RestartGate, probes ProbeStatus, now time.Time) Plan {
	p := Plan{Waiting: map[string]Waiting{}, podDesc: PodRef(pod)}
	p.Remove = removable(pod, v)
	sb, hasSB := v.Sandbox()
	// An exit that restarts the whole pod (RestartAllContainers), and what of the run before it
	// still runs.
	var reset *ResetCause
	var kill []ContainerRecord
	if hasSB {
		if reset = lastReset(pod, v, sb); reset != nil {
			kill = resetKill(pod, v, sb, reset)
		}
	}
	p.Phase = podPhase(pod, v, phaseReset(reset, kill))

	if p.Phase == corev1.PodSucceeded || p.Phase == corev1.PodFailed {
		p.StopSidecars = runningSidecars(pod, v)
		if len(p.StopSidecars) == 0 && hasSB && sb.State == StateRunning {
			p.StopSandbox = true
		}
		return p
	}
	if !hasSB || sb.State != StateRunning {
		if v.Running() {
			p.KillPod = true
			return p
		}
		p.CreateSandbox = true
		if hasSB {
			p.SandboxAttempt = sb.Attempt + 1
		}
		for _, c := range allContainers(pod) {
			p.Waiting[c.Name] = Waiting{Reason: DefaultWaitingReason(pod)}
		}
		return p
	}

	// The previous run's containers stop, then everything starts again from the first init
	// container (no backoff: the kubelet removes the old containers, and with them the exits a
	// backoff would count).
	if len(kill) > 0 {
		p.Reset, p.ResetKill = reset, kill
		for _, c := range allContainers(pod) {
			p.Waiting[c.Name] = Waiting{Reason: ReasonRestartingAllContainers,
				Message: fmt.Sprintf("container %s exited with code %d: the pod's containers restart in place (RestartAllContainers)", reset.Container, reset.ExitCode)}
		}
		return p
	}

	// Init containers: in order, each to success before the next.
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		latest, ok := v.Latest(c.Name)
		if ok && !current(latest, sb, reset) && latest.State != StateRunning {
			ok = false // from an earlier sandbox or run: run it again
			latest.Attempt++
		}
		if IsSidecar(c) {
			started := true
			if ok && latest.State == StateRunning && probes != nil {
				started, _ = probes(c, latest)
			}
			if p.planSidecar(c, latest, ok, started, initPast(pod, v, sb, reset, i), gate, now) {
				continue
			}
			for _, a := range pod.Spec.Containers {
				p.Waiting[a.Name] = Waiting{Reason: ReasonPodInitializing}
			}
			return p
		}
		switch {
		case !ok:
			p.Start = append(p.Start, StartAction{Container: c, Kind: KindInit, Attempt: latest.Attempt})
		case latest.State == StateRunning:
		case latest.State == StateExited && latest.ExitCode == 0:
			continue
		case latest.State == StateExited:
			if !ContainerShouldRestart(pod, c, latest.ExitCode) {
				return p // PodPhase already says Failed
			}
			p.restartOrWait(c, KindInit, latest, gate, now)
		default: // created but never started (crash mid-create): start that attempt again
			p.Start = append(p.Start, StartAction{Container: c, Kind: KindInit, Attempt: latest.Attempt})
		}
		for _, a := range pod.Spec.Containers {
			p.Waiting[a.Name] = Waiting{Reason: ReasonPodInitializing}
		}
		return p
	}

	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		latest, ok := v.Latest(c.Name)
		switch {
		case !ok:
			p.Start = append(p.Start, StartAction{Container: c, Kind: KindApp})
		case latest.State == StateRunning:
		case reset != nil && !current(latest, sb, reset):
			// Ran before the in-place restart: it runs again, whatever its policy says.
			p.Start = append(p.Start, StartAction{Container: c, Kind: KindApp, Attempt: latest.Attempt + 1})
		case latest.State == StateExited:
			if restartsAfter(pod, c, latest) {
				p.restartOrWait(c, KindApp, latest, gate, now)
			}
		default:
			p.Start = append(p.Start, StartAction{Container: c, Kind: KindApp, Attempt: latest.Attempt})
		}
	}
	return p
}

// IsSidecar reports whether an init container is a native sidecar (restartPolicy: Always).
func IsSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// planSidecar plans one native sidecar during the init sequence. It reports whether the sequence
// goes on past it, as the kubelet's: once the run has gone past the sidecar (initPast: a later
// init container or an app container has run), always, the sidecar only restarted when it
// exits; before that, only once it runs and has started (started: no startup probe, or it
// passed). A sidecar that exits, or fails its startup probe and is killed, before the next init
// container ran holds the sequence until it runs again and starts. A sidecar is restarted
// whenever it exits, whatever the pod's restartPolicy.
func (p *Plan) planSidecar(c *corev1.Container, latest ContainerRecord, ok, started, past bool, gate RestartGate, now time.Time) bool {
	switch {
	case !ok:
		p.Start = append(p.Start, StartAction{Container: c, Kind: KindInit, Attempt: latest.Attempt})
		return past
	case latest.State == StateRunning:
		return past || started
	case latest.State == StateExited:
		p.restartOrWait(c, KindInit, latest, gate, now)
		return past
	default: // created but never started
		p.Start = append(p.Start, StartAction{Container: c, Kind: KindInit, Attempt: latest.Attempt})
		return past
	}
}

// initPast reports whether the current run has gone past init container i: a later init
// container or an app container has an instance in it.
func initPast(pod *corev1.Pod, v PodView, sb ContainerRecord, reset *ResetCause, i int) bool {
	ran := func(name string) bool {
		r, ok := v.Latest(name)
		return ok && (r.State == StateRunning || current(r, sb, reset))
	}
	for _, c := range pod.Spec.InitContainers[i+1:] {
		if ran(c.Name) {
			return true
		}
	}
	for _, c := range pod.Spec.Containers {
		if ran(c.Name) {
			return true
		}
	}
	return false
}

// runningSidecars lists the running sidecars of pod in the order they stop: the reverse of the
// spec.
func runningSidecars(pod *corev1.Pod, v PodView) []string {
	var out []string
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		c := &pod.Spec.InitContainers[i]
		if !IsSidecar(c) {
			continue
		}
		if latest, ok := v.Latest(c.Name); ok && latest.State == StateRunning {
			out = append(out, latest.ID)
		}
	}
	return out
}

func (p *Plan) restartOrWait(c *corev1.Container, kind ContainerKind, latest ContainerRecord, gate RestartGate, now time.Time) {
	var notBefore time.Time
	if gate != nil {
		notBefore = gate(latest)
	}
	if !now.Before(notBefore) {
		p.Start = append(p.Start, StartAction{Container: c, Kind: kind, Attempt: latest.Attempt + 1})
		return
	}
	wait := notBefore.Sub(latest.FinishedAt).Round(time.Second)
	if latest.FinishedAt.IsZero() {
		wait = notBefore.Sub(now).Round(time.Second)
	}
	p.Waiting[c.Name] = Waiting{
		Reason:  ReasonCrashLoopBackOff,
		Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", wait, c.Name, p.podDesc),
		Until:   notBefore,
	}
	if p.WakeAt.IsZero() || notBefore.Before(p.WakeAt) {
		p.WakeAt = notBefore
	}
}

// removable lists instances the pod no longer needs: for each container all but the newest two
// (the newest and the previous one serve status and `logs --previous`), for sandboxes all dead
// ones but the newest, and instances of containers no longer in the spec.
func removable(pod *corev1.Pod, v PodView) []string {
	var out []string
	known := map[string]bool{}
	for _, c := range allContainers(pod) {
		known[c.Name] = true
	}
	names := make([]string, 0, len(v.Containers))
	for n := range v.Containers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for i, r := range v.Containers[n] {
			if r.State == StateRunning {
				continue
			}
			if !known[n] || i >= 2 {
				out = append(out, r.ID)
			}
		}
	}
	for i, s := range v.Sandboxes {
		if i > 0 && s.State != StateRunning {
			out = append(out, s.ID)
		}
	}
	return out
}

func allContainers(pod *corev1.Pod) []*corev1.Container {
	out := make([]*corev1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// PodPhase computes the pod phase from its containers as the kubelet does.
//   - Pending: init containers not done, or some container never started.
//   - Running: some container runs, or will be restarted.
//   - Succeeded: every container ended with 0 and none will restart.
//   - Failed: every container ended, one failed, and none will restart.
func PodPhase(pod *corev1.Pod, v PodView) corev1.PodPhase {
	sb, hasSB := v.Sandbox()
	var reset *ResetCause
	if hasSB {
		if reset = lastReset(pod, v, sb); reset != nil {
			reset = phaseReset(reset, resetKill(pod, v, sb, reset))
		}
	}
	return podPhase(pod, v, reset)
}

// phaseReset is the in-place restart the phase counts: none while the previous run's containers
// (kill) are being stopped, for the phase is still theirs.
func phaseReset(reset *ResetCause, kill []ContainerRecord) *ResetCause {
	if len(kill) > 0 {
		return nil
	}
	return reset
}

// podPhase is PodPhase with the in-place restart that bounds the current run (nil: none).
func podPhase(pod *corev1.Pod, v PodView, reset *ResetCause) corev1.PodPhase {
	sb, hasSB := v.Sandbox()
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		latest, ok := v.Latest(c.Name)
		if ok && hasSB && !current(latest, sb, reset) && latest.State != StateRunning {
			ok = false
		}
		if IsSidecar(c) {
			// A sidecar counts as initialized once started; it never decides the phase.
			if !ok || (latest.State != StateRunning && latest.State != StateExited) {
				return corev1.PodPending
			}
			continue
		}
		if !ok || latest.State != StateExited {
			return corev1.PodPending
		}
		if latest.ExitCode != 0 {
			if !ContainerShouldRestart(pod, c, latest.ExitCode) {
				return corev1.PodFailed
			}
			return corev1.PodPending
		}
	}
	running, succeeded, failed, restarting := 0, 0, 0, 0
	for _, c := range pod.Spec.Containers {
		latest, ok := v.Latest(c.Name)
		switch {
		case !ok || latest.State == StateCreated || latest.State == StateUnknown:
			if ok && latest.Attempt > 0 {
				restarting++
				continue
			}
			return corev1.PodPending
		case latest.State == StateRunning:
			running++
		case reset != nil && !current(latest, sb, reset): // runs again after the in-place restart
			restarting++
		case restartsAfter(pod, &c, latest):
			restarting++
		case latest.ExitCode == 0:
			succeeded++
		default:
			failed++
		}
	}
	switch {
	case running > 0 || restarting > 0:
		return corev1.PodRunning
	case failed > 0:
		return corev1.PodFailed
	case succeeded > 0:
		return corev1.PodSucceeded
	}
	return corev1.PodPending
}

// DefaultWaitingReason is the waiting reason of a container that has no instance running: as the
// kubelet, PodInitializing for every container (init ones included) of a pod that has init
// containers, ContainerCreating otherwise.
func DefaultWaitingReason(pod *corev1.Pod) string {
	if len(pod.Spec.InitContainers) > 0 {
		return ReasonPodInitializing
	}
	return ReasonContainerCreating
}

// NeedsPodIP reports whether container c's environment refers to the pod's IP (the downward
// API's status.podIP or status.podIPs), which is known only once the pod network is up.
func NeedsPodIP(c *corev1.Container) bool {
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			switch e.ValueFrom.FieldRef.FieldPath {
			case "status.podIP", "status.podIPs":
				return true
			}
		}
	}
	return false
}
