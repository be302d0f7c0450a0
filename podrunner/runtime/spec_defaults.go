package runtime

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/moby/sys/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// The containerd client's default spec (oci.WithDefaultSpec) is made for `ctr run`, not for a
// kubelet's containers: containerd's CRI plugin, which runs them, changes it. A pod moved from
// the kubelet to podkeeper must see the same inside, so podkeeper's containers get the CRI's
// changes too (make conformance's inside-* scenarios compare them):
//   - no tmpfs on /run (the image's /run shows through);
//   - no rlimits of its own: the container inherits containerd's (Debian's containerd.service
//     sets LimitNOFILE=infinity), where the client's default spec caps open files at 1024, hard,
//     too few for etcd or an API server;
//   - the container's cgroup mounted read-only at /sys/fs/cgroup (runtimes such as the JVM and
//     Go's automaxprocs read their limits there), in a cgroup namespace of its own on cgroup v2
//     unless privileged (the CRI's choice, which hides the rest of the host's tree);
//   - HOSTNAME in the environment: the pod's hostname (the host's for hostNetwork), which the
//     image's or the container's own env may override.

// criMountOpts are the spec's mount and rlimit changes (the first three above). unified: cgroup
// v2; privileged: the container's securityContext.privileged; cgroupVFSOptions: the host's
// /sys/fs/cgroup super options (only read for a privileged container on cgroup v2, which shares
// the host's cgroup namespace: mounting cgroup2 there again applies the mount's options to the
// one shared superblock, so nsdelegate and memory_recursiveprot are kept, as the CRI does).
func criMountOpts(unified, privileged bool, cgroupVFSOptions func() string) []oci.SpecOpts {
	opts := []oci.SpecOpts{oci.WithoutRunMount, withoutRlimits}
	cgOpts := []string{"nosuid", "noexec", "nodev", "relatime", "ro"}
	switch {
	case unified && !privileged:
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.CgroupNamespace}))
	case unified:
		for _, o := range strings.Split(cgroupVFSOptions(), ",") {
			if o == "nsdelegate" || o == "memory_recursiveprot" {
				cgOpts = append(cgOpts, o)
			}
		}
	}
	return append(opts, withCgroupMount(cgOpts))
}

// withoutRlimits leaves the process's rlimits to what it inherits from the runtime.
func withoutRlimits(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
	if s.Process != nil {
		s.Process.Rlimits = nil
	}
	return nil
}

// withCgroupMount mounts the container's cgroup at /sys/fs/cgroup (runc makes a "cgroup" mount
// the container's own part of the tree) right after the spec's /sys mount, so that volumes
// mounted below it later stay on top.
func withCgroupMount(options []string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		m := specs.Mount{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: options}
		out := make([]specs.Mount, 0, len(s.Mounts)+1)
		placed := false
		for _, cur := range s.Mounts {
			if cur.Destination == m.Destination {
				continue
			}
			out = append(out, cur)
			if cur.Destination == "/sys" {
				out = append(out, m)
				placed = true
			}
		}
		if !placed {
			out = append(out, m)
		}
		s.Mounts = out
		return nil
	}
}

// hostCgroupVFSOptions are the super options of the host's /sys/fs/cgroup mount ("" when it
// cannot be read).
func hostCgroupVFSOptions() string {
	ms, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter("/sys/fs/cgroup"))
	if err != nil || len(ms) == 0 {
		return ""
	}
	return ms[len(ms)-1].VFSOptions
}

// containerMountDefaults are criMountOpts for a container on this host.
func containerMountDefaults(ctr *corev1.Container) []oci.SpecOpts {
	privileged := ctr.SecurityContext != nil && ctr.SecurityContext.Privileged != nil && *ctr.SecurityContext.Privileged
	return criMountOpts(cgroups.Mode() == cgroups.Unified, privileged, hostCgroupVFSOptions)
}

// withMountsInDepthOrder orders the mounts by the depth of their destination, keeping the order
// of those of one depth, as the CRI orders a kubelet's: a volume mounted at /data then comes
// before one at /data/sub whatever the order of volumeMounts, where runc mounting /data second
// would hide /data/sub. A later mount on the same destination stays on top.
func withMountsInDepthOrder(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
	depth := func(p string) int { return len(strings.Split(filepath.Clean(p), "/")) }
	sort.SliceStable(s.Mounts, func(i, j int) bool { return depth(s.Mounts[i].Destination) < depth(s.Mounts[j].Destination) })
	return nil
}

// WithHostnameEnv puts HOSTNAME=hostname in front of an image's environment unless the image
// sets it (the container's env is merged over the result: MergeEnv). Pure.
func WithHostnameEnv(imageEnv []string, hostname string) []string {
	for _, kv := range imageEnv {
		if strings.HasPrefix(kv, "HOSTNAME=") {
			return imageEnv
		}
	}
	return append([]string{"HOSTNAME=" + hostname}, imageEnv...)
}

// envHostname is the HOSTNAME a pod's containers get: the pod's hostname, the host's for a
// hostNetwork pod.
func (r *Runtime) envHostname(pod *corev1.Pod) string {
	if pod.Spec.HostNetwork {
		h, _ := os.Hostname()
		return h
	}
	return r.podHostname(pod)
}
