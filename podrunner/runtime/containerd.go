// Package runtime is podkeeper's only door to containerd: images, sandboxes, containers, tasks and
// exit events. It implements podrunner.Runtime. Labels on containerd containers are the record of
// what runs; the only state kept in memory is the set of log copiers of running tasks, rebuilt by
// attaching to the tasks' FIFOs after a restart.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	eventsapi "github.com/containerd/containerd/api/events"
	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	"github.com/containerd/typeurl/v2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/cgroup"
	"github.com/podkeeper/podkeeper/podrunner"
	"github.com/podkeeper/podkeeper/podrunner/crilog"
	"github.com/podkeeper/podkeeper/podrunner/metrics"
)

// Config says where containerd is and where podkeeper keeps its files.
type Config struct {
	Address     string // containerd socket
	Namespace   string // containerd namespace of podkeeper's containers
	RootDir     string // podkeeper's root: pods/, fifo/, sandbox/, images/
	PauseBinary string // static binary run as the process of the sandboxes that have one
	// AlwaysPause gives every sandbox a pause process. Without it, a sandbox whose namespaces
	// all exist ahead of its process (see sandboxWithoutProcess) has none.
	AlwaysPause bool
	Snapshotter string          // default overlayfs
	Cgroups     *cgroup.Manager // pod cgroup tree and limits; nil: containerd's defaults (cgroups.go)
	Logger      *slog.Logger
	Network     NetworkConfig // pod networking through CNI; zero: loopback-only pod namespaces
	DNS         DNSConfig     // what /etc/resolv.conf and /etc/hosts of pods are made from
	// RegistryConfigDir holds per-registry hosts.toml files (containerd's layout: mirrors,
	// plain-HTTP hosts, CAs); empty: the defaults (HTTPS, localhost may fall back to HTTP).
	RegistryConfigDir string
	// DockerConfig is a docker config.json with node-wide registry credentials; may be empty or
	// missing. Read at every pull.
	DockerConfig string
	// PullProgressTimeout ends a pull whose registry requests bring no byte for this long (see
	// PullStalledError); 0: DefaultPullProgressTimeout; negative: none.
	PullProgressTimeout time.Duration
	// MaxParallelStarts bounds the sandbox creations and container starts in flight at once
	// (the others wait their turn; a container created ahead of its sandbox no longer counts
	// while it waits for it); 0: DefaultMaxParallelStarts(); negative: no bound.
	MaxParallelStarts int
	// LogMaxSize and LogMaxFiles rotate each container's log file (crilog.WithMaxSize and
	// WithMaxFiles); 0: crilog's defaults, the kubelet's 10 MiB and 5 files.
	LogMaxSize  int64
	LogMaxFiles int
	// LogLinksDir gets a symlink to each started container's log file, as the kubelet's
	// /var/log/containers (loglinks.go); empty: none.
	LogLinksDir string
	// Allocatable is the node's allocatable resources (capacity less reservations and the hard
	// eviction threshold): what a downward-API limit without a container or pod limit reads, and
	// what bounds a medium: Memory emptyDir, as with the kubelet. nil: the host's capacity.
	Allocatable corev1.ResourceList
}

// DefaultMaxParallelStarts is 4 per CPU, at least 8. Measured on 2 cores with 110 pods written
// at once: unbounded, 10.7 s to all Running and ~80 OS threads left in the agent (every worker's
// file writes and syscalls at once; Go keeps each thread it made); 8 at once, 9.5 s and 17
// threads, 4 MiB less RSS. containerd and the 2 cores are the limit either way; one pod alone
// never waits.
func DefaultMaxParallelStarts() int { return max(8, 4*goruntime.NumCPU()) }

// Runtime implements podrunner.Runtime on containerd.
type Runtime struct {
	cfg    Config
	client *containerd.Client
	log    *slog.Logger
	exits  chan podrunner.ExitEvent

	mu      sync.Mutex
	running map[string]*taskIO // container ID -> log copier of a live task
	podOf   map[string]string  // container ID -> pod UID, to route exit events
	oomed   map[string]bool    // container IDs containerd reported an OOM kill for
	podOOM  map[string]int     // pod UID -> OOM kills of the pod cgroup already attributed
	bundles string             // containerd's task bundle dir of the namespace, once found (bundlesDir)
	// exitsSeen: exits the event stream reported, until recorded (losttask.go).
	exitsSeen map[string]seenExit
	// ranPending: directories of started marks still to be synced (ranmark.go).
	ranPending []string
	ranWake    chan struct{}

	shimSweepPending bool // sweepShimsSoon
	shimResweeps     int  // sweepIdleShims: sweeps in a row that found a shim of a removed pod

	cgMu    sync.Mutex           // pod cgroup creation and removal (removePodCgroup)
	cgRetry map[string]time.Time // pod UID -> first failed removal of its cgroup, retried

	images *imageImporter
	net    *podNetwork   // nil without CNI
	starts chan struct{} // slots of MaxParallelStarts; nil: no bound
	// collectLogs: this runtime is the agent's and collects running tasks' output (re-attaching
	// after a restart). Short-lived CLI runtimes (Dial) never touch the FIFOs.
	collectLogs bool
	// rro: runc and the kernel make recursively read-only mounts (detectRecursiveReadOnly).
	rro bool
	// execStarts: the exec starts in flight, which Close lets end (execStartGate).
	execStarts execStartGate
}

// taskIO is a live task together with the writer its output goes to.
type taskIO struct {
	task containerd.Task
	logw *crilog.Writer
	outs []io.Closer
	log  *slog.Logger
}

var _ podrunner.Runtime = (*Runtime)(nil)

// Connect dials containerd, retrying every few seconds (with a log line each time) until it answers
// or ctx ends, prepares the sandbox root filesystem, then starts watching task exits.
func Connect(ctx context.Context, cfg Config) (*Runtime, error) {
	r, err := dial(ctx, cfg, true)
	if err != nil {
		return nil, err
	}
	r.collectLogs = true
	r.rro = detectRecursiveReadOnly(ctx, r.log)
	if err := r.prepareSandboxRootfs(); err != nil {
		r.client.Close()
		return nil, err
	}
	if err := preparePodsDir(r.cfg.RootDir); err != nil {
		r.client.Close()
		return nil, err
	}
	if d := r.cfg.LogLinksDir; d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			r.log.Warn("cannot make the container log links directory", "dir", d, "err", err)
		}
	}
	if n := releaseExecFIFOs(r.fifoDir(), execFIFOHold); n > 0 {
		r.log.Info("released the exec output FIFOs an earlier agent left (their shims were waiting for a reader)", "execs", n)
	}
	r.gcNetworks(ctx)
	r.gcSnapshots(ctx)
	go r.watchExits(ctx)
	go r.sweepShimsPeriodically(ctx)
	r.ranWake = make(chan struct{}, 1)
	go r.syncRanMarks(ctx)
	return r, nil
}

// Dial connects once, for short commands (image import, image ls): no retries, no sandboxes, no
// exit events.
func Dial(ctx context.Context, cfg Config) (*Runtime, error) { return dial(ctx, cfg, false) }

func dial(ctx context.Context, cfg Config, retry bool) (*Runtime, error) {
	if cfg.Snapshotter == "" {
		cfg.Snapshotter = "overlayfs"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	var client *containerd.Client
	var err error
	for attempt := 1; ; attempt++ {
		if !retry && !Answers(cfg.Address) {
			return nil, fmt.Errorf("cannot reach containerd at %s: nothing answers on that socket (is containerd running? try --containerd-address)", cfg.Address)
		}
		if retry && !Answers(cfg.Address) {
			cfg.Logger.Warn("containerd is not answering; retrying in 2s", "address", cfg.Address, "attempt", attempt)
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("connect to containerd at %s: %w", cfg.Address, ctx.Err())
			case <-time.After(2 * time.Second):
			}
			continue
		}
		c, err := containerd.New(cfg.Address, containerd.WithDefaultNamespace(cfg.Namespace), containerd.WithTimeout(5*time.Second))
		if err == nil {
			if _, err = c.Version(ctx); err == nil {
				client = c
				break
			}
			c.Close()
		}
		if !retry {
			return nil, fmt.Errorf("cannot reach containerd at %s: %w", cfg.Address, err)
		}
		cfg.Logger.Warn("containerd is not answering; retrying in 2s", "address", cfg.Address, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to containerd at %s: %w", cfg.Address, ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
	r := &Runtime{
		cfg:     cfg,
		client:  client,
		log:     cfg.Logger,
		exits:   make(chan podrunner.ExitEvent, 1024),
		running: map[string]*taskIO{},
		podOf:   map[string]string{},
	}
	r.images = newImageImporter(r, filepath.Join(cfg.RootDir, "images"))
	if n := cfg.MaxParallelStarts; n >= 0 {
		if n == 0 {
			n = DefaultMaxParallelStarts()
		}
		r.starts = make(chan struct{}, n)
	}
	if cfg.Network.ConfDir != "" {
		if r.net, err = newPodNetwork(cfg.Network, cfg.Namespace, cfg.Logger); err != nil {
			client.Close()
			return nil, err
		}
	}
	return r, nil
}

// execDrainTimeout bounds how long Close waits for the exec starts in flight.
const execDrainTimeout = 10 * time.Second

// Close releases the client. Running containers are not touched. An exec start in flight
// (exec probes and hooks, podkeeper exec) is let end first, for at most execDrainTimeout, and
// no exec starts after Close began: the shim opens the write ends of the exec's output FIFOs,
// whose read ends are this process's, during the start and while it holds its locks, so a
// process that ends before leaves the open waiting for a reader (30 s in containerd 1.6's runc
// shim) and every call to that shim, the pod's kills, states and exits, waiting behind it.
func (r *Runtime) Close() error {
	if n, waited := r.execStarts.closeAndWait(execDrainTimeout); waited > 0 {
		r.log.Info("waited for exec starts in flight", "left", n, "waited", waited.Round(time.Millisecond))
	}
	return r.client.Close()
}

// Client exposes the containerd client for the image commands of the CLI and for tests.
func (r *Runtime) Client() *containerd.Client { return r.client }

// startSlot waits for one of MaxParallelStarts' slots (at once without a bound) and returns its
// release; it fails only when ctx ends first.
func (r *Runtime) startSlot(ctx context.Context) (func(), error) {
	if r.starts == nil {
		return func() {}, nil
	}
	select {
	case r.starts <- struct{}{}:
		return func() { <-r.starts }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a start slot: %w", ctx.Err())
	}
}

func (r *Runtime) ctx(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, r.cfg.Namespace)
}

// Exits implements podrunner.Runtime.
func (r *Runtime) Exits() <-chan podrunner.ExitEvent { return r.exits }

// watchExits turns containerd's /tasks/exit events into ExitEvents, resubscribing when the stream
// breaks (containerd restarted). Once containerd serves again and the new subscription is made, an
// ExitEvent with no PodUID has every pod re-read, for the exits of the gap.
func (r *Runtime) watchExits(ctx context.Context) {
	for gap := false; ctx.Err() == nil; gap = true {
		if gap && !r.waitServing(ctx) {
			return
		}
		sub, cancel := context.WithCancel(ctx)
		evc, errc := r.client.Subscribe(sub, `topic=="/tasks/exit",namespace==`+r.cfg.Namespace, `topic=="/tasks/oom",namespace==`+r.cfg.Namespace)
		if gap {
			select {
			case r.exits <- podrunner.ExitEvent{}:
			case <-ctx.Done():
				cancel()
				return
			}
		}
	loop:
		for {
			select {
			case <-ctx.Done():
				cancel()
				return
			case err := <-errc:
				if err != nil && ctx.Err() == nil {
					r.log.Warn("containerd event stream broken; resubscribing", "err", err)
				}
				break loop
			case env := <-evc:
				if env == nil || env.Event == nil {
					continue
				}
				v, err := typeurl.UnmarshalAny(env.Event)
				if err != nil {
					continue
				}
				if oom, ok := v.(*eventsapi.TaskOOM); ok {
					r.noteOOM(oom.ContainerID)
					continue
				}
				e, ok := v.(*eventsapi.TaskExit)
				if !ok || e.ID != e.ContainerID { // exec processes are not container exits
					continue
				}
				uid := r.podUID(ctx, e.ContainerID)
				if uid == "" {
					continue
				}
				ev := podrunner.ExitEvent{PodUID: uid, ContainerID: e.ContainerID, ExitCode: e.ExitStatus}
				if e.ExitedAt != nil {
					ev.ExitedAt = e.ExitedAt.AsTime()
				}
				r.noteExit(e.ContainerID, e.ExitStatus, ev.ExitedAt)
				select {
				case r.exits <- ev:
				default:
					r.log.Warn("exit events backlog full; relist will catch up", "container", e.ContainerID)
				}
			}
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// waitServing waits, checking every second, until containerd answers; false: ctx ended first.
func (r *Runtime) waitServing(ctx context.Context) bool {
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, _ := r.client.IsServing(cctx)
		cancel()
		if ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Second):
		}
	}
}

func (r *Runtime) podUID(ctx context.Context, id string) string {
	r.mu.Lock()
	uid, ok := r.podOf[id]
	r.mu.Unlock()
	if ok {
		return uid
	}
	c, err := r.client.LoadContainer(r.ctx(ctx), id)
	if err != nil {
		return ""
	}
	labels, err := c.Labels(r.ctx(ctx))
	if err != nil {
		return ""
	}
	uid = labels[LabelPodUID]
	if uid != "" {
		r.mu.Lock()
		r.podOf[id] = uid
		r.mu.Unlock()
	}
	return uid
}

// sandboxRootfs is the read-only root of every sandbox: just the pause binary.
func (r *Runtime) sandboxRootfs() string { return filepath.Join(r.cfg.RootDir, "sandbox", "rootfs") }

// preparePodsDir makes <root>/pods, where the pods' volumes live (secrets among them), closed
// to other users of the host: mode 0750 as the kubelet's own pods directory.
func preparePodsDir(root string) error {
	dir := filepath.Join(root, "pods")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("prepare pods dir: %w", err)
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		return fmt.Errorf("prepare pods dir: %w", err)
	}
	return nil
}

func (r *Runtime) prepareSandboxRootfs() error {
	root := r.sandboxRootfs()
	for _, d := range []string{"proc", "dev", "sys", "etc", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return fmt.Errorf("prepare sandbox rootfs: %w", err)
		}
	}
	if r.cfg.PauseBinary == "" {
		return errors.New("prepare sandbox rootfs: no pause binary configured")
	}
	src, err := os.ReadFile(r.cfg.PauseBinary)
	if err != nil {
		return fmt.Errorf("prepare sandbox rootfs: read pause binary: %w", err)
	}
	dst := filepath.Join(root, "pause")
	if cur, err := os.ReadFile(dst); err == nil && string(cur) == string(src) {
		return nil
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, src, 0o755); err != nil {
		return fmt.Errorf("prepare sandbox rootfs: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("prepare sandbox rootfs: %w", err)
	}
	return nil
}

// containerID names a container instance: <first 16 of pod UID>.<name>.<attempt>. The last part
// of a container's ID is always a number, so a sandbox, <uid16>.<attempt>.sandbox, never
// collides with one (container names are DNS labels and may be "sandbox" or all digits).
func containerID(podUID, name string, attempt int) string {
	if len(name) > 48 {
		name = name[:48]
	}
	return uidPrefix(podUID) + "." + name + "." + strconv.Itoa(attempt)
}

func sandboxIDFor(podUID string, attempt int) string {
	return uidPrefix(podUID) + "." + strconv.Itoa(attempt) + ".sandbox"
}

func uidPrefix(podUID string) string {
	u := strings.ReplaceAll(podUID, "-", "")
	if len(u) > 16 {
		u = u[:16]
	}
	return u
}

func (r *Runtime) baseLabels(pod *corev1.Pod, kind podrunner.ContainerKind, name string, attempt int) map[string]string {
	return map[string]string{
		LabelPodUID:        string(pod.UID),
		LabelPodName:       pod.Name,
		LabelPodNamespace:  pod.Namespace,
		LabelContainerName: name,
		LabelKind:          string(kind),
		LabelAttempt:       strconv.Itoa(attempt),
		LabelStartedAt:     formatTime(time.Now()),
		LabelGrace:         strconv.FormatInt(gracePeriod(pod), 10),
	}
}

func gracePeriod(pod *corev1.Pod) int64 {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return *g
	}
	return 30
}

// CreateSandbox implements podrunner.Runtime.
func (r *Runtime) CreateSandbox(ctx context.Context, pod *corev1.Pod, attempt int, created func(podrunner.ContainerRecord)) (podrunner.ContainerRecord, error) {
	if err := sandboxRefusal(pod, r.cfg.DNS.domain()); err != nil {
		return podrunner.ContainerRecord{}, err
	}
	release, err := r.startSlot(ctx)
	if err != nil {
		return podrunner.ContainerRecord{}, fmt.Errorf("create sandbox of pod %s: %w", pod.Name, err)
	}
	defer release()
	ctx = r.ctx(ctx)
	t0 := time.Now()
	id := sandboxIDFor(string(pod.UID), attempt)
	labels := r.baseLabels(pod, podrunner.KindSandbox, "", attempt)
	opts := []oci.SpecOpts{
		oci.WithDefaultSpec(),
		oci.WithRootFSPath(r.sandboxRootfs()),
		oci.WithRootFSReadonly(),
		oci.WithProcessArgs("/pause"),
		oci.WithAnnotations(map[string]string{shimGroupAnnotation: id}),
		oci.WithoutRunMount,
	}
	opts = append(opts, r.hostnameOpts(pod)...)
	opts = append(opts, sandboxNamespaceOpts(pod)...)
	cgOpts, err := r.sandboxCgroupOpts(pod, id)
	if err != nil {
		return podrunner.ContainerRecord{}, fmt.Errorf("create sandbox %s: %w", id, err)
	}
	opts = append(opts, cgOpts...)
	netOpts, attach, undoNet, err := r.prepareSandbox(ctx, id, pod, labels)
	if err != nil {
		return podrunner.ContainerRecord{}, fmt.Errorf("create sandbox %s: %w", id, err)
	}
	opts = append(opts, netOpts...)
	// With every namespace its containers join made ahead, they may be created from now on, at
	// the same time as the sandbox's own container and task (the two runc creates at once);
	// else once its process exists (below).
	notify := func(task containerd.Task) {
		rec := recordFromLabels(id, labels)
		rec.State = podrunner.StateCreated
		if task != nil {
			rec.TaskPresent, rec.PID = true, task.Pid()
		}
		created(rec)
	}
	early := created != nil && namespacesAhead(pod, labels)
	if early {
		notify(nil)
	}
	tNet := time.Now()
	// CNI ADD runs while the sandbox's container and task are created (it needs only
	// the pinned namespace); everything below waits for it before it returns or undoes.
	var ips []string
	var attachErr error
	var attachTook time.Duration
	attached := make(chan struct{})
	if attach != nil {
		go func() {
			defer close(attached)
			ips, attachErr = attach()
			attachTook = time.Since(tNet)
		}()
	} else {
		close(attached)
	}
	fail := func(c containerd.Container, task containerd.Task, err error) (podrunner.ContainerRecord, error) {
		<-attached
		// Undone also when ctx ended the creation (the pod's stop ends it: worker.abortable).
		cctx := context.WithoutCancel(ctx)
		if task != nil {
			_, _ = r.deleteTask(cctx, task.ID(), task, time.Time{}, containerd.WithProcessKill)
		}
		if c != nil {
			_ = c.Delete(cctx)
		}
		undoNet()
		return podrunner.ContainerRecord{}, err
	}
	c, err := r.client.NewContainer(ctx, id,
		containerd.WithContainerLabels(labels),
		containerd.WithRuntime("io.containerd.runc.v2", r.runcOptions()),
		containerd.WithNewSpec(opts...),
	)
	if err != nil {
		return fail(nil, nil, fmt.Errorf("create sandbox %s: %w", id, err))
	}
	r.remember(id, string(pod.UID))
	tCreate := time.Now()
	if !r.cfg.AlwaysPause && sandboxWithoutProcess(pod, labels) {
		// Nothing for a pause process to hold: the sandbox is its record, its pinned
		// namespaces and its network, ready once the network is complete.
		<-attached
		if attachErr != nil {
			return fail(c, nil, fmt.Errorf("create sandbox %s: %w", id, attachErr))
		}
		upd := map[string]string{LabelNoProcess: "true"}
		if ips != nil {
			labels[LabelPodIPs] = strings.Join(ips, ",")
			upd[LabelPodIPs] = labels[LabelPodIPs]
		}
		if _, err := c.SetLabels(ctx, upd); err != nil {
			return fail(c, nil, fmt.Errorf("record sandbox %s: %w", id, err))
		}
		labels[LabelNoProcess] = "true"
		r.log.Debug("sandbox ready (no process)", "pod", pod.Namespace+"/"+pod.Name, "id", id,
			"prepare", tNet.Sub(t0).Round(time.Millisecond), "container", tCreate.Sub(tNet).Round(time.Millisecond),
			"networkWait", time.Since(tCreate).Round(time.Millisecond), "network", attachTook.Round(time.Millisecond))
		rec := recordFromLabels(id, labels)
		rec.State = podrunner.StateRunning
		return rec, nil
	}
	task, err := c.NewTask(ctx, cio.NullIO)
	if err != nil {
		return fail(c, nil, fmt.Errorf("create sandbox task %s: %w", id, err))
	}
	tTask := time.Now()
	if created != nil && !early {
		notify(task)
	}
	// The pause process starts only once its network is complete: a sandbox that runs always
	// has its IPs recorded (an agent killed before leaves a created task, which is replaced).
	<-attached
	tNetDone := time.Now()
	if attachErr != nil {
		return fail(c, task, fmt.Errorf("create sandbox %s: %w", id, attachErr))
	}
	if ips != nil {
		labels[LabelPodIPs] = strings.Join(ips, ",")
		if _, err := c.SetLabels(ctx, map[string]string{LabelPodIPs: labels[LabelPodIPs]}); err != nil {
			return fail(c, task, fmt.Errorf("record the IPs of sandbox %s: %w", id, err))
		}
	}
	if err := task.Start(ctx); err != nil {
		return fail(c, task, fmt.Errorf("start sandbox %s: %w", id, err))
	}
	if !pod.Spec.HostNetwork && r.net == nil {
		if err := loopbackUp(task.Pid()); err != nil {
			r.log.Warn("could not bring up loopback in pod network namespace", "pod", pod.Name, "err", err)
		}
	}
	r.log.Debug("sandbox started", "pod", pod.Namespace+"/"+pod.Name, "id", id,
		"prepare", tNet.Sub(t0).Round(time.Millisecond), "container", tCreate.Sub(tNet).Round(time.Millisecond),
		"task", tTask.Sub(tCreate).Round(time.Millisecond), "networkWait", tNetDone.Sub(tTask).Round(time.Millisecond),
		"start", time.Since(tNetDone).Round(time.Millisecond), "network", attachTook.Round(time.Millisecond))
	rec := recordFromLabels(id, labels)
	rec.State = podrunner.StateRunning
	rec.TaskPresent = true
	rec.PID = task.Pid()
	return rec, nil
}

// retriedCreate marks the context of a start that is already the retry of one that met what an
// interrupted create left (one retry only).
type retriedCreate struct{}

// StartContainer implements podrunner.Runtime.
func (r *Runtime) StartContainer(ctx context.Context, req podrunner.StartRequest) (podrunner.ContainerRecord, error) {
	slot, err := r.startSlot(ctx)
	if err != nil {
		return podrunner.ContainerRecord{}, fmt.Errorf("start container %s: %w", req.Container.Name, err)
	}
	release := sync.OnceFunc(slot)
	defer release()
	ctx = r.ctx(ctx)
	t0 := time.Now()
	pod, ctr := req.Pod, req.Container
	id := containerID(string(pod.UID), ctr.Name, req.Attempt)
	ref, err := NormalizeRef(ctr.Image)
	if err != nil {
		return podrunner.ContainerRecord{}, err
	}
	image, err := r.client.GetImage(ctx, ref)
	if err != nil {
		return podrunner.ContainerRecord{}, fmt.Errorf("image %s: %w", ref, err)
	}
	labels := r.baseLabels(pod, req.Kind, ctr.Name, req.Attempt)
	labels[LabelSpecHash] = req.SpecHash
	labels[LabelLogPath] = req.LogPath
	labels[LabelImageRef] = ref
	labels[LabelImageID] = image.Target().Digest.String()

	if err := checkSELinuxLevel(mergeSecurity(pod, ctr).SELinux); err != nil {
		return podrunner.ContainerRecord{}, &podrunner.CreateError{Step: fmt.Sprintf("failed to generate container %q spec", id), Err: err}
	}
	specOpts, err := r.containerSpecOpts(ctx, image, req)
	if err != nil {
		return podrunner.ContainerRecord{}, err
	}
	// A leftover from a crash between create and record (same ID) is replaced. First: deleting it
	// removes its termination-message file, which is this instance's file too.
	if old, err := r.client.LoadContainer(ctx, id); err == nil {
		r.deleteContainer(ctx, old)
	} else {
		r.removeOrphanSnapshot(ctx, id)
	}
	termMount, err := terminationMessageMount(r.cfg.RootDir, pod, ctr, req.Attempt, labels)
	if err != nil {
		return podrunner.ContainerRecord{}, err
	}
	specOpts = append(specOpts, oci.WithMounts([]specs.Mount{termMount}), withMountsInDepthOrder)
	tPrep := time.Now()
	c, err := r.client.NewContainer(ctx, id,
		containerd.WithImage(image),
		containerd.WithImageStopSignal(image, "SIGTERM"),
		containerd.WithNewSnapshot(id, image),
		containerd.WithContainerLabels(labels),
		containerd.WithRuntime("io.containerd.runc.v2", r.runcOptions()),
		containerd.WithNewSpec(specOpts...),
	)
	if err != nil {
		// containerd's own failure (a full disk under its metadata or snapshots): as the CRI's
		// CreateContainer failing, CreateContainerError with its words.
		return podrunner.ContainerRecord{}, &podrunner.CreateError{Err: err}
	}
	r.remember(id, string(pod.UID))
	rec := recordFromLabels(id, labels)
	tCreate := time.Now()

	tio, err := r.newTaskIO(req.LogPath)
	if err != nil {
		return rec, r.cannotRun(ctx, c, fmt.Errorf("open log %s: %w", req.LogPath, err))
	}
	var startStdin func(string) error
	if ctr.Stdin {
		startStdin = func(path string) error { return r.startStdinHolder(id, path) }
	}
	task, err := c.NewTask(ctx, logCreator(r.fifoDir(), tio.stream("stdout"), tio.stream("stderr"), ctr.TTY, startStdin))
	if req.SandboxReady != nil {
		// The create is done: waiting for the sandbox (which holds a slot of its own) and the
		// start, a light runc call, leave this slot to the next create.
		release()
	}
	if err != nil {
		tio.close()
		if req.SandboxReady != nil {
			// Created against a sandbox still starting: when that failed (its namespaces are
			// gone), so did this create, through no fault of the container's.
			if serr := r.awaitSandbox(pod, req.SandboxReady); errors.Is(serr, podrunner.ErrSandboxNotReady) {
				_ = r.deleteContainer(ctx, c)
				return podrunner.ContainerRecord{}, fmt.Errorf("create task %s: %w", id, serr)
			}
		}
		if interruptedCreate(err) {
			// Not the container's fault: a task create of the same ID by an agent killed
			// mid-create is still finishing in containerd, or left its container in the shim.
			// Nothing is kept; the worker retries.
			_ = r.deleteContainer(ctx, c)
			if r.endLeftovers(string(pod.UID), id) > 0 && ctx.Value(retriedCreate{}) == nil {
				// What blocked the create is gone: it goes again at once (not after a backoff).
				release()
				return r.StartContainer(context.WithValue(ctx, retriedCreate{}, true), req)
			}
			return podrunner.ContainerRecord{}, fmt.Errorf("create task %s: %w: %w", id, podrunner.ErrCreateInterrupted, err)
		}
		return rec, r.cannotRun(ctx, c, fmt.Errorf("failed to create containerd task: %w", err))
	}
	if l, ok := task.IO().(*logIO); ok {
		l.shimOpened() // the shim opened its write ends in the create
	}
	tio.task = task
	tTask := time.Now()
	if req.SandboxReady != nil {
		if err := r.awaitSandbox(pod, req.SandboxReady); err != nil {
			_, _ = r.deleteTask(ctx, id, task, time.Time{}, containerd.WithProcessKill)
			tio.close()
			_ = r.deleteContainer(ctx, c)
			return podrunner.ContainerRecord{}, fmt.Errorf("start container %s: %w", id, err)
		}
	}
	tReady := time.Now()
	if err := task.Start(ctx); err != nil {
		_, _ = r.deleteTask(ctx, id, task, time.Time{}, containerd.WithProcessKill)
		tio.close()
		return rec, r.cannotRun(ctx, c, fmt.Errorf("failed to start containerd task %q: %w", id, err))
	}
	r.markRan(id, labels)
	// As containerd's CRI, the container started when its task's start returned.
	if at, late := restampStart(parseTime(labels[LabelStartedAt]), time.Now()); late {
		labels[LabelStartedAt] = formatTime(at)
		if _, err := c.SetLabels(ctx, map[string]string{LabelStartedAt: labels[LabelStartedAt]}); err == nil {
			rec.StartedAt = at
		}
	}
	r.mu.Lock()
	r.running[id] = tio
	r.mu.Unlock()
	r.linkLog(id, labels)
	r.log.Debug("container task started", "pod", pod.Namespace+"/"+pod.Name, "id", id,
		"prepare", tPrep.Sub(t0).Round(time.Millisecond), "container", tCreate.Sub(tPrep).Round(time.Millisecond),
		"task", tTask.Sub(tCreate).Round(time.Millisecond), "sandboxWait", tReady.Sub(tTask).Round(time.Millisecond),
		"start", time.Since(tReady).Round(time.Millisecond))
	rec.State = podrunner.StateRunning
	rec.TaskPresent = true
	rec.PID = task.Pid()
	return rec, nil
}

// startedAtSlack is how early a container's started-at label may be. The label is written with
// the container, before its create (snapshot, spec, runc create: tens of ms on an idle machine,
// seconds on a loaded one) and any wait for its sandbox. Half a second is below what the API
// shows (whole seconds) and the shortest probe period; a rewrite is a metadata write on the
// start's path (with a 100 ms slack nearly every start on a slow machine rewrote it, and
// interleaved A/B runs there put kill -> replacement 0-40 ms slower, p50 over 15 kills; at
// 500 ms, the same as without the rewrite), so it is spent only on starts that slow.
const startedAtSlack = 500 * time.Millisecond

// restampStart says whether a container's started-at label, stamped when its create began, is
// to be rewritten with the time its task's start returned (containerd's CRI reports that time),
// and with what: status.startedAt and the
// probes' initialDelaySeconds count from it, and a stamp seconds early (a loaded machine)
// started liveness probes at once on a process that had not begun (found by make conformance:
// a Go server killed before its SIGTERM handler existed). Within startedAtSlack the label stays
// (no second metadata write on a usual start). Pure.
func restampStart(stamped, start time.Time) (time.Time, bool) {
	if start.Sub(stamped) > startedAtSlack {
		return start, true
	}
	return stamped, false
}

// awaitSandbox waits for the sandbox a container was created against before its start (see
// StartRequest.SandboxReady), then writes the pod's files again with the sandbox's IPs (in place:
// the container's bind mounts keep them).
func (r *Runtime) awaitSandbox(pod *corev1.Pod, ready func() (podrunner.ContainerRecord, error)) error {
	sb, err := ready()
	if err != nil {
		return fmt.Errorf("%w: %w", podrunner.ErrSandboxNotReady, err)
	}
	if _, err := writePodFiles(r.cfg.RootDir, pod, sb.PodIPs, r.cfg.DNS); err != nil {
		return err
	}
	return nil
}

// cannotRun records a container that could not start as exited with StartError and exit code 128
// (as containerd's CRI does for the kubelet; the message keeps its "failed to create containerd
// task: " wording), so the worker's restart policy and CrashLoopBackOff apply to it like to any
// failed exit.
func (r *Runtime) cannotRun(ctx context.Context, c containerd.Container, cause error) error {
	msg := cause.Error()
	if len(msg) > 1024 {
		msg = msg[:1024]
	}
	_, _ = c.SetLabels(ctx, map[string]string{
		LabelFinishedAt: formatTime(time.Now()),
		LabelExitCode:   "128",
		LabelReason:     podrunner.ReasonStartError,
		LabelMessage:    msg,
	})
	return fmt.Errorf("%w (%w)", &podrunner.StartFailure{ID: c.ID(), Err: cause}, podrunner.ErrExitRecorded)
}

func (r *Runtime) fifoDir() string { return filepath.Join(r.cfg.RootDir, "fifo") }

func (r *Runtime) remember(id, uid string) {
	r.mu.Lock()
	r.podOf[id] = uid
	r.mu.Unlock()
}

// containerSpecOpts builds the OCI spec of an app or init container.
func (r *Runtime) containerSpecOpts(ctx context.Context, image containerd.Image, req podrunner.StartRequest) ([]oci.SpecOpts, error) {
	pod, ctr := req.Pod, req.Container
	cfg, err := imageConfig(ctx, image)
	if err != nil {
		return nil, err
	}
	alloc := r.nodeAllocatable()
	env, skipped, err := ContainerEnv(ctr, pod.Namespace, req.Config, func(e corev1.EnvVar) string { return resolveEnvSource(pod, ctr, e, alloc) }, fileKeyLookup(r.cfg.RootDir, pod))
	if err != nil {
		return nil, err // the kubelet's message as is: CreateContainerConfigError
	}
	if len(skipped) > 0 {
		r.log.Warn("envFrom keys skipped: not valid environment variable names", "pod", pod.Namespace+"/"+pod.Name, "container", ctr.Name, "keys", skipped)
	}
	vars := map[string]string{}
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	expand := func(in []string) []string {
		out := make([]string, len(in))
		for i, s := range in {
			out[i] = ExpandEnv(s, vars)
		}
		return out
	}
	args := ContainerArgs(cfg.Entrypoint, cfg.Cmd, expand(ctr.Command), expand(ctr.Args))
	if len(args) == 0 {
		return nil, fmt.Errorf("container %q: no command: the image has no entrypoint or cmd and the pod gives none", ctr.Name)
	}
	cwd := cfg.WorkingDir
	if ctr.WorkingDir != "" {
		cwd = ctr.WorkingDir
	}
	if cwd == "" {
		cwd = "/"
	}
	podFiles, err := writePodFiles(r.cfg.RootDir, pod, req.Sandbox.PodIPs, r.cfg.DNS)
	if err != nil {
		return nil, err
	}
	imageDirs := map[string]string{}
	for _, v := range podrunner.ImageVolumesOf(pod, ctr) {
		dir, err := r.mountImageVolume(ctx, pod, v)
		if err != nil {
			return nil, err
		}
		imageDirs[v.Name] = dir
	}
	vols, rootfsPropagation, err := volumeMounts(r.cfg.RootDir, pod, ctr, req.Config, alloc, r.rro, vars, imageDirs)
	if err != nil {
		return nil, err
	}
	opts := []oci.SpecOpts{
		oci.WithDefaultSpec(),
		oci.WithImageConfig(image), // user, and defaults later overridden below
		oci.WithProcessArgs(args...),
		oci.WithProcessCwd(cwd),
		withEnv(MergeEnv(WithHostnameEnv(cfg.Env, r.envHostname(pod)), env)),
	}
	opts = append(opts, containerMountDefaults(ctr)...)
	opts = append(opts,
		oci.WithMounts(append(podFiles, vols...)),
		withRootfsPropagation(rootfsPropagation),
		oci.WithAnnotations(map[string]string{shimGroupAnnotation: req.Sandbox.ID}),
	)
	opts = append(opts, r.hostnameOpts(pod)...)
	sec, err := securityOpts(r.cfg.RootDir, pod, ctr, cfg.User)
	if err != nil {
		return nil, err
	}
	opts = append(opts, sec...)
	nsOpts, err := containerNamespaceOpts(pod, r.sandboxNamespaces(pod, req.Sandbox))
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", req.Sandbox.ID, err)
	}
	opts = append(opts, nsOpts...)
	shm, err := r.podShmOpts(pod, req.Sandbox)
	if err != nil {
		return nil, err
	}
	opts = append(opts, shm...)
	if ctr.TTY {
		opts = append(opts, oci.WithTTY)
	}
	opts = append(opts, r.containerCgroupOpts(pod, ctr, containerID(string(pod.UID), ctr.Name, req.Attempt))...)
	return opts, nil
}

// hostnameOpts gives a hostNetwork pod the host's network and UTS namespaces, any other pod its
// own hostname (the FQDN with setHostnameAsFQDN).
func (r *Runtime) hostnameOpts(pod *corev1.Pod) []oci.SpecOpts {
	if pod.Spec.HostNetwork {
		return []oci.SpecOpts{oci.WithHostNamespace(specs.NetworkNamespace), oci.WithHostNamespace(specs.UTSNamespace)}
	}
	return []oci.SpecOpts{oci.WithHostname(r.podHostname(pod))}
}

// podHostname is the hostname of a pod that is not hostNetwork (the FQDN with setHostnameAsFQDN).
func (r *Runtime) podHostname(pod *corev1.Pod) string {
	h, _, err := PodHostnameAndFQDN(pod, r.cfg.DNS.domain())
	if err != nil {
		h = PodHostname(pod)
	}
	return h
}

func nsFile(t specs.LinuxNamespaceType) string {
	switch t {
	case specs.NetworkNamespace:
		return "net"
	case specs.IPCNamespace:
		return "ipc"
	case specs.UTSNamespace:
		return "uts"
	case specs.PIDNamespace:
		return "pid"
	}
	return string(t)
}

// withEnv replaces the process environment (oci.WithEnv merges; we pass the merged list).
func withEnv(env []string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		s.Process.Env = env
		return nil
	}
}

// resolveEnvSource resolves the downward-API sources (fieldRef, resourceFieldRef) podkeeper
// knows without other documents; nodeAlloc is what a limit neither the container nor the pod
// sets reads. An unresolvable one is empty.
func resolveEnvSource(pod *corev1.Pod, ctr *corev1.Container, e corev1.EnvVar, nodeAlloc corev1.ResourceList) string {
	switch {
	case e.ValueFrom.FieldRef != nil:
		v, _ := FieldRefValue(pod, e.ValueFrom.FieldRef.FieldPath)
		return v
	case e.ValueFrom.ResourceFieldRef != nil:
		ref := *e.ValueFrom.ResourceFieldRef
		if ref.ContainerName == "" {
			ref.ContainerName = ctr.Name
		}
		v, _ := ResourceFieldValue(pod, &ref, nodeAlloc)
		return v
	}
	return ""
}

// newTaskIO opens the CRI log writer a task's stdout and stderr go to.
func (r *Runtime) newTaskIO(logPath string) (*taskIO, error) {
	var opts []crilog.WriterOption
	if r.cfg.LogMaxSize > 0 {
		opts = append(opts, crilog.WithMaxSize(r.cfg.LogMaxSize))
	}
	if r.cfg.LogMaxFiles > 0 {
		opts = append(opts, crilog.WithMaxFiles(r.cfg.LogMaxFiles))
	}
	w, err := crilog.NewWriter(logPath, opts...)
	if err != nil {
		return nil, err
	}
	return &taskIO{logw: w, log: r.log}, nil
}

func (t *taskIO) stream(name string) io.Writer {
	s := t.logw.Stream(name)
	t.outs = append(t.outs, s)
	return keepDraining(s, t.logw.Path(), t.log)
}

// close flushes both streams and the file. Call after the task's IO has drained.
func (t *taskIO) close() {
	for _, c := range t.outs {
		_ = c.Close()
	}
	_ = t.logw.Close()
}

// StopContainer implements podrunner.Runtime. A stopped sandbox's pod network is released.
func (r *Runtime) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	ctx = r.ctx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load container %s: %w", id, err)
	}
	if err := r.stopTask(ctx, c, grace); err != nil {
		return err
	}
	labels, err := c.Labels(ctx)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("labels of %s: %w", id, err)
	}
	if err := r.releaseSandbox(ctx, c, labels); err != nil {
		return err
	}
	if labels[LabelNoProcess] == "true" && labels[LabelFinishedAt] == "" {
		// A sandbox without a process stops with its namespaces' release: recorded as an exit.
		if _, err := r.writeExit(ctx, c, labels, 0, time.Now(), ""); err != nil && !errdefs.IsNotFound(err) {
			return err
		}
	}
	return nil
}

func (r *Runtime) stopTask(ctx context.Context, c containerd.Container, grace time.Duration) error {
	id := c.ID()
	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load task %s: %w", id, err)
	}
	st, err := task.Status(ctx)
	if err == nil && st.Status == containerd.Stopped {
		return nil
	}
	waitc, err := task.Wait(ctx)
	if err != nil {
		return fmt.Errorf("wait task %s: %w", id, err)
	}
	sig, err := containerd.GetStopSignal(ctx, c, syscall.SIGTERM)
	if err != nil {
		sig = syscall.SIGTERM
	}
	if grace > 0 {
		if err := task.Kill(ctx, sig); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("signal %s to %s: %w", sig, id, err)
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-waitc:
			return nil
		case <-t.C:
			r.log.Info("grace period over; killing", "container", id, "grace", grace)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := task.Kill(ctx, syscall.SIGKILL); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("kill %s: %w", id, err)
	}
	select {
	case <-waitc:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RecordExit implements podrunner.Runtime: the exit of a stopped task is written to the
// container's labels (finish time, exit code, reason, termination message, OOMKilled: the memory
// cgroup is read now, before the task's delete removes it). The task stays.
func (r *Runtime) RecordExit(ctx context.Context, id string) (podrunner.ContainerRecord, error) {
	ctx = r.ctx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return podrunner.ContainerRecord{}, fmt.Errorf("load container %s: %w", id, wrapNotFound(err))
	}
	labels, err := r.recordExit(ctx, c, r.taskOf(ctx, c))
	if err != nil {
		return podrunner.ContainerRecord{}, err
	}
	return exitedRecord(id, labels, true), nil
}

// Finalize implements podrunner.Runtime: RecordExit, then the task's delete.
func (r *Runtime) Finalize(ctx context.Context, id string) (podrunner.ContainerRecord, error) {
	ctx = r.ctx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return podrunner.ContainerRecord{}, fmt.Errorf("load container %s: %w", id, wrapNotFound(err))
	}
	task := r.taskOf(ctx, c)
	labels, err := r.recordExit(ctx, c, task)
	if err != nil {
		return podrunner.ContainerRecord{}, err
	}
	if task != nil {
		r.mu.Lock()
		tio := r.running[id]
		delete(r.running, id)
		r.mu.Unlock()
		st, err := r.deleteTask(ctx, id, task, time.Time{})
		if err != nil && !errdefs.IsNotFound(err) {
			if tio != nil { // keep tracking it: Finalize is retried
				r.mu.Lock()
				r.running[id] = tio
				r.mu.Unlock()
			}
			return podrunner.ContainerRecord{}, fmt.Errorf("delete task %s: %w", id, err)
		}
		r.release(tio)
		if st != nil && labels[LabelFinishedAt] == "" {
			// It stopped between the status read and the delete: recorded from the delete.
			if labels, err = r.writeExit(ctx, c, labels, int32(st.ExitCode()), st.ExitTime(), ""); err != nil {
				return podrunner.ContainerRecord{}, err
			}
		}
	}
	return exitedRecord(id, labels, false), nil
}

// taskOf is container c's task: the one this process started, else containerd's; nil when none.
func (r *Runtime) taskOf(ctx context.Context, c containerd.Container) containerd.Task {
	r.mu.Lock()
	tio := r.running[c.ID()]
	r.mu.Unlock()
	if tio != nil {
		return tio.task
	}
	if t, err := c.Task(ctx, nil); err == nil {
		return t
	}
	return nil
}

// recordExit returns c's labels, with its exit recorded when its task has stopped and the exit
// is not recorded yet (once per exit: the OOM bookkeeping counts it).
func (r *Runtime) recordExit(ctx context.Context, c containerd.Container, task containerd.Task) (map[string]string, error) {
	// c was just loaded: its labels are at hand (no second fetch on a restart's path).
	info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
	if err != nil {
		return nil, fmt.Errorf("labels of %s: %w", c.ID(), err)
	}
	labels := info.Labels
	if labels[LabelFinishedAt] != "" || labels[LabelNoProcess] == "true" {
		return labels, nil
	}
	if task != nil {
		st, err := task.Status(ctx)
		if err == nil {
			if st.Status != containerd.Stopped {
				return labels, nil
			}
			code := int32(st.ExitStatus)
			reason := ""
			if r.wasOOMKilled(labels[LabelPodUID], c.ID(), code) {
				reason = "OOMKilled"
			}
			return r.writeExit(ctx, c, labels, code, st.ExitTime, reason)
		}
		if !errdefs.IsNotFound(err) {
			return labels, nil
		}
	}
	// No task in containerd: gone without its exit recorded (its shim died), or never made.
	createdAt := info.CreatedAt
	ran := ranMarked(r.cfg.RootDir, labels, createdAt)
	code, at, reason, lost := r.lostTaskExit(c.ID(), createdAt, ran, time.Now())
	if !lost {
		return labels, nil
	}
	r.mu.Lock()
	_, ours := r.running[c.ID()]
	r.mu.Unlock()
	if reason == lostExitReason && ours { // its event may still be on its way
		r.awaitExitEvent(ctx, c.ID(), createdAt)
		code, at, reason, _ = r.lostTaskExit(c.ID(), createdAt, ran, time.Now())
	}
	if labels, err = r.writeExit(ctx, c, labels, code, at, reason); err != nil {
		return nil, err
	}
	r.mu.Lock()
	tio := r.running[c.ID()]
	delete(r.running, c.ID())
	r.mu.Unlock()
	r.release(tio) // nothing writes to its FIFOs any more
	metrics.TasksLost.Inc()
	r.log.Warn("a container's task is gone from containerd (its runc shim died?); recorded as its exit",
		"pod", labels[LabelPodNamespace]+"/"+labels[LabelPodName], "container", labels[LabelContainerName], "id", c.ID(), "exitCode", code, "reason", reason)
	return labels, nil
}

// writeExit records an exit in c's labels and returns them; reason "" is the exit code's.
func (r *Runtime) writeExit(ctx context.Context, c containerd.Container, labels map[string]string, code int32, at time.Time, reason string) (map[string]string, error) {
	if at.IsZero() || at.Year() < 2000 {
		at = time.Now()
	}
	upd := map[string]string{
		LabelFinishedAt: formatTime(at),
		LabelExitCode:   strconv.Itoa(int(code)),
		LabelReason:     exitReason(code),
	}
	for k, v := range messageLabels(terminationMessage(labels, code)) {
		upd[k] = v
	}
	if reason != "" {
		upd[LabelReason] = reason
	}
	labels, err := c.SetLabels(ctx, upd)
	if err != nil {
		return nil, fmt.Errorf("record exit of %s: %w", c.ID(), err)
	}
	r.forgetExit(c.ID())
	return labels, nil
}

// exitedRecord is the record of a container whose exit was recorded (created: never started).
func exitedRecord(id string, labels map[string]string, taskPresent bool) podrunner.ContainerRecord {
	rec := recordFromLabels(id, labels)
	rec.State = podrunner.StateExited
	if labels[LabelFinishedAt] == "" {
		rec.State = podrunner.StateCreated
	}
	rec.TaskPresent = taskPresent
	rec.ExitRecorded = labels[LabelFinishedAt] != ""
	return rec
}

// release flushes a finished task's log streams and deletes its FIFOs. nil is a no-op.
func (r *Runtime) release(tio *taskIO) {
	if tio == nil {
		return
	}
	tio.close()
	r.removeFIFOs(tio.task)
}

// removeFIFOs deletes the FIFO directory of a task created by this process's IO creator (or left
// behind by an earlier podkeeper and re-attached), when it lies under podkeeper's fifo dir.
func (r *Runtime) removeFIFOs(t containerd.Task) {
	if t == nil || t.IO() == nil {
		return
	}
	cfg := t.IO().Config()
	for _, p := range []string{cfg.Stdout, cfg.Stderr} {
		if p == "" {
			continue
		}
		dir := filepath.Dir(p)
		if strings.HasPrefix(dir, r.fifoDir()+string(filepath.Separator)) {
			_ = os.RemoveAll(dir)
			return
		}
	}
}

// RemoveContainer implements podrunner.Runtime.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	ctx = r.ctx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load container %s: %w", id, err)
	}
	return r.deleteContainer(ctx, c)
}

func (r *Runtime) deleteContainer(ctx context.Context, c containerd.Container) error {
	id := c.ID()
	r.mu.Lock()
	tio := r.running[id]
	delete(r.running, id)
	r.mu.Unlock()
	t, _ := c.Task(ctx, nil) // nil: none, or one only containerd still knows (deleteTask)
	var createdAt time.Time
	if info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata); err == nil {
		createdAt = info.CreatedAt
	}
	if _, err := r.deleteTask(ctx, id, t, createdAt, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("delete task %s: %w", id, err)
	} else if err != nil || t == nil {
		// containerd has no task of it; its shim may still have one (endOrphanTask).
		if _, err := r.endOrphanTask(ctx, id); err != nil {
			return err
		}
	}
	r.release(tio)
	labels, lerr := c.Labels(ctx)
	if lerr != nil && !errdefs.IsNotFound(lerr) {
		return fmt.Errorf("labels of %s: %w", id, lerr)
	}
	if lerr == nil {
		removeTermMsgFile(r.cfg.RootDir, labels)
		removeRanMark(r.cfg.RootDir, labels)
		r.unlinkLog(id, labels)
		if err := r.releaseSandbox(ctx, c, labels); err != nil {
			return err
		}
		if err := r.releaseSandboxShm(id, labels); err != nil {
			return err
		}
	}
	if err := c.Delete(ctx, containerd.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("delete container %s: %w", id, err)
	}
	r.mu.Lock()
	delete(r.podOf, id)
	delete(r.exitsSeen, id)
	r.mu.Unlock()
	// The instance's log goes with it (as the kubelet's container GC does): unless another
	// instance writes to the same file, which never happens while attempts number them.
	if path := labels[LabelLogPath]; lerr == nil && path != "" && !r.logInUse(path) {
		if err := crilog.Remove(path); err != nil {
			r.log.Warn("remove the log of a removed container", "container", id, "path", path, "err", err)
		}
	}
	return nil
}

// logInUse says whether a running container's output goes to path.
func (r *Runtime) logInUse(path string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, tio := range r.running {
		if tio != nil && tio.logw != nil && tio.logw.Path() == path {
			return true
		}
	}
	return false
}

// RemovePodFiles deletes podkeeper's per-pod directory (generated files, emptyDir volumes).
func (r *Runtime) RemovePodFiles(uid string) error {
	if uid == "" || strings.ContainsAny(uid, "/.") {
		return fmt.Errorf("bad pod uid %q", uid)
	}
	if err := unmountPodShms(r.cfg.RootDir, uid); err != nil {
		return err
	}
	r.removePodCgroup(uid)
	r.sweepShimsSoon()
	dir := podDir(r.cfg.RootDir, uid)
	if err := unmountUnder(dir); err != nil {
		return fmt.Errorf("remove pod files: %w", err)
	}
	if err := r.releaseImageVolumes(uid); err != nil {
		return fmt.Errorf("remove pod files: %w", err)
	}
	return os.RemoveAll(dir)
}

// ListContainers implements podrunner.Runtime. Running tasks whose output nobody collects (after a
// podkeeper restart) are re-attached to their log files here.
func (r *Runtime) ListContainers(ctx context.Context, podUID string) ([]podrunner.ContainerRecord, error) {
	ctx = r.ctx(ctx)
	filter := `labels."` + LabelPodUID + `"`
	if podUID != "" {
		filter += `==` + strconv.Quote(podUID)
	}
	cs, err := r.client.ContainerService().List(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	tasks, err := r.tasksFor(ctx, podUID, cs)
	if err != nil {
		return nil, err
	}
	out := make([]podrunner.ContainerRecord, 0, len(cs))
	for _, c := range cs {
		rec := recordFromLabels(c.ID, c.Labels)
		rec.ExitRecorded = c.Labels[LabelFinishedAt] != ""
		rec.CreatedAt = c.CreatedAt
		rec.Message = messageFromLabels(c.Labels)
		r.remember(c.ID, rec.PodUID)
		t, ok := tasks[c.ID]
		var tp *taskInfo
		if ok {
			tp = &t
		}
		rec = withTask(rec, tp)
		if tp == nil && c.Labels[LabelNoProcess] == "true" {
			rec = processlessSandbox(rec, c.Labels, pinsAlive)
		} else if tp == nil && !rec.ExitRecorded {
			if code, at, reason, lost := r.lostTaskExit(c.ID, c.CreatedAt, ranMarked(r.cfg.RootDir, c.Labels, c.CreatedAt), time.Now()); lost {
				// Its task is gone unrecorded (its shim died): exited; the worker records it.
				rec.State, rec.ExitCode, rec.FinishedAt, rec.Reason = podrunner.StateExited, code, at, reason
				rec.TaskLost = true
			}
		}
		if r.collectLogs && rec.State == podrunner.StateRunning && rec.Kind != podrunner.KindSandbox {
			r.ensureAttached(ctx, c.ID, rec.LogPath)
		}
		out = append(out, rec)
	}
	return out, nil
}

// withTask completes a record read from labels with its task's state (t nil: no task). An exit
// already recorded in the labels stands (its reason may be OOMKilled, which the task's status
// cannot tell); else a stopped task's exit status gives the exit code and reason.
func withTask(rec podrunner.ContainerRecord, t *taskInfo) podrunner.ContainerRecord {
	if t == nil {
		if !rec.FinishedAt.IsZero() {
			rec.State = podrunner.StateExited
		} else {
			rec.State = podrunner.StateCreated
		}
		return rec
	}
	rec.TaskPresent = true
	rec.PID = t.pid
	switch t.status {
	case containerd.Running, containerd.Paused, containerd.Pausing:
		rec.State = podrunner.StateRunning
	case containerd.Stopped:
		rec.State = podrunner.StateExited
		if !rec.ExitRecorded {
			rec.ExitCode = int32(t.exitStatus)
			rec.Reason = exitReason(rec.ExitCode)
			rec.FinishedAt = t.exitedAt
		}
	case containerd.Created:
		rec.State = podrunner.StateCreated
	default:
		rec.State = podrunner.StateUnknown
	}
	return rec
}

type taskInfo struct {
	pid        uint32
	status     containerd.ProcessStatus
	exitStatus uint32
	exitedAt   time.Time
}

func (r *Runtime) listTasks(ctx context.Context) (map[string]taskInfo, error) {
	resp, err := r.client.TaskService().List(ctx, &tasksapi.ListTasksRequest{})
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	out := make(map[string]taskInfo, len(resp.Tasks))
	for _, t := range resp.Tasks {
		ti := taskInfo{pid: t.Pid, status: processStatus(t.Status), exitStatus: t.ExitStatus}
		if t.ExitedAt != nil {
			ti.exitedAt = t.ExitedAt.AsTime()
		}
		out[t.ID] = ti
	}
	return out, nil
}

// ensureAttached starts collecting a running task's output again after a podkeeper restart.
func (r *Runtime) ensureAttached(ctx context.Context, id, logPath string) {
	r.mu.Lock()
	_, ok := r.running[id]
	r.mu.Unlock()
	if ok || logPath == "" {
		return
	}
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return
	}
	tio, err := r.newTaskIO(logPath)
	if err != nil {
		r.log.Warn("cannot reopen container log", "container", id, "err", err)
		return
	}
	task, err := c.Task(ctx, logAttach(tio.stream("stdout"), tio.stream("stderr")))
	if err != nil {
		tio.close()
		r.log.Warn("cannot re-attach to container output", "container", id, "err", err)
		return
	}
	tio.task = task
	r.mu.Lock()
	if _, dup := r.running[id]; dup {
		r.mu.Unlock()
		return
	}
	r.running[id] = tio
	r.mu.Unlock()
	r.log.Info("re-attached to running container", "container", id)
}

func wrapNotFound(err error) error {
	if errdefs.IsNotFound(err) {
		return fmt.Errorf("%w: %w", podrunner.ErrNotFound, err)
	}
	return err
}
