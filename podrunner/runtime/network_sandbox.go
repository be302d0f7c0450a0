package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/podrunner"
)

// prepareSandbox makes what a sandbox about to be created holds besides its process: the pod's
// /dev/shm (see podShmOpts), its UTS and IPC namespaces (pinSandboxNamespaces) and its network
// (sandboxNetwork), recorded in labels. It returns the spec options for the pause process and an
// undo for when the sandbox cannot be created.
func (r *Runtime) prepareSandbox(ctx context.Context, id string, pod *corev1.Pod, labels map[string]string) ([]oci.SpecOpts, func() ([]string, error), func(), error) {
	var shm string
	if !pod.Spec.HostIPC {
		shm = sandboxShmPath(r.cfg.RootDir, string(pod.UID), id)
		if err := mountSandboxShm(shm); err != nil {
			return nil, nil, nil, err
		}
		labels[LabelShm] = shm
	}
	undoShm := func() {
		if shm != "" {
			_ = unmountSandboxShm(shm)
		}
	}
	nsOpts, err := r.pinSandboxNamespaces(id, pod, labels)
	if err != nil {
		undoShm()
		return nil, nil, nil, err
	}
	undoNs := func() {
		if dir := labels[LabelNamespaces]; dir != "" {
			_ = removePinnedNamespaces(dir)
		}
	}
	netOpts, attach, undoNet, err := r.sandboxNetwork(ctx, id, pod, labels)
	if err != nil {
		undoNs()
		undoShm()
		return nil, nil, nil, err
	}
	return append(nsOpts, netOpts...), attach, func() {
		undoNet()
		undoNs()
		undoShm()
	}, nil
}

// LabelNamespaces records the directory of a sandbox's pinned UTS and IPC namespaces (files
// "uts" and "ipc"), so any runtime (whatever its root dir) can remove them.
const LabelNamespaces = "podkeeper.io/namespaces"

// sandboxNsDir is where sandbox sandboxID of pod podUID has its pinned UTS and IPC namespaces.
func sandboxNsDir(root, podUID, sandboxID string) string {
	return filepath.Join(podDir(root, podUID), "ns", sandboxID)
}

// pinSandboxNamespaces makes the pod's UTS namespace (with the pod's hostname; none for
// hostNetwork pods, which have the host's) and IPC namespace (none for hostIPC pods) ahead of the
// sandbox's process, pinned under sandboxNsDir like the network namespace, and returns the spec
// options that put the pause process into them. With every namespace a container joins made
// ahead, the pod's first containers are created (runc create) at the same time as the sandbox
// rather than after it (see CreateSandbox).
func (r *Runtime) pinSandboxNamespaces(id string, pod *corev1.Pod, labels map[string]string) ([]oci.SpecOpts, error) {
	dir := sandboxNsDir(r.cfg.RootDir, string(pod.UID), id)
	var pins []specs.LinuxNamespace
	if !pod.Spec.HostNetwork {
		pins = append(pins, specs.LinuxNamespace{Type: specs.UTSNamespace, Path: filepath.Join(dir, "uts")})
	}
	if !pod.Spec.HostIPC {
		pins = append(pins, specs.LinuxNamespace{Type: specs.IPCNamespace, Path: filepath.Join(dir, "ipc")})
	}
	if len(pins) == 0 {
		return nil, nil
	}
	// Left by a crash between the pinning and the sandbox's creation (the same ID): replaced.
	if err := removePinnedNamespaces(dir); err != nil {
		return nil, fmt.Errorf("remove leftover namespaces of %s: %w", id, err)
	}
	if err := pinNewNamespaces(pins, r.podHostname(pod)); err != nil {
		return nil, fmt.Errorf("create namespaces of sandbox %s: %w", id, err)
	}
	labels[LabelNamespaces] = dir
	var opts []oci.SpecOpts
	for _, p := range pins {
		opts = append(opts, oci.WithLinuxNamespace(p))
	}
	return opts, nil
}

// removePinnedNamespaces unmounts and removes a sandbox's pinned UTS and IPC namespaces and their
// directory. Missing ones are fine.
func removePinnedNamespaces(dir string) error {
	var errs []error
	for _, k := range []string{"uts", "ipc"} {
		if err := removePinnedNs(filepath.Join(dir, k)); err != nil {
			errs = append(errs, fmt.Errorf("%s namespace: %w", k, err))
		}
	}
	if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// releaseSandboxNamespaces removes the pinned UTS and IPC namespaces of container id (labels: its
// labels). Not a sandbox, or one without them: nothing.
func releaseSandboxNamespaces(id string, labels map[string]string) error {
	dir := labels[LabelNamespaces]
	if podrunner.ContainerKind(labels[LabelKind]) != podrunner.KindSandbox || dir == "" {
		return nil
	}
	if err := removePinnedNamespaces(dir); err != nil {
		return fmt.Errorf("sandbox %s: %w", id, err)
	}
	return nil
}

// namespacesAhead says whether every namespace a container of pod joins exists before its
// sandbox's process (labels: the sandbox's, once prepareSandbox made them): pinned, or the
// host's. Not when the containers share the sandbox's PID namespace, which only its process
// makes, nor when the pod network's namespace is runc's (no CNI).
func namespacesAhead(pod *corev1.Pod, labels map[string]string) bool {
	if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace && !pod.Spec.HostPID {
		return false
	}
	if !pod.Spec.HostNetwork && labels[LabelNetns] == "" {
		return false
	}
	return (pod.Spec.HostNetwork && pod.Spec.HostIPC) || labels[LabelNamespaces] != ""
}

// LabelNoProcess marks a sandbox without a process (see sandboxWithoutProcess), set once its
// network is complete: before that, such a sandbox is only created (an agent killed meanwhile
// leaves one that is replaced, as a created pause task is).
const LabelNoProcess = "podkeeper.io/no-process"

// sandboxWithoutProcess says whether a sandbox of pod (labels: the sandbox's, once
// prepareSandbox made them) needs no pause process: every namespace its containers join exists
// ahead of it (namespacesAhead: no shared PID namespace, whose PID 1 the pause process would
// be) and at least one is pinned, whose liveness then tells whether the sandbox still exists
// (pinsAlive; a reboot takes the pins away). A hostNetwork and hostIPC pod pins nothing and
// keeps its pause process. CRI-O does the same (drop_infra_ctr): the pause process holds
// nothing that the pins do not, and costs every pod a second runc create and process.
func sandboxWithoutProcess(pod *corev1.Pod, labels map[string]string) bool {
	return namespacesAhead(pod, labels) && (labels[LabelNetns] != "" || labels[LabelNamespaces] != "")
}

// pinsAlive says whether the namespaces a sandbox pinned (labels: its labels) are still there:
// its network namespace, if it has one, and its UTS or IPC namespace, if it has those.
func pinsAlive(labels map[string]string) bool {
	netns, dir := labels[LabelNetns], labels[LabelNamespaces]
	if netns == "" && dir == "" {
		return false
	}
	if netns != "" && !isNsFile(netns) {
		return false
	}
	return dir == "" || isNsFile(filepath.Join(dir, "uts")) || isNsFile(filepath.Join(dir, "ipc"))
}

// processlessSandbox completes the record of a sandbox without a process (rec: as withTask made
// it, with no task): it runs while nothing stopped it (no exit recorded) and its pinned
// namespaces are alive; once they are gone (a reboot, say) it has ended.
func processlessSandbox(rec podrunner.ContainerRecord, labels map[string]string, alive func(map[string]string) bool) podrunner.ContainerRecord {
	switch {
	case rec.ExitRecorded:
		rec.State = podrunner.StateExited
	case alive(labels):
		rec.State = podrunner.StateRunning
	default:
		rec.State = podrunner.StateExited
	}
	return rec
}

// sandboxNamespaces says where the namespaces of sandbox sb are for its containers to join: the
// files pinned ahead of its process where it has them (a sandbox of an older podkeeper may
// not), else its process's (/proc/<pid>/ns/...); "" when neither exists yet.
func (r *Runtime) sandboxNamespaces(pod *corev1.Pod, sb podrunner.ContainerRecord) func(specs.LinuxNamespaceType) string {
	return func(t specs.LinuxNamespaceType) string {
		var pinned string
		switch t {
		case specs.NetworkNamespace:
			if r.net != nil {
				pinned = r.net.netnsPath(sb.ID)
			}
		case specs.UTSNamespace, specs.IPCNamespace:
			pinned = filepath.Join(sandboxNsDir(r.cfg.RootDir, string(pod.UID), sb.ID), nsFile(t))
		}
		if pinned != "" && isNsFile(pinned) {
			return pinned
		}
		if sb.PID != 0 {
			return fmt.Sprintf("/proc/%d/ns/%s", sb.PID, nsFile(t))
		}
		return ""
	}
}

// sandboxNetwork prepares the pod network of a sandbox about to be created (nothing for
// hostNetwork pods or without CNI): it pins the network namespace, records it in labels, and
// returns the spec options that put the pause process into it, attach, which runs CNI ADD and
// returns the pod's IPs (nil when there is nothing to attach), and an undo for when the sandbox
// cannot be created (call it only once attach, if started, has returned). CNI ADD needs only the
// namespace, not the pause process: CreateSandbox runs it while the sandbox's task is created
// (runc create) and starts the pause process only once it is done, so neither the sandbox nor
// an app container runs before its network is configured.
func (r *Runtime) sandboxNetwork(ctx context.Context, id string, pod *corev1.Pod, labels map[string]string) ([]oci.SpecOpts, func() ([]string, error), func(), error) {
	if pod.Spec.HostNetwork || r.net == nil {
		return nil, nil, func() {}, nil
	}
	path, err := r.net.pin(ctx, id)
	if err != nil {
		return nil, nil, nil, err
	}
	labels[LabelNetns] = path
	ports := PortMappings(pod)
	if pm := encodePortMappings(ports); pm != "" && len(pm) < 3500 { // containerd caps a label at 4 KiB; libcni's cache has them too
		labels[LabelPortMappings] = pm
	}
	attached := false
	attach := func() ([]string, error) {
		ips, err := r.net.attach(ctx, id, path, pod)
		attached = err == nil
		return ips, err
	}
	undo := func() {
		if !attached {
			_ = removePinnedNs(path) // attach failed (and cleaned up) or never ran
			return
		}
		if err := r.net.teardown(context.WithoutCancel(ctx), id, path, ports); err != nil {
			r.log.Warn("release network of a sandbox that could not start", "sandbox", id, "err", err)
		}
	}
	return []oci.SpecOpts{oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: path})}, attach, undo, nil
}

// releaseSandboxNetwork tears down the pod network of sandbox c (labels: its labels; CNI DEL,
// then the pinned namespace) unless it is not a sandbox, has no CNI network, or was released
// already. It works whether or not the pause process still runs. Idempotent.
func (r *Runtime) releaseSandboxNetwork(ctx context.Context, c containerd.Container, labels map[string]string) error {
	path := labels[LabelNetns]
	if podrunner.ContainerKind(labels[LabelKind]) != podrunner.KindSandbox || path == "" || labels[LabelNetworkReleased] == "true" {
		return nil
	}
	if r.net == nil {
		// A runtime without the CNI config (a short CLI command): it can free the namespace
		// but not the IP; the agent's next start finds nothing to do for it either, so say so.
		r.log.Warn("no CNI config: removing the sandbox's network namespace without CNI DEL; its IP stays reserved", "sandbox", c.ID())
		return removePinnedNs(path)
	}
	ports := decodePortMappings(labels[LabelPortMappings])
	if ports == nil {
		ports = cachedPortMappings(c.ID())
	}
	if err := r.net.teardown(ctx, c.ID(), path, ports); err != nil {
		return fmt.Errorf("sandbox %s: %w", c.ID(), err)
	}
	if _, err := c.SetLabels(ctx, map[string]string{LabelNetworkReleased: "true"}); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("record network release of %s: %w", c.ID(), err)
	}
	labels[LabelNetworkReleased] = "true"
	return nil
}

// releaseSandbox releases what stopped or removed container c (labels: its labels) held beside
// its process when it is a sandbox: its pod network and its pinned UTS and IPC namespaces (no
// container joins a sandbox that has stopped). Its /dev/shm goes with its removal. Idempotent.
func (r *Runtime) releaseSandbox(ctx context.Context, c containerd.Container, labels map[string]string) error {
	if err := r.releaseSandboxNetwork(ctx, c, labels); err != nil {
		return err
	}
	return releaseSandboxNamespaces(c.ID(), labels)
}

// gcNetworks releases pinned namespaces left without a sandbox (a crash between their making
// and the sandbox's creation): pod networks (CNI DEL) and UTS and IPC namespaces. Run once at
// agent start, before any worker creates sandboxes.
func (r *Runtime) gcNetworks(ctx context.Context) {
	exists := func(id string) (bool, error) {
		_, err := r.client.LoadContainer(r.ctx(ctx), id)
		if errdefs.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	if r.net != nil {
		r.net.gcOrphans(r.ctx(ctx), exists)
	}
	dirs, _ := filepath.Glob(sandboxNsDir(r.cfg.RootDir, "*", "*"))
	for _, dir := range dirs {
		if ok, err := exists(filepath.Base(dir)); err != nil || ok {
			continue
		}
		if err := removePinnedNamespaces(dir); err != nil {
			r.log.Warn("release orphaned pod namespaces", "dir", dir, "err", err)
			continue
		}
		r.log.Info("released orphaned pod namespaces", "sandbox", filepath.Base(dir))
	}
}

// sandboxNamespaceOpts are the pause process's PID and IPC namespaces: the host's for hostPID /
// hostIPC pods, else a new PID namespace (runc's default spec) and the IPC namespace pinned
// ahead (pinSandboxNamespaces). Network and UTS: see hostnameOpts and prepareSandbox.
func sandboxNamespaceOpts(pod *corev1.Pod) []oci.SpecOpts {
	var opts []oci.SpecOpts
	if pod.Spec.HostPID {
		opts = append(opts, oci.WithHostNamespace(specs.PIDNamespace))
	}
	if pod.Spec.HostIPC {
		opts = append(opts, oci.WithHostNamespace(specs.IPCNamespace), withHostDevShm)
	}
	return opts
}

// errNoSandboxNamespace: a namespace a container must join does not exist (yet): its sandbox's
// process has not been created and the namespace was not made ahead of it.
var errNoSandboxNamespace = errors.New("the sandbox's namespaces do not exist")

// containerNamespaceOpts puts a container into its pod's namespaces, which at says where the
// sandbox holds them ("" when it does not hold one):
//   - network and UTS: the sandbox's (hostNetwork pods: the host's, set by hostnameOpts);
//   - IPC: the sandbox's, or the host's (with the host's /dev/shm) for hostIPC;
//   - PID: the host's for hostPID; the sandbox's with shareProcessNamespace (the pause process
//     is PID 1 and every container sees the others' processes); else a namespace of its own.
//
// It fails (errNoSandboxNamespace) when one it must join is not there.
func containerNamespaceOpts(pod *corev1.Pod, at func(specs.LinuxNamespaceType) string) ([]oci.SpecOpts, error) {
	var missing []string
	join := func(t specs.LinuxNamespaceType) oci.SpecOpts {
		p := at(t)
		if p == "" {
			missing = append(missing, nsFile(t))
		}
		return oci.WithLinuxNamespace(specs.LinuxNamespace{Type: t, Path: p})
	}
	var opts []oci.SpecOpts
	if !pod.Spec.HostNetwork {
		opts = append(opts, join(specs.NetworkNamespace), join(specs.UTSNamespace))
	}
	if pod.Spec.HostIPC {
		opts = append(opts, oci.WithHostNamespace(specs.IPCNamespace), withHostDevShm)
	} else {
		opts = append(opts, join(specs.IPCNamespace))
	}
	switch {
	case pod.Spec.HostPID:
		opts = append(opts, oci.WithHostNamespace(specs.PIDNamespace))
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		opts = append(opts, join(specs.PIDNamespace))
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s", errNoSandboxNamespace, strings.Join(missing, ", "))
	}
	return opts, nil
}

// withHostDevShm replaces the container's private /dev/shm with the host's, as the CRI does for
// hostIPC pods (POSIX shared memory lives there).
func withHostDevShm(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
	shm := specs.Mount{Destination: "/dev/shm", Type: "bind", Source: "/dev/shm", Options: []string{"rbind", "rprivate", "rw"}}
	for i, m := range s.Mounts {
		if m.Destination == "/dev/shm" {
			s.Mounts[i] = shm
			return nil
		}
	}
	s.Mounts = append(s.Mounts, shm)
	return nil
}
