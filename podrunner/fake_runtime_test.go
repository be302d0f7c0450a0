package podrunner

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// fakeCall is one recorded Runtime call.
type fakeCall struct {
	Seq     int
	Op      string // EnsureImage (ImagePresent with policy Never), CreateSandbox, CreateContainerEarly (a StartContainer with SandboxReady, before it waits), StartContainer, StopContainer, RecordExit, Finalize, RemoveContainer, ListContainers, RemovePodFiles
	ID      string // container ID (created, stopped, removed...)
	PodUID  string
	Name    string // container name; image ref for EnsureImage
	Attempt int
	Grace   time.Duration
	At      time.Time
	Config  ConfigLookup // StartContainer: the request's Config
	Secrets []string     // EnsureImage: names of the pull secrets passed
}

// fakeRuntime is a scriptable, thread-safe in-memory Runtime. Tests make containers exit with
// Exit, fail pulls with FailPull, and block stops with a stop hook.
type fakeRuntime struct {
	mu       sync.Mutex
	seq      int
	nextID   int
	recs     map[string]*ContainerRecord
	calls    []fakeCall
	pullErrs map[string]error
	// pullHang: image refs whose pull waits until its context ends (a registry that stopped
	// sending), then fails with the context's error.
	pullHang map[string]bool
	// startErrs: container name -> error StartContainer returns without keeping a record.
	startErrs map[string]error
	// sandboxHold, when set, keeps each CreateSandbox from returning (after its created callback)
	// until it is closed or receives; sandboxErr, when set, is what CreateSandbox then returns.
	sandboxHold chan struct{}
	sandboxErr  error
	// stopHook, when set, is called (without the lock) before a StopContainer takes effect.
	stopHook func(ctx context.Context, id string)
	exits    chan ExitEvent
	// execFn, when set, answers Exec (without the lock); else Exec returns 0 on a running container.
	execFn func(ctx context.Context, id string, req ExecRequest) (int, error)
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{
		recs:      map[string]*ContainerRecord{},
		pullErrs:  map[string]error{},
		pullHang:  map[string]bool{},
		startErrs: map[string]error{},
		exits:     make(chan ExitEvent, 1000),
	}
}

func (f *fakeRuntime) recordLocked(c fakeCall) {
	f.seq++
	c.Seq = f.seq
	c.At = time.Now()
	f.calls = append(f.calls, c)
}

func (f *fakeRuntime) newIDLocked(prefix string) string {
	f.nextID++
	return fmt.Sprintf("%s%d", prefix, f.nextID)
}

func (f *fakeRuntime) EnsureImage(ctx context.Context, ref string, policy corev1.PullPolicy, opts PullOptions) (ImageResult, error) {
	f.mu.Lock()
	if f.pullHang[ref] && policy == corev1.PullNever {
		f.mu.Unlock()
		return ImageResult{}, ImageNeverPull(ref) // not on the node
	}
	if f.pullHang[ref] {
		f.recordLocked(fakeCall{Op: "EnsureImage", Name: ref})
		f.mu.Unlock()
		<-ctx.Done()
		return ImageResult{}, fmt.Errorf("ErrImagePull: failed to pull and unpack image %q: %w", ref, ctx.Err())
	}
	defer f.mu.Unlock()
	var secrets []string
	for _, s := range opts.Secrets {
		secrets = append(secrets, s.Name)
	}
	op := "EnsureImage"
	if policy == corev1.PullNever {
		op = "ImagePresent" // a look at the node's images, never a pull
	}
	f.recordLocked(fakeCall{Op: op, Name: ref, Secrets: secrets})
	if err := f.pullErrs[ref]; err != nil {
		return ImageResult{}, err
	}
	return ImageResult{Ref: "docker.io/library/" + ref, ID: "sha256:" + ref}, nil
}

func (f *fakeRuntime) CreateSandbox(_ context.Context, pod *corev1.Pod, attempt int, created func(ContainerRecord)) (ContainerRecord, error) {
	f.mu.Lock()
	now := time.Now()
	r := &ContainerRecord{
		ID: f.newIDLocked("sb"), PodUID: string(pod.UID), PodName: pod.Name, PodNamespace: pod.Namespace,
		Kind: KindSandbox, Attempt: attempt, State: StateCreated, TaskPresent: true, PID: uint32(1000 + f.nextID),
		CreatedAt: now, StartedAt: now, GracePeriod: gracePeriod(pod),
	}
	f.recs[r.ID] = r
	f.recordLocked(fakeCall{Op: "CreateSandbox", ID: r.ID, PodUID: r.PodUID, Attempt: attempt})
	hold, sbErr := f.sandboxHold, f.sandboxErr
	f.mu.Unlock()
	if created != nil {
		created(*r)
	}
	if hold != nil {
		<-hold // the test lets the sandbox finish
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if sbErr != nil {
		delete(f.recs, r.ID)
		return ContainerRecord{}, sbErr
	}
	r.State = StateRunning
	return *r, nil
}

func (f *fakeRuntime) StartContainer(_ context.Context, req StartRequest) (ContainerRecord, error) {
	if req.SandboxReady != nil {
		f.mu.Lock()
		f.recordLocked(fakeCall{Op: "CreateContainerEarly", PodUID: string(req.Pod.UID), Name: req.Container.Name, Attempt: req.Attempt})
		f.mu.Unlock()
		if _, err := req.SandboxReady(); err != nil {
			return ContainerRecord{}, fmt.Errorf("start %s: %w: %w", req.Container.Name, ErrSandboxNotReady, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.startErrs[req.Container.Name]; err != nil {
		f.recordLocked(fakeCall{Op: "StartContainer", PodUID: string(req.Pod.UID), Name: req.Container.Name, Attempt: req.Attempt, Config: req.Config})
		return ContainerRecord{}, err
	}
	now := time.Now()
	r := &ContainerRecord{
		ID: f.newIDLocked("c"), PodUID: string(req.Pod.UID), PodName: req.Pod.Name, PodNamespace: req.Pod.Namespace,
		Name: req.Container.Name, Kind: req.Kind, Attempt: req.Attempt, SpecHash: req.SpecHash,
		Image: req.Container.Image, ImageID: "sha256:" + req.Container.Image, LogPath: req.LogPath,
		State: StateRunning, TaskPresent: true, PID: uint32(1000 + f.nextID),
		CreatedAt: now, StartedAt: now, GracePeriod: gracePeriod(req.Pod),
	}
	f.recs[r.ID] = r
	f.recordLocked(fakeCall{Op: "StartContainer", ID: r.ID, PodUID: r.PodUID, Name: r.Name, Attempt: r.Attempt, Config: req.Config})
	return *r, nil
}

func (f *fakeRuntime) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	f.mu.Lock()
	hook := f.stopHook
	f.mu.Unlock()
	if hook != nil {
		hook(ctx, id)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.recs[id]
	uid, name := "", ""
	if r != nil {
		uid, name = r.PodUID, r.Name
	}
	f.recordLocked(fakeCall{Op: "StopContainer", ID: id, PodUID: uid, Name: name, Grace: grace})
	if r != nil && r.State == StateRunning {
		f.exitLocked(r, 137)
	}
	return nil
}

// exitLocked makes a running container exit with code and sends the exit hint.
func (f *fakeRuntime) exitLocked(r *ContainerRecord, code int32) {
	markExited(r, code)
	f.exits <- ExitEvent{PodUID: r.PodUID, ContainerID: r.ID, ExitCode: uint32(code), ExitedAt: r.FinishedAt}
}

func markExited(r *ContainerRecord, code int32) {
	r.State, r.ExitCode, r.FinishedAt = StateExited, code, time.Now()
}

func (f *fakeRuntime) RecordExit(_ context.Context, id string) (ContainerRecord, error) {
	return f.exitCall("RecordExit", id, func(r *ContainerRecord) {})
}

func (f *fakeRuntime) Finalize(_ context.Context, id string) (ContainerRecord, error) {
	return f.exitCall("Finalize", id, func(r *ContainerRecord) { r.TaskPresent = false })
}

// exitCall records call op on container id, records its exit when it has exited, then applies
// change (Finalize: the task released).
func (f *fakeRuntime) exitCall(op, id string, change func(*ContainerRecord)) (ContainerRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.recs[id]
	if r == nil {
		return ContainerRecord{}, fmt.Errorf("container %s: %w", id, ErrNotFound)
	}
	f.recordLocked(fakeCall{Op: op, ID: id, PodUID: r.PodUID, Name: r.Name})
	r.ExitRecorded = r.ExitRecorded || r.State == StateExited
	change(r)
	return *r, nil
}

func (f *fakeRuntime) RemoveContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	uid, name := "", ""
	if r := f.recs[id]; r != nil {
		uid, name = r.PodUID, r.Name
	}
	f.recordLocked(fakeCall{Op: "RemoveContainer", ID: id, PodUID: uid, Name: name})
	delete(f.recs, id)
	return nil
}

func (f *fakeRuntime) ListContainers(_ context.Context, podUID string) ([]ContainerRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recordLocked(fakeCall{Op: "ListContainers", PodUID: podUID})
	return f.listLocked(podUID), nil
}

func (f *fakeRuntime) listLocked(podUID string) []ContainerRecord {
	var out []ContainerRecord
	for _, r := range f.recs {
		if podUID == "" || r.PodUID == podUID {
			out = append(out, *r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (f *fakeRuntime) RemovePodFiles(podUID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recordLocked(fakeCall{Op: "RemovePodFiles", PodUID: podUID})
	return nil
}

func (f *fakeRuntime) Exits() <-chan ExitEvent { return f.exits }

// --- test controls ---

// Seed adds a record as if a previous podkeeper had created it.
func (f *fakeRuntime) Seed(r ContainerRecord) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := r
	f.recs[r.ID] = &c
}

// Exit makes the running container id exit with code (and sends an ExitEvent).
func (f *fakeRuntime) Exit(t *testing.T, id string, code int32) time.Time {
	t.Helper()
	return f.exit(t, "Exit", id, func(r *ContainerRecord) { f.exitLocked(r, code) })
}

// ExitUnseen makes the running container id exit with code and sends no ExitEvent, as an exit
// while the runtime's event stream was down.
func (f *fakeRuntime) ExitUnseen(t *testing.T, id string, code int32) {
	t.Helper()
	f.exit(t, "ExitUnseen", id, func(r *ContainerRecord) { markExited(r, code) })
}

// exit applies do to the running container id (failing the test if there is none) and returns
// its FinishedAt.
func (f *fakeRuntime) exit(t *testing.T, op, id string, do func(*ContainerRecord)) time.Time {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.recs[id]
	if r == nil || r.State != StateRunning {
		t.Fatalf("%s(%s): not a running container: %+v", op, id, r)
	}
	do(r)
	return r.FinishedAt
}

// StreamBack sends the hint that exits may have been missed (an ExitEvent with no PodUID).
func (f *fakeRuntime) StreamBack() { f.exits <- ExitEvent{} }

// FailPull makes EnsureImage of ref fail with err (nil: succeed again).
// FailStart makes StartContainer of container name fail with err, keeping nothing (nil: start again).
func (f *fakeRuntime) FailStart(name string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.startErrs, name)
		return
	}
	f.startErrs[name] = err
}

func (f *fakeRuntime) FailPull(ref string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pullErrs[ref] = err
}

func (f *fakeRuntime) SetStopHook(h func(ctx context.Context, id string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopHook = h
}

// Calls returns the recorded calls with op (all when op is empty), oldest first.
func (f *fakeRuntime) Calls(op string) []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeCall
	for _, c := range f.calls {
		if op == "" || c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

// CallsFor returns the calls with op about pod uid.
func (f *fakeRuntime) CallsFor(op, uid string) []fakeCall {
	var out []fakeCall
	for _, c := range f.Calls(op) {
		if c.PodUID == uid {
			out = append(out, c)
		}
	}
	return out
}

// Containers returns the records of pod uid (all when empty).
func (f *fakeRuntime) Containers(uid string) []ContainerRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.listLocked(uid)
}

// Running returns the running instance of container name of pod uid.
func (f *fakeRuntime) Running(uid, name string) (ContainerRecord, bool) {
	for _, r := range f.Containers(uid) {
		if r.Name == name && r.Kind != KindSandbox && r.State == StateRunning {
			return r, true
		}
	}
	return ContainerRecord{}, false
}

var _ Runtime = (*fakeRuntime)(nil)

// Exec answers with execFn when set (see SetExec), else 0, for a running container.
func (f *fakeRuntime) Exec(ctx context.Context, id string, req ExecRequest) (int, error) {
	f.mu.Lock()
	f.recordLocked(fakeCall{Op: "Exec", ID: id})
	r, ok := f.recs[id]
	running := ok && r.State == StateRunning
	fn := f.execFn
	f.mu.Unlock()
	if !running {
		return -1, fmt.Errorf("exec in %s: %w", id, ErrNotFound)
	}
	if fn != nil {
		return fn(ctx, id, req)
	}
	return 0, nil
}

// SetExec makes Exec answer with fn.
func (f *fakeRuntime) SetExec(fn func(ctx context.Context, id string, req ExecRequest) (int, error)) {
	f.mu.Lock()
	f.execFn = fn
	f.mu.Unlock()
}
