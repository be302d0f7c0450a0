package podrunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Runtime is everything the pod workers need from the container runtime. containerd sits behind
// it (package podrunner/runtime); a scriptable fake serves the unit tests.
//
// Contract:
//   - Every method blocks until the runtime has done what it says or failed; none keeps state about a
//     pod that cannot be rebuilt from ListContainers (labels are the record of what runs).
//   - A pod's containers are written only by that pod's worker: the runtime never starts, stops or
//     removes a container on its own.
//   - Create* methods are not idempotent (a new ID each time); Stop*, Remove*, RecordExit and Finalize are: doing
//     them twice, or on something already gone, is not an error.
type Runtime interface {
	// EnsureImage makes ref usable for a container according to policy (pulling, unpacking or
	// importing from the node's image directory as needed) and reports what it did. A registry
	// pull authenticates with opts.Secrets first, then the node's own credentials; it calls
	// opts.OnPull (when set) once, just before a registry pull begins.
	EnsureImage(ctx context.Context, ref string, policy corev1.PullPolicy, opts PullOptions) (ImageResult, error)

	// CreateSandbox creates and starts the pod's sandbox: what holds its namespaces (a process,
	// or, where the runtime pins them all ahead, no process: then the record's PID stays 0 and
	// State Running stands for namespaces still there). attempt numbers sandboxes of one pod (a sandbox that dies is replaced by attempt+1). When
	// created is not nil, CreateSandbox calls it once (in its own goroutine; it must not block) as
	// soon as the sandbox's namespaces exist (possibly before its process): the record has its
	// ID, its PID if its process exists already (else 0), State Created and no IPs yet (the pod
	// network may still be in the making). A StartContainer with SandboxReady
	// may create a container against that record meanwhile. CreateSandbox returns as without it:
	// the running sandbox, or an error with nothing of the sandbox left.
	CreateSandbox(ctx context.Context, pod *corev1.Pod, attempt int, created func(ContainerRecord)) (ContainerRecord, error)

	// StartContainer creates and starts container c of pod inside sandbox, with its output written
	// to logPath in the CRI format. It returns the record of the running container. A container
	// that fails to start leaves no running task behind; when the failed instance was kept as an
	// exited container (so restart policy and backoff apply to it) the error wraps ErrExitRecorded,
	// otherwise (bad spec, missing image) nothing of it was kept.
	StartContainer(ctx context.Context, req StartRequest) (ContainerRecord, error)

	// StopContainer asks the container's process to stop with signal (0: the image's stop signal,
	// else SIGTERM), waits up to grace, then kills it with SIGKILL and waits for the exit. It returns
	// once the process is gone (or ctx ends). Stopping a container that is not running is a no-op.
	StopContainer(ctx context.Context, id string, grace time.Duration) error

	// RecordExit records a stopped container's exit in its labels (finish time, exit code,
	// reason, termination message, OOMKilled) and returns its record, State Exited, with the task
	// left in place (TaskPresent). A container whose task has not stopped is returned as its labels
	// say, nothing written. Recording twice writes once.
	RecordExit(ctx context.Context, id string) (ContainerRecord, error)

	// Finalize records a stopped container's exit (as RecordExit) and releases its task (shim
	// resources, FIFOs). The container record stays for lastState and `logs --previous`.
	Finalize(ctx context.Context, id string) (ContainerRecord, error)

	// RemoveContainer deletes a container record, its task and its filesystem snapshot.
	RemoveContainer(ctx context.Context, id string) error

	// ListContainers returns the containers podkeeper created for pod podUID (every pod's when
	// podUID is empty), sandboxes included, with the task state containerd reports now.
	ListContainers(ctx context.Context, podUID string) ([]ContainerRecord, error)

	// RemovePodFiles deletes what the runtime keeps on disk for a pod (generated files, emptyDir
	// volumes). Call once all the pod's containers are removed.
	RemovePodFiles(podUID string) error

	// Exec runs req.Cmd inside the running container id (its namespaces, cgroup, user and
	// environment) and waits for it to end, returning its exit code. When ctx ends first, Exec
	// returns ctx's error (wrapped) at once: the exec'd process is killed with SIGKILL (probe and
	// hook timeouts rely on this) unless req.LeaveRunning, and in either case nothing more of its
	// output reaches req's writers. Exec on a container that is not running returns an error
	// wrapping ErrNotFound. Exec output never goes to the container's log.
	Exec(ctx context.Context, id string, req ExecRequest) (int, error)

	// Exits delivers a hint each time a podkeeper task exits, and one with no PodUID after a gap
	// in which exits may have been missed. It is a hint only: receivers re-read state with
	// ListContainers. The channel is never closed while the runtime lives.
	Exits() <-chan ExitEvent
}

// StartRequest is what StartContainer needs to run one container instance.
type StartRequest struct {
	Pod       *corev1.Pod
	Sandbox   ContainerRecord
	Container *corev1.Container
	Kind      ContainerKind // App or Init
	Attempt   int           // the restart count this instance is started with
	LogPath   string
	SpecHash  string
	// Config resolves configMapKeyRef/secretKeyRef/envFrom and configMap/secret volumes; may be nil.
	Config ConfigLookup
	// SandboxReady, when set, says Sandbox is the record CreateSandbox gave its created callback:
	// the sandbox's namespaces exist, its network and process may not be ready yet. The container
	// and its task are created against it, then SandboxReady is called (once, blocking) before the
	// container's process starts; it returns the started sandbox (with its IPs, which the pod's
	// files then get) or why it failed. On failure nothing of the container is kept and the error
	// wraps ErrSandboxNotReady. The container's environment must not need the pod's IP.
	SandboxReady func() (ContainerRecord, error)
}

// ExecRequest is one command to run in a container. Nil streams are discarded (stdin: empty).
type ExecRequest struct {
	Cmd    []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer // unused with TTY: a terminal has one output stream
	TTY    bool
	// Resize carries terminal size changes for a TTY exec; nil when there are none.
	Resize <-chan TermSize
	// LeaveRunning: when ctx ends first, Exec returns at once and the process is left to run
	// (its output no longer reaches Stdout and Stderr; it is cleaned up once it exits). Without
	// it the process is killed.
	LeaveRunning bool
}

// TermSize is a terminal's size in characters.
type TermSize struct{ Width, Height uint16 }

// ConfigLookup finds the ConfigMap and Secret documents of the desired state (the manifest
// directory, or the API server) for env, envFrom and volumes. Safe for concurrent use. A nil
// ConfigLookup finds nothing.
type ConfigLookup interface {
	ConfigMap(namespace, name string) (*corev1.ConfigMap, bool)
	Secret(namespace, name string) (*corev1.Secret, bool)
}

// PullOptions carry what one EnsureImage call may need for a registry pull.
type PullOptions struct {
	// Secrets are the pod's imagePullSecrets (kubernetes.io/dockerconfigjson or
	// kubernetes.io/dockercfg), in the pod's order; the first one with credentials for a registry
	// host wins over the node's docker config.
	Secrets []*corev1.Secret
	// OnPull is called once, before a registry pull begins (the kubelet's Pulling event).
	OnPull func()
	// Progress, when set, receives the state of the pull's layers now and then during a pull.
	Progress func(PullProgress)
}

// PullProgress is a snapshot of a registry pull: one entry per blob (config and layers).
type PullProgress struct {
	Ref    string
	Blobs  []BlobProgress
	Done   bool // the pull ended (successfully or not)
	Failed bool
}

// BlobProgress is one blob of a pull.
type BlobProgress struct {
	Digest    string
	MediaType string
	Offset    int64 // bytes fetched so far
	Total     int64 // bytes expected
	Done      bool  // stored (fetched now or already present)
}

// ImageResult reports how an image was made available.
type ImageResult struct {
	Ref      string // normalised reference, e.g. docker.io/library/busybox:latest
	ID       string // image ID (config digest)
	Pulled   bool   // a registry pull happened
	Size     int64  // bytes of content pulled, when pulled
	Duration time.Duration
	Warning  string // non-fatal problem, e.g. pull failed but a local copy was used
}

// ContainerKind tells sandboxes, init containers and app containers apart.
type ContainerKind string

const (
	KindSandbox ContainerKind = "sandbox"
	KindInit    ContainerKind = "init"
	KindApp     ContainerKind = "app"
)

// ContainerState is the state of a container's task as containerd sees it.
type ContainerState string

const (
	StateCreated ContainerState = "created" // no task, or a task not started yet
	StateRunning ContainerState = "running"
	StateExited  ContainerState = "exited"
	StateUnknown ContainerState = "unknown"
)

// ContainerRecord is what the runtime knows of one container: its labels plus its task state.
type ContainerRecord struct {
	ID           string
	PodUID       string
	PodName      string
	PodNamespace string
	Name         string // container name; empty for a sandbox
	Kind         ContainerKind
	Attempt      int // restart count of this instance (sandbox: sandbox attempt)
	SpecHash     string
	Image        string
	ImageID      string
	LogPath      string
	State        ContainerState
	TaskPresent  bool // a task (and shim resources) still exists; Finalize releases it
	ExitRecorded bool // the exit is in the labels (RecordExit); before, an exit's fields are the task's
	// TaskLost: the task is gone from containerd with its exit unrecorded (its runc shim died);
	// State is StateExited with the exit the runtime read for it, which RecordExit records.
	TaskLost   bool
	PID        uint32
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	ExitCode   int32
	Reason     string // why it ended, when known (Completed, Error, ...); OOMKilled once recorded
	Message    string
	// GracePeriod is the pod's terminationGracePeriodSeconds when the container was created, so a
	// pod whose manifest vanished while podkeeper was down still stops with the grace it asked for.
	GracePeriod time.Duration
	// PodIPs are a sandbox's pod IPs from CNI (IPv4 first); empty for hostNetwork or without CNI.
	PodIPs []string
	// ProbeKilled: podkeeper stopped this instance for a failed liveness or startup probe (the
	// worker's memory, not the runtime's: an agent restarted since has forgotten it). Such an exit
	// restarts by ProbeKillRestarts, whatever its code.
	ProbeKilled bool
}

// ExitEvent is a hint that a task of a pod exited. One with an empty PodUID says that exits may
// have been missed (the event stream broke and is back): every pod is to be re-read.
type ExitEvent struct {
	PodUID      string // empty: any pod
	ContainerID string
	ExitCode    uint32
	ExitedAt    time.Time
}

// ErrNotFound is returned (wrapped) for a container or image that does not exist.
var ErrNotFound = errors.New("not found")

// ErrExitRecorded marks a StartContainer failure that the runtime kept as an exited instance.
var ErrExitRecorded = errors.New("recorded as the container's exit")

// ErrCreateInterrupted marks a StartContainer failure caused by what an earlier create of the
// same container, interrupted by podkeeper's death, still holds in containerd while it is being
// cleaned up: not the container's failure, and nothing of the attempt was kept. The worker tries
// again soon (interruptedBackoff), without the backoff of a bad spec.
var ErrCreateInterrupted = errors.New("an interrupted earlier create of the container is still being cleaned up")

// CreateError marks a StartContainer failure that the kubelet meets in its runtime's
// CreateContainer (containerd's CRI) rather than in its own checks of the spec: a Localhost
// seccomp profile the node lacks or cannot parse, an SELinux level that is not one. The
// container waits as CreateContainerError with the CRI's message, tried again with a bad spec's
// backoff; nothing of the attempt was kept.
type CreateError struct {
	Err error
	// Step is what failed, in the CRI's words; empty: "failed to create containerd container".
	Step string
}

func (e *CreateError) Error() string {
	step := e.Step
	if step == "" {
		step = "failed to create containerd container"
	}
	return step + ": " + e.Err.Error()
}

func (e *CreateError) Unwrap() error { return e.Err }

// StartFailure marks a StartContainer failure after the container was made: its task could not
// be created or started. The instance is recorded as exited (StartError, exit code 128, Err's
// text as its message: the CRI's words) and the error also wraps ErrExitRecorded; the container
// waits as RunContainerError with that text through its back-off, as the kubelet shows it.
type StartFailure struct {
	ID  string
	Err error
}

func (e *StartFailure) Error() string { return "start container " + e.ID + ": " + e.Err.Error() }

func (e *StartFailure) Unwrap() error { return e.Err }

// VolumeError marks a StartContainer failure to set up one of the pod's volumes (a hostPath that
// fails its type check, a ConfigMap or Secret a volume needs and the node lacks): the kubelet's
// FailedMount, with its message. Nothing of the attempt was kept; the container waits as
// ContainerCreating (where the kubelet, which sets volumes up before the pod's sandbox, shows no
// message, podkeeper shows this one) and the set-up is tried again with VolumeBackoff.
type VolumeError struct {
	Volume string
	Err    error
}

func (e *VolumeError) Error() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.Volume, e.Err)
}

func (e *VolumeError) Unwrap() error { return e.Err }

// ImageError is an image problem that no pull can fix, with the kubelet's waiting reason and
// message: InvalidImageName (the name does not parse) or ErrImageNeverPull (imagePullPolicy
// Never and the image is not on the node). The worker shows it as is, not as ErrImagePull /
// ImagePullBackOff, and tries again later (an image may be dropped in the images directory).
type ImageError struct {
	Reason, Message string
	Event           string // the kubelet's event reason for it
}

func (e *ImageError) Error() string { return e.Reason + ": " + e.Message }

// Image problems, as the kubelet words them.
const (
	ReasonInvalidImageName  = "InvalidImageName"
	ReasonErrImageNeverPull = "ErrImageNeverPull"
)

// InvalidImageName is the kubelet's error for an image name that does not parse.
func InvalidImageName(image string, err error) *ImageError {
	return &ImageError{Reason: ReasonInvalidImageName, Event: "InspectFailed",
		Message: fmt.Sprintf("Failed to apply default image tag %q: couldn't parse image name %q: %v", image, image, err)}
}

// ImageNeverPull is the kubelet's error for imagePullPolicy Never and no image on the node.
func ImageNeverPull(image string) *ImageError {
	return &ImageError{Reason: ReasonErrImageNeverPull, Event: ReasonErrImageNeverPull,
		Message: fmt.Sprintf("Container image %q is not present with pull policy of Never", image)}
}

// ErrSandboxNotReady marks a StartContainer with SandboxReady whose sandbox failed to start: not
// the container's failure, and nothing of it was kept.
var ErrSandboxNotReady = errors.New("the pod sandbox did not start")
