package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/podrunner"
)

// ContainerArgs merges an image's Entrypoint/Cmd with a container's command/args the way the
// kubelet does:
//   - command set: command + args (the image's Entrypoint and Cmd are ignored);
//   - only args set: Entrypoint + args;
//   - neither: Entrypoint + Cmd.
func ContainerArgs(entrypoint, cmd, command, args []string) []string {
	var out []string
	switch {
	case len(command) > 0:
		out = append(out, command...)
		out = append(out, args...)
	case len(args) > 0:
		out = append(out, entrypoint...)
		out = append(out, args...)
	default:
		out = append(out, entrypoint...)
		out = append(out, cmd...)
	}
	return out
}

// MergeEnv overlays the container's env (name=value, already resolved) on the image's env:
// a container variable replaces the image variable of the same name in place; new names are
// appended in the container's order.
func MergeEnv(imageEnv []string, containerEnv []corev1.EnvVar) []string {
	out := append([]string(nil), imageEnv...)
	index := map[string]int{}
	for i, kv := range out {
		name, _, _ := strings.Cut(kv, "=")
		index[name] = i
	}
	for _, e := range containerEnv {
		kv := e.Name + "=" + e.Value
		if i, ok := index[e.Name]; ok {
			out[i] = kv
			continue
		}
		index[e.Name] = len(out)
		out = append(out, kv)
	}
	return out
}

// ExpandEnv resolves $(VAR) references in s from vars as the kubelet does: $$ is an escaped $,
// and a reference to an unknown variable is left as written.
func ExpandEnv(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// ResolveEnv turns a container's env into name/value pairs, expanding $(VAR) references to
// variables defined earlier in the list. Sources other than plain values (fieldRef and friends)
// are resolved by resolveSource; a nil result leaves the variable empty.
func ResolveEnv(env []corev1.EnvVar, resolveSource func(corev1.EnvVar) string) []corev1.EnvVar {
	vars := map[string]string{}
	out := make([]corev1.EnvVar, 0, len(env))
	for _, e := range env {
		v := e.Value
		if e.ValueFrom != nil && resolveSource != nil {
			v = resolveSource(e)
		} else {
			v = ExpandEnv(v, vars)
		}
		vars[e.Name] = v
		out = append(out, corev1.EnvVar{Name: e.Name, Value: v})
	}
	return out
}

// podDir is the per-pod directory podkeeper owns under root: generated files and volumes.
func podDir(root, uid string) string { return filepath.Join(root, "pods", uid) }

// writePodFiles writes /etc/hosts, /etc/resolv.conf and /etc/hostname for a pod (see HostsFile
// and ResolvConf for what goes in them) and returns the mounts that place them in every container.
// podIPs are the sandbox's IPs (none for hostNetwork pods).
func writePodFiles(root string, pod *corev1.Pod, podIPs []string, dns DNSConfig) ([]specs.Mount, error) {
	dir := podDir(root, string(pod.UID))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create pod dir: %w", err)
	}
	hostname, fqdn, err := PodHostnameAndFQDN(pod, dns.domain())
	if err != nil {
		return nil, err
	}
	var hostHosts []byte
	if pod.Spec.HostNetwork {
		hostname, _ = os.Hostname()
		if hostHosts, err = os.ReadFile("/etc/hosts"); err != nil {
			hostHosts = []byte("127.0.0.1\tlocalhost\n")
		}
	}
	hosts := HostsFile(pod, podIPs, hostname, fqdn, hostHosts)
	resolvPath := dns.ResolvConf
	if resolvPath == "" {
		resolvPath = "/etc/resolv.conf"
	}
	hostResolv, err := os.ReadFile(resolvPath)
	if err != nil && pod.Spec.DNSPolicy != corev1.DNSNone {
		return nil, fmt.Errorf("read the host's resolv.conf %s: %w", resolvPath, err)
	}
	resolv, _ := ResolvConf(pod, ParseResolvConf(hostResolv), dns)
	for n, content := range map[string][]byte{"etc-hosts": hosts, "resolv.conf": resolv.Render(), "hostname": []byte(hostname + "\n")} {
		if err := os.WriteFile(filepath.Join(dir, n), content, 0o644); err != nil {
			return nil, fmt.Errorf("write pod %s: %w", n, err)
		}
	}
	return []specs.Mount{
		{Destination: "/etc/hosts", Type: "bind", Source: filepath.Join(dir, "etc-hosts"), Options: []string{"rbind", "rw"}},
		{Destination: "/etc/resolv.conf", Type: "bind", Source: filepath.Join(dir, "resolv.conf"), Options: []string{"rbind", "rw"}},
		{Destination: "/etc/hostname", Type: "bind", Source: filepath.Join(dir, "hostname"), Options: []string{"rbind", "rw"}},
	}, nil
}

// PodHostname is the hostname a pod's containers see: spec.hostnameOverride (GA in the kubelet
// 1.37), else spec.hostname, else the pod name, cut to 63 characters as the kubelet does.
func PodHostname(pod *corev1.Pod) string {
	h := pod.Spec.Hostname
	if o := pod.Spec.HostnameOverride; o != nil {
		h = *o
	}
	if h == "" {
		h = pod.Name
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

// sandboxRefusal is why a pod's sandbox cannot be made as asked, nil when it can. hostUsers:
// false asks for a user namespace, which podkeeper does not make (containerd 1.6 cannot
// id-map the container's root file system): the pod is refused with the kubelet's words for a
// runtime without user namespaces, never run in the host's user namespace instead. Pure.
//
// runtimeClassName names a RuntimeClass object, which only an API server holds: the pod is
// refused with the lookup's error, never run with runc instead of the isolation it asked for.
// (The kubelet 1.37 without an API server crashes on such a static pod: a nil RuntimeClass
// manager; make conformance found it.)
//
// A setHostnameAsFQDN hostname longer than 64 characters fails the sandbox too, as the kubelet's
// sandbox config does (make conformance's edge-fqdn-too-long), not the container's config; so
// does a pod-level SELinux level containerd's CRI refuses (edge-selinux-level-odd-pod: the CRI's
// words for its sandbox spec).
func sandboxRefusal(pod *corev1.Pod, clusterDomain string) error {
	if _, _, err := PodHostnameAndFQDN(pod, clusterDomain); err != nil {
		return err
	}
	if h := pod.Spec.HostUsers; h != nil && !*h {
		return fmt.Errorf("can't set `spec.hostUsers: false`, runtime does not support user namespaces")
	}
	if rc := pod.Spec.RuntimeClassName; rc != nil && *rc != "" {
		return fmt.Errorf("RuntimeHandler lookup failed: runtimeclass.node.k8s.io %q not found (podkeeper has no RuntimeClass objects without an API server; leave runtimeClassName out to run with runc)", *rc)
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		o := sc.SELinuxOptions
		if err := checkSELinuxLevel(o); err != nil {
			return fmt.Errorf("failed to generate sandbox container spec: failed to init selinux options &SELinuxOption{User:%s,Role:%s,Type:%s,Level:%s,}: %w", o.User, o.Role, o.Type, o.Level, err)
		}
	}
	return nil
}

// volumeMounts turns a container's volumeMounts into OCI mounts, preparing each volume on the
// host (volumes.go); image volumes are the directories in imageDirs (by volume name), mounted
// by the runtime beforehand. configMap, secret, downwardAPI, projected and image volumes are
// always read-only.
// rroSupported says the runtime makes recursively read-only mounts (recursiveReadOnly). It also
// returns the rootfs propagation the mounts need (bindOptions; empty: the default, private).
//
// A subPath (or a subPathExpr, expanded from env: the container's environment) is resolved
// without leaving its volume and bind-mounted onto a path podkeeper owns (subpath.go).
func volumeMounts(root string, pod *corev1.Pod, c *corev1.Container, lookup podrunner.ConfigLookup, nodeAlloc corev1.ResourceList, rroSupported bool, env map[string]string, imageDirs map[string]string) ([]specs.Mount, string, error) {
	vols := map[string]*corev1.Volume{}
	for i := range pod.Spec.Volumes {
		vols[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	var out []specs.Mount
	rootfs := ""
	for i, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			return nil, "", fmt.Errorf("volumeMount %q: no volume of that name", vm.Name)
		}
		var src string
		var ro bool
		var err error
		if v.Image != nil { // mounted by the runtime, read-only
			if src, ro = imageDirs[v.Name], true; src == "" {
				return nil, "", fmt.Errorf("volume %q: image volume not mounted", v.Name)
			}
		} else if src, ro, err = prepareVolume(root, pod, v, lookup, nodeAlloc); err != nil {
			return nil, "", err
		}
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			if sub, err = expandSubPathExpr(vm.SubPathExpr, env); err != nil {
				return nil, "", fmt.Errorf("volume %q: subPathExpr %q: %w", v.Name, vm.SubPathExpr, err)
			}
		}
		volSrc := src
		if sub != "" {
			if src, err = subPathMount(src, sub, subPathTarget(root, string(pod.UID), v.Name, c.Name, i)); err != nil {
				return nil, "", fmt.Errorf("volume %q: %w", v.Name, err)
			}
		}
		rro, err := podrunner.RecursiveReadOnly(vm, rroSupported)
		if err != nil {
			return nil, "", err
		}
		opts, need := bindOptions(vm, vm.ReadOnly || ro, rro)
		if need != "" {
			if err := checkSourcePropagation(volSrc, need); err != nil {
				return nil, "", fmt.Errorf("volume %q: %w", v.Name, err)
			}
		}
		if need == "rshared" || (need == "rslave" && rootfs == "") {
			rootfs = need
		}
		out = append(out, specs.Mount{Destination: vm.MountPath, Type: "bind", Source: src, Options: opts})
	}
	return out, rootfs, nil
}

// bindOptions are the OCI options of a volume's bind mount, as containerd's CRI makes them:
// the mount's bindMountOptions, its propagation (mountPropagation None: rprivate; HostToContainer: rslave;
// Bidirectional: rshared), ro or rw, and rro (recursively read-only) when asked for and
// possible. propagation is what the container's root must be for it ("rslave", "rshared"; the
// host's mount of the source must match: checkSourcePropagation), empty for a private mount.
// Pure.
func bindOptions(vm corev1.VolumeMount, readOnly, rro bool) (opts []string, propagation string) {
	prop := "rprivate"
	if vm.MountPropagation != nil {
		switch *vm.MountPropagation {
		case corev1.MountPropagationHostToContainer:
			prop, propagation = "rslave", "rslave"
		case corev1.MountPropagationBidirectional:
			prop, propagation = "rshared", "rshared"
		}
	}
	opts = []string{"rbind", prop, "rw"}
	if readOnly {
		opts[2] = "ro"
		if rro {
			opts = append(opts, "rro")
		}
	}
	// bindMountOptions (noexec, nodev, nosuid; validated), as the kubelet hands them to the runtime.
	opts = append(opts, vm.BindMountOptions...)
	return opts, propagation
}

// withRootfsPropagation sets the container root's propagation (empty: left as it is).
func withRootfsPropagation(p string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if p != "" {
			if s.Linux == nil {
				s.Linux = &specs.Linux{}
			}
			s.Linux.RootfsPropagation = p
		}
		return nil
	}
}

// checkSourcePropagation refuses a propagating mount whose source the host mounts privately,
// as containerd's CRI does: for rshared (Bidirectional) the host mount holding src must be
// shared, for rslave (HostToContainer) shared or a slave; otherwise the mount would silently
// propagate nothing.
func checkSourcePropagation(src, need string) error {
	real, err := filepath.EvalSymlinks(src)
	if err != nil {
		return fmt.Errorf("mount propagation: %w", err)
	}
	mounts, err := readMountinfo()
	if err != nil {
		return fmt.Errorf("mount propagation: %w", err)
	}
	mountPoint, optional, err := mountOf(mounts, real)
	if err != nil {
		return fmt.Errorf("mount propagation: %w", err)
	}
	return propagationAllowed(real, mountPoint, optional, need)
}

// mountOf finds the mount holding path: the longest mount point that is path or one of its
// parents (the last one listed wins a tie: it is mounted over the others), with its optional
// fields (shared:N, master:N...).
func mountOf(mounts []mountEntry, path string) (mountPoint string, optional []string, err error) {
	found := false
	for _, m := range mounts {
		mp := m.point
		if !(mp == "/" || mp == path || strings.HasPrefix(path, mp+"/")) || len(mp) < len(mountPoint) {
			continue
		}
		mountPoint, optional, found = mp, m.optional, true
	}
	if !found {
		return "", nil, fmt.Errorf("no mount holds %s", path)
	}
	return mountPoint, optional, nil
}

// propagationAllowed is checkSourcePropagation's decision on the mount found. Pure.
func propagationAllowed(path, mountPoint string, optional []string, need string) error {
	shared, slave := false, false
	for _, o := range optional {
		shared = shared || strings.HasPrefix(o, "shared:")
		slave = slave || strings.HasPrefix(o, "master:")
	}
	switch {
	case need == "rshared" && !shared:
		return fmt.Errorf("path %q is mounted on %q but it is not a shared mount (Bidirectional propagation needs one: mount --make-rshared %s)", path, mountPoint, mountPoint)
	case need == "rslave" && !shared && !slave:
		return fmt.Errorf("path %q is mounted on %q but it is not a shared or slave mount (HostToContainer propagation needs one: mount --make-rshared %s)", path, mountPoint, mountPoint)
	}
	return nil
}

// prepareHostPath applies the hostPath type checks (and creations) the kubelet does.
func prepareHostPath(path string, t *corev1.HostPathType) error {
	typ := corev1.HostPathUnset
	if t != nil {
		typ = *t
	}
	fi, err := os.Stat(path)
	switch typ {
	case corev1.HostPathUnset:
		return nil
	case corev1.HostPathDirectoryOrCreate:
		if os.IsNotExist(err) {
			return os.MkdirAll(path, 0o755)
		}
		if err == nil && !fi.IsDir() {
			return fmt.Errorf("hostPath %s exists and is not a directory", path)
		}
		return err
	case corev1.HostPathDirectory:
		if err != nil || !fi.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a directory", path)
		}
	case corev1.HostPathFileOrCreate:
		if os.IsNotExist(err) {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
		if err == nil && fi.IsDir() {
			return fmt.Errorf("hostPath %s exists and is a directory", path)
		}
		return err
	case corev1.HostPathFile:
		if err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("hostPath type check failed: %s is not a file", path)
		}
	case corev1.HostPathSocket:
		if err != nil || fi.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("hostPath type check failed: %s is not a socket file", path)
		}
	case corev1.HostPathCharDev:
		if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
			return fmt.Errorf("hostPath type check failed: %s is not a character device", path)
		}
	case corev1.HostPathBlockDev:
		if err != nil || fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
			return fmt.Errorf("hostPath type check failed: %s is not a block device", path)
		}
	default:
		return fmt.Errorf("unknown hostPath type %q", typ)
	}
	return nil
}
