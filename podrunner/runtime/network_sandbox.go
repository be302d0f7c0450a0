package runtime

import (
	"context"
	"fmt"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/podrunner"
)

// prepareSandbox makes what a sandbox about to be created holds besides its process: the pod's
// /dev/shm (see podShmOpts) and its network (sandboxNetwork), recorded in labels. It returns the
// spec options for the pause process and an undo for when the sandbox cannot be created.
func (r *Runtime) prepareSandbox(ctx context.Context, id string, pod *corev1.Pod, labels map[string]string) ([]oci.SpecOpts, func() ([]string, error), func(), error) {
	var shm string
	if !pod.Spec.HostIPC {
		shm = sandboxShmPath(r.cfg.RootDir, string(pod.UID), id)
		if err := mountSandboxShm(shm); err != nil {
			return nil, nil, nil, err
		}
		labels[LabelShm] = shm
	}
	opts, attach, undoNet, err := r.sandboxNetwork(ctx, id, pod, labels)
	if err != nil {
		if shm != "" {
			_ = unmountSandboxShm(shm)
		}
		return nil, nil, nil, err
	}
	return opts, attach, func() {
		undoNet()
		if shm != "" {
			_ = unmountSandboxShm(shm)
		}
	}, nil
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
			_ = removePinnedNetns(path) // attach failed (and cleaned up) or never ran
			return
		}
		if err := r.net.teardown(context.WithoutCancel(ctx), id, path, ports); err != nil {
			r.log.Warn("release network of a sandbox that could not start", "sandbox", id, "err", err)
		}
	}
	return []oci.SpecOpts{oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: path})}, attach, undo, nil
}

// releaseSandboxNetwork tears down the pod network of sandbox c (CNI DEL, then the pinned
// namespace) unless it is not a sandbox, has no CNI network, or was released already. It works
// whether or not the pause process still runs. Idempotent.
func (r *Runtime) releaseSandboxNetwork(ctx context.Context, c containerd.Container) error {
	labels, err := c.Labels(ctx)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("labels of %s: %w", c.ID(), err)
	}
	path := labels[LabelNetns]
	if podrunner.ContainerKind(labels[LabelKind]) != podrunner.KindSandbox || path == "" || labels[LabelNetworkReleased] == "true" {
		return nil
	}
	if r.net == nil {
		// A runtime without the CNI config (a short CLI command): it can free the namespace
		// but not the IP; the agent's next start finds nothing to do for it either, so say so.
		r.log.Warn("no CNI config: removing the sandbox's network namespace without CNI DEL; its IP stays reserved", "sandbox", c.ID())
		return removePinnedNetns(path)
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
	return nil
}

// gcNetworks releases pinned namespaces left without a sandbox (crash between CNI ADD and the
// sandbox's creation). Run once at agent start, before any worker creates sandboxes.
func (r *Runtime) gcNetworks(ctx context.Context) {
	if r.net == nil {
		return
	}
	r.net.gcOrphans(r.ctx(ctx), func(id string) (bool, error) {
		_, err := r.client.LoadContainer(r.ctx(ctx), id)
		if errdefs.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// sandboxNamespaceOpts are the pause process's PID and IPC namespaces: the host's for hostPID /
// hostIPC pods, else new ones (runc's default spec). Network and UTS: see hostnameOpts.
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

// containerNamespaceOpts puts a container into its pod's namespaces, held by the sandbox's
// process pid:
//   - network and UTS: the sandbox's (hostNetwork pods: the host's, set by hostnameOpts);
//   - IPC: the sandbox's, or the host's (with the host's /dev/shm) for hostIPC;
//   - PID: the host's for hostPID; the sandbox's with shareProcessNamespace (the pause process
//     is PID 1 and every container sees the others' processes); else a namespace of its own.
func containerNamespaceOpts(pod *corev1.Pod, pid uint32) []oci.SpecOpts {
	join := func(t specs.LinuxNamespaceType) oci.SpecOpts {
		return oci.WithLinuxNamespace(specs.LinuxNamespace{Type: t, Path: fmt.Sprintf("/proc/%d/ns/%s", pid, nsFile(t))})
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
	return opts
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
