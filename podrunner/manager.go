// Package podrunner is podkeeper's sync loop: a manager that diffs desired pods against known
// ones, one worker per pod that plans (PlanPod, pure) and acts through the Runtime, restart
// backoff, termination, status and events.
package podrunner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkeeper/podkeeper/probes"
)

// DefaultResync is the kubelet's default syncFrequency (1 minute). Exit events drive restarts;
// the relist only catches what no event told, so it is kept rare: with 110 pods, each relist a
// filtered container list in containerd, it is most of containerd's idle CPU.
const DefaultResync = time.Minute

// Config tunes the manager.
type Config struct {
	NodeName string
	LogDir   string
	HostIP   string
	Backoff  BackoffPolicy // zero: DefaultBackoff
	// Resync is the safety-net relist of each pod beside the runtime's exit events (the kubelet's
	// syncFrequency); zero: DefaultResync.
	Resync time.Duration
	// Allocatable enables admission (admission.go): pods start only when their requests fit.
	Allocatable corev1.ResourceList
	Logger      *slog.Logger
	// Lookup finds ConfigMaps and Secrets for env and volumes until the first UpdateConfig;
	// nil finds nothing.
	Lookup ConfigLookup
	// Eviction turns node-pressure eviction on (evictor.go); nil: off.
	Eviction *EvictionConfig
	// EvictionState is the file evicted pods are remembered in across restarts (evictstate.go);
	// empty: not remembered.
	EvictionState string
	// RecursiveReadOnly says the runtime makes recursively read-only mounts; the status reports
	// recursiveReadOnly IfPossible mounts as Enabled then (the runtime decides the mounts).
	RecursiveReadOnly bool
	// AppArmorHost says the host has AppArmor enabled (apparmor.go).
	AppArmorHost bool
	// SELinuxHost says the host has SELinux enabled (selinux.go).
	SELinuxHost bool
	// Sysctls are the sysctls pods may set (sysctl.go); nil: the safe sysctls only.
	Sysctls *SysctlAllowlist
	// NodeLabels are the node's labels, for the pods' nodeSelector and node affinity
	// (nodeadmission.go); NodeName is matched by matchFields metadata.name.
	NodeLabels map[string]string
}

// Manager owns the pod workers: one per pod UID. It is the only place desired state enters.
type Manager struct {
	cfg Config
	rt  Runtime
	rec *Recorder
	log *slog.Logger
	// probes runs the containers' probes (probing.go).
	probes *probes.Manager

	updates chan []*corev1.Pod // latest snapshot wins
	config  atomic.Pointer[configHolder]
	// heldNames and held: see held.go.
	heldNames atomic.Pointer[map[string]bool]
	ready     chan struct{} // closed once the first snapshot is applied

	mu       sync.Mutex
	workers  map[types.UID]*worker
	byName   map[string]*worker     // namespace/name -> the live instance (running or terminating)
	pending  map[string]*corev1.Pod // namespace/name -> next instance, waiting for the old to end
	status   map[types.UID]*corev1.Pod
	seen     map[types.UID]time.Time
	held     map[string]*corev1.Pod // namespace/name -> running pod kept while its manifest is rejected
	started  map[types.UID]bool     // pods whose start latency was observed (metrics)
	admitted map[string]*corev1.Pod // pod UID -> admitted pod (admission.go)
	// evictor.go: evicted pods, eviction counts, the pressure conditions.
	evicted    map[types.UID]*evictMark
	evictions  map[types.UID]int
	conditions map[corev1.NodeConditionType]ConditionState
	ctx        context.Context
	wg         sync.WaitGroup
}

// NewManager returns a manager; call Run to start it and Update to feed it.
func NewManager(cfg Config, rt Runtime, rec *Recorder) *Manager {
	if cfg.Backoff == (BackoffPolicy{}) {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.Resync == 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Manager{
		cfg:     cfg,
		rt:      rt,
		rec:     rec,
		log:     cfg.Logger,
		updates: make(chan []*corev1.Pod, 1),
		ready:   make(chan struct{}),
		workers: map[types.UID]*worker{},
		byName:  map[string]*worker{},
		pending: map[string]*corev1.Pod{},
		status:  map[types.UID]*corev1.Pod{},
		seen:    map[types.UID]time.Time{},
		started: map[types.UID]bool{},
	}
	m.probes = newProber(m)
	return m
}

// Update hands the manager a full snapshot of desired pods. Never blocks: a snapshot not yet
// applied is replaced by the newer one.
func (m *Manager) Update(pods []*corev1.Pod) {
	for {
		select {
		case m.updates <- pods:
			return
		default:
		}
		select {
		case <-m.updates:
		default:
		}
	}
}

// Ready is closed once the first snapshot has been applied (running pods adopted).
func (m *Manager) Ready() <-chan struct{} { return m.ready }

// Run applies snapshots and routes exit events until ctx ends. Nothing runs, starts or stops
// before the first snapshot arrives: then running containers are adopted, orphans (pods no
// longer in the snapshot) are terminated, and missing pods are started. When ctx ends the workers
// stop where they are; running containers are left running for the next podkeeper to adopt.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	m.ctx = ctx
	m.mu.Unlock()
	go m.routeProbeUpdates(ctx)
	if m.cfg.Eviction != nil {
		go m.runEvictor(ctx)
	}
	var first []*corev1.Pod
	select {
	case <-ctx.Done():
		return ctx.Err()
	case first = <-m.updates:
	}
	m.loadEvictions()
	if err := m.adopt(ctx, first); err != nil {
		return err
	}
	m.pruneEvictions(first)
	m.apply(first)
	close(m.ready)
	for {
		select {
		case <-ctx.Done():
			m.wg.Wait()
			return ctx.Err()
		case pods := <-m.updates:
			m.apply(pods)
		case ev := <-m.rt.Exits():
			m.mu.Lock()
			if ev.PodUID == "" { // exits may have been missed: every pod re-reads its state
				for _, w := range m.workers {
					w.wake()
				}
			} else if w := m.workers[types.UID(ev.PodUID)]; w != nil {
				w.wake()
			}
			m.mu.Unlock()
		}
	}
}

// adopt finds pods podkeeper ran before it (re)started. Those not desired any more get a
// terminating worker, so that a new instance of the same name waits for them.
func (m *Manager) adopt(ctx context.Context, desired []*corev1.Pod) error {
	var recs []ContainerRecord
	for {
		var err error
		recs, err = m.rt.ListContainers(ctx, "")
		if err == nil {
			break
		}
		m.log.Warn("cannot list containers; retrying", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	want := map[types.UID]bool{}
	for _, p := range desired {
		want[p.UID] = true
	}
	orphans := map[types.UID]*corev1.Pod{}
	adopted := map[types.UID]bool{}
	for _, r := range recs {
		uid := types.UID(r.PodUID)
		if want[uid] {
			adopted[uid] = true
			continue
		}
		if _, ok := orphans[uid]; ok {
			continue
		}
		grace := int64(r.GracePeriod / time.Second)
		orphans[uid] = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: r.PodName, Namespace: r.PodNamespace, UID: uid},
			Spec:       corev1.PodSpec{TerminationGracePeriodSeconds: &grace, RestartPolicy: corev1.RestartPolicyNever},
		}
	}
	if len(adopted) > 0 || len(orphans) > 0 {
		m.log.Info("found pods from before this start", "adopted", len(adopted), "toTerminate", len(orphans))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range orphans {
		if m.holdLocked(p) {
			continue
		}
		w := newWorker(m, p)
		w.terminate = true
		m.startWorkerLocked(w)
	}
	return nil
}

// apply diffs a snapshot against the known pods.
func (m *Manager) apply(pods []*corev1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	want := map[types.UID]*corev1.Pod{}
	wantName := map[string]*corev1.Pod{}
	for _, p := range pods {
		want[p.UID] = p
		wantName[p.Namespace+"/"+p.Name] = p
	}
	m.releaseHeldLocked(wantName)
	for uid, w := range m.workers {
		p, ok := want[uid]
		if !ok {
			w.stop()
			continue
		}
		if _, terminating := w.state(); terminating {
			// Removed, then back (same content) while it was still terminating: it starts
			// again once the old instance is gone, like any new instance of that name.
			m.pending[w.fullName] = p
			delete(want, uid)
			continue
		}
		old, _ := w.state()
		if old != nil {
			m.noteManifestError(old, p)
		}
		if !needsWake(old, p) {
			// Same spec as the worker has: no sync. Every snapshot (each manifest event)
			// used to wake every worker, and a batch of new files kept the running ones busy.
			w.setDesired(p)
			continue
		}
		w.update(p)
	}
	for name := range m.pending {
		if _, ok := wantName[name]; !ok {
			delete(m.pending, name)
		}
	}
	for _, p := range pods {
		if _, ok := m.workers[p.UID]; ok {
			continue
		}
		if _, ok := want[p.UID]; !ok {
			continue // already pending behind its terminating instance
		}
		name := p.Namespace + "/" + p.Name
		if old := m.byName[name]; old != nil {
			// A static pod's new instance waits until the old one has terminated.
			m.pending[name] = p
			continue
		}
		m.startWorkerLocked(newWorker(m, p))
	}
}

func (m *Manager) startWorkerLocked(w *worker) {
	m.workers[w.uid] = w
	m.byName[w.fullName] = w
	if _, ok := m.seen[w.uid]; !ok {
		m.seen[w.uid] = time.Now()
	}
	ctx := m.ctx
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		w.run(ctx)
	}()
}

// workerDone is called by a worker whose pod is fully gone.
func (m *Manager) workerDone(w *worker) {
	m.mu.Lock()
	_, wasEvicted := m.evictions[w.uid]
	defer func() {
		if wasEvicted {
			m.saveEvictions() // after the unlock below (defers run last first)
		}
	}()
	defer m.mu.Unlock()
	delete(m.workers, w.uid)
	delete(m.status, w.uid)
	delete(m.seen, w.uid)
	delete(m.started, w.uid)
	delete(m.evicted, w.uid)
	delete(m.evictions, w.uid)
	m.releaseAdmissionLocked(w)
	if m.byName[w.fullName] == w {
		delete(m.byName, w.fullName)
	}
	if next := m.pending[w.fullName]; next != nil {
		delete(m.pending, w.fullName)
		m.startWorkerLocked(newWorker(m, next))
	}
}

func (m *Manager) setStatus(p *corev1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, live := m.workers[p.UID]; !live {
		return
	}
	if seen, ok := m.seen[p.UID]; ok {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations["kubernetes.io/config.seen"] = seen.UTC().Format(time.RFC3339Nano)
		p.CreationTimestamp = metav1.NewTime(seen)
		m.observeStartLocked(p, seen)
	}
	withManifestCondition(p)
	m.status[p.UID] = p
}

// Pods returns every pod the manager knows with its latest status, including pods waiting for
// an older instance to end (Pending), sorted by namespace and name.
func (m *Manager) Pods() []*corev1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(m.status)+len(m.pending))
	for _, p := range m.status {
		out = append(out, p.DeepCopy())
	}
	for _, p := range m.pending {
		q := p.DeepCopy()
		q.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
		}}}
		out = append(out, q)
	}
	out = append(out, m.heldPodsLocked()...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].DeletionTimestamp != nil // the terminating instance first
	})
	return out
}

// FindPod finds a pod by its full name (<name>-<node>) or by the name in its manifest, in
// namespace ns (any namespace when ns is empty). The running instance wins over a terminating one.
func (m *Manager) FindPod(ns, name string) (*corev1.Pod, error) {
	var names []string
	var found *corev1.Pod
	for _, p := range m.Pods() {
		if ns != "" && p.Namespace != ns {
			continue
		}
		names = append(names, p.Name)
		if p.Name == name || p.Annotations["podkeeper.io/manifest-name"] == name {
			if found == nil || found.DeletionTimestamp != nil {
				found = p
			}
		}
	}
	if found == nil {
		if len(names) == 0 {
			return nil, fmt.Errorf("pod %s %w (no pods)", name, ErrNotFound)
		}
		return nil, fmt.Errorf("pod %s %w (pods: %s)", name, ErrNotFound, strings.Join(names, ", "))
	}
	return found, nil
}

// Events returns the recorded events (of one pod when uid is set).
func (m *Manager) Events(uid types.UID) []corev1.Event { return m.rec.Events(uid) }

// ContainerLogPath returns the log file of a container of pod: the newest instance, or the one
// before it with previous.
func (m *Manager) ContainerLogPath(ctx context.Context, pod *corev1.Pod, container string, previous bool) (string, error) {
	recs, err := m.rt.ListContainers(ctx, string(pod.UID))
	if err != nil {
		return "", err
	}
	v := NewPodView(recs)
	if _, ok := v.Containers[container]; !ok {
		if specOf(pod, container) != nil {
			return "", notStartedYet(pod, container, previous)
		}
		var names []string
		for _, c := range allContainers(pod) {
			names = append(names, c.Name)
		}
		return "", fmt.Errorf("container %s %w in pod %s (containers: %s)", container, ErrNotFound, pod.Name, strings.Join(names, ", "))
	}
	r, ok := v.Latest(container)
	if previous {
		r, ok = v.Previous(container)
		if !ok {
			return "", notStartedYet(pod, container, true)
		}
	}
	if r.LogPath != "" {
		return r.LogPath, nil
	}
	return m.LogPath(pod, container, r.Attempt), nil
}

// ErrNoLogsYet is the error of a log asked for a container of the pod's spec that has not run
// yet (an image pull, init containers, a config error): a bad request, as the kubelet's.
var ErrNoLogsYet = errors.New("no logs yet")

// noLogsYet is an error whose text is the kubelet's and that is ErrNoLogsYet.
type noLogsYet string

func (e noLogsYet) Error() string        { return string(e) }
func (e noLogsYet) Is(target error) bool { return target == ErrNoLogsYet }

// IsNoLogsYetMessage reports whether msg is one of notStartedYet's, for a client that only has
// the text of the answer (the kubelet's words, a 400 like any bad request).
func IsNoLogsYetMessage(msg string) bool {
	return strings.Contains(msg, " is waiting to start") || strings.HasPrefix(msg, "previous terminated container ")
}

// notStartedYet says why container of pod, in its spec, has no log, in the kubelet's words
// (its validateContainerLogStatus), from the container's waiting reason in pod's status.
func notStartedYet(pod *corev1.Pod, container string, previous bool) error {
	if previous {
		return noLogsYet(fmt.Sprintf("previous terminated container %q in pod %q not found", container, pod.Name))
	}
	var waiting *corev1.ContainerStateWaiting
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for _, cs := range list {
			if cs.Name == container {
				waiting = cs.State.Waiting
			}
		}
	}
	switch {
	case waiting == nil:
		return noLogsYet(fmt.Sprintf("container %q in pod %q is waiting to start - no logs yet", container, pod.Name))
	case waiting.Reason == "ErrImagePull":
		return noLogsYet(fmt.Sprintf("container %q in pod %q is waiting to start: image can't be pulled", container, pod.Name))
	case waiting.Reason == "ImagePullBackOff":
		return noLogsYet(fmt.Sprintf("container %q in pod %q is waiting to start: trying and failing to pull image", container, pod.Name))
	}
	return noLogsYet(fmt.Sprintf("container %q in pod %q is waiting to start: %s", container, pod.Name, waiting.Reason))
}

// SpecHash is a short hash of a container's spec, kept in its labels for reference.
func SpecHash(c *corev1.Container) string {
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// needsWake reports whether a worker holding old must sync for next (same UID). A changed spec,
// labels or annotations do; so does any pod with volumes, whose projected content may follow a
// ConfigMap or Secret that changed in the same snapshot (the refresh compares content and is cheap).
func needsWake(old, next *corev1.Pod) bool {
	if old == nil || len(next.Spec.Volumes) > 0 {
		return true
	}
	if old == next {
		return false
	}
	return !apiequality.Semantic.DeepEqual(old.ObjectMeta, next.ObjectMeta) ||
		!apiequality.Semantic.DeepEqual(old.Spec, next.Spec)
}
