package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/containerd/v2/contrib/seccomp"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/apparmor"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/podrunner"
)

// effectiveSecurity is a container's securityContext with the pod's defaults applied (the
// container's fields win), as the kubelet merges them.
type effectiveSecurity struct {
	RunAsUser, RunAsGroup    *int64
	RunAsNonRoot             *bool
	SupplementalGroups       []int64
	GroupsPolicy             corev1.SupplementalGroupsPolicy // Merge (the default) or Strict
	FSGroup                  *int64
	Privileged               bool
	ReadOnlyRootFilesystem   bool
	AllowPrivilegeEscalation *bool
	Capabilities             *corev1.Capabilities
	Seccomp                  *corev1.SeccompProfile
	Sysctls                  []corev1.Sysctl
	// SELinux is the pod's options, or the container's when it sets any (the whole struct, as
	// the kubelet's effective security context takes it).
	SELinux *corev1.SELinuxOptions
}

func mergeSecurity(pod *corev1.Pod, c *corev1.Container) effectiveSecurity {
	var e effectiveSecurity
	if p := pod.Spec.SecurityContext; p != nil {
		e.RunAsUser, e.RunAsGroup, e.RunAsNonRoot = p.RunAsUser, p.RunAsGroup, p.RunAsNonRoot
		e.SupplementalGroups, e.FSGroup, e.Seccomp, e.Sysctls = p.SupplementalGroups, p.FSGroup, p.SeccompProfile, p.Sysctls
		e.SELinux = p.SELinuxOptions
		if p.SupplementalGroupsPolicy != nil {
			e.GroupsPolicy = *p.SupplementalGroupsPolicy
		}
	}
	if e.GroupsPolicy == "" {
		e.GroupsPolicy = corev1.SupplementalGroupsPolicyMerge
	}
	if s := c.SecurityContext; s != nil {
		if s.RunAsUser != nil {
			e.RunAsUser = s.RunAsUser
		}
		if s.RunAsGroup != nil {
			e.RunAsGroup = s.RunAsGroup
		}
		if s.RunAsNonRoot != nil {
			e.RunAsNonRoot = s.RunAsNonRoot
		}
		if s.SeccompProfile != nil {
			e.Seccomp = s.SeccompProfile
		}
		if s.SELinuxOptions != nil {
			e.SELinux = s.SELinuxOptions
		}
		e.Privileged = s.Privileged != nil && *s.Privileged
		e.ReadOnlyRootFilesystem = s.ReadOnlyRootFilesystem != nil && *s.ReadOnlyRootFilesystem
		e.AllowPrivilegeEscalation = s.AllowPrivilegeEscalation
		e.Capabilities = s.Capabilities
	}
	return e
}

// verifyNonRoot refuses a container that must not run as root and would, with the kubelet's
// messages. imageUser is the image config's USER ("" = root).
func verifyNonRoot(pod *corev1.Pod, c *corev1.Container, e effectiveSecurity, imageUser string) error {
	if e.RunAsNonRoot == nil || !*e.RunAsNonRoot {
		return nil
	}
	if e.RunAsUser != nil {
		if *e.RunAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podrunner.PodRef(pod), c.Name)
		}
		return nil
	}
	u, _, _ := strings.Cut(imageUser, ":")
	if u == "" {
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podrunner.PodRef(pod), c.Name)
	}
	uid, err := strconv.ParseInt(u, 10, 64)
	if err != nil {
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", u, podrunner.PodRef(pod), c.Name)
	}
	if uid == 0 {
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podrunner.PodRef(pod), c.Name)
	}
	return nil
}

// AppArmorEnabled says the host has AppArmor enabled (containerd's check: the kernel module's
// "enabled" parameter and apparmor_parser present).
func AppArmorEnabled() bool { return apparmor.HostSupports() }

// SELinuxEnabled reports whether the host runs SELinux (its file system is mounted).
func SELinuxEnabled() bool {
	_, err := os.Stat("/sys/fs/selinux/enforce")
	return err == nil
}

// capName normalises a Kubernetes capability name (NET_ADMIN, net_admin, CAP_NET_ADMIN) to the
// OCI form (CAP_NET_ADMIN).
func capName(c corev1.Capability) string {
	s := strings.ToUpper(string(c))
	if !strings.HasPrefix(s, "CAP_") {
		s = "CAP_" + s
	}
	return s
}

// capabilityOpts applies add/drop to the default set (containerd's CRI default, which
// oci.WithDefaultSpec gives) in containerd CRI's order: ALL in add grants every capability, ALL
// in drop clears them, then the named ones are added, then the named ones dropped (a capability
// both added and dropped ends up dropped).
func capabilityOpts(caps *corev1.Capabilities) []oci.SpecOpts {
	if caps == nil {
		return nil
	}
	has := func(list []corev1.Capability) bool {
		return slices.ContainsFunc(list, func(c corev1.Capability) bool { return strings.EqualFold(string(c), "ALL") })
	}
	names := func(list []corev1.Capability) []string {
		var out []string
		for _, c := range list {
			if !strings.EqualFold(string(c), "ALL") {
				out = append(out, capName(c))
			}
		}
		return out
	}
	var opts []oci.SpecOpts
	if has(caps.Add) {
		opts = append(opts, oci.WithAllCurrentCapabilities)
	}
	if has(caps.Drop) {
		opts = append(opts, oci.WithCapabilities(nil))
	}
	return append(opts, oci.WithAddedCapabilities(names(caps.Add)), oci.WithDroppedCapabilities(names(caps.Drop)))
}

// namespacedSysctl reports whether a sysctl is namespaced (safe to set per pod), as the kubelet's
// sysctl allowlist logic groups them; net.* needs the pod's own network namespace.
func namespacedSysctl(name string, hostNetwork bool) bool {
	n := strings.ReplaceAll(name, "/", ".")
	switch {
	case n == "kernel.sem", strings.HasPrefix(n, "kernel.shm"), strings.HasPrefix(n, "kernel.msg"),
		strings.HasPrefix(n, "fs.mqueue."):
		return true
	case strings.HasPrefix(n, "net."):
		return !hostNetwork
	}
	return false
}

// seccompOpts sets the seccomp profile: RuntimeDefault is containerd's default profile,
// Unconfined (and unset, as the kubelet defaults it) none, Localhost a JSON profile read from
// <root-dir>/seccomp/<localhostProfile>.
func seccompOpts(root string, p *corev1.SeccompProfile, privileged bool) ([]oci.SpecOpts, error) {
	if privileged || p == nil {
		return []oci.SpecOpts{oci.WithSeccompUnconfined}, nil
	}
	switch p.Type {
	case corev1.SeccompProfileTypeUnconfined:
		return []oci.SpecOpts{oci.WithSeccompUnconfined}, nil
	case corev1.SeccompProfileTypeRuntimeDefault:
		return []oci.SpecOpts{seccomp.WithDefaultProfile()}, nil
	case corev1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, fmt.Errorf("seccompProfile Localhost needs localhostProfile")
		}
		rel := filepath.Clean("/" + *p.LocalhostProfile)
		path := filepath.Join(root, "seccomp", rel)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, &podrunner.CreateError{Err: fmt.Errorf("cannot load seccomp profile %q: %w", path, err)}
		}
		var prof specs.LinuxSeccomp
		if err := json.Unmarshal(b, &prof); err != nil {
			return nil, &podrunner.CreateError{Err: fmt.Errorf("decoding seccomp profile %q failed: %w", path, err)}
		}
		return []oci.SpecOpts{func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
			if s.Linux == nil {
				s.Linux = &specs.Linux{}
			}
			s.Linux.Seccomp = &prof
			return nil
		}}, nil
	}
	return nil, fmt.Errorf("unknown seccompProfile type %q", p.Type)
}

// withGroups appends supplemental groups (fsGroup, supplementalGroups) to the process user.
func withGroups(gids []int64) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		for _, g := range gids {
			if !slices.Contains(s.Process.User.AdditionalGids, uint32(g)) {
				s.Process.User.AdditionalGids = append(s.Process.User.AdditionalGids, uint32(g))
			}
		}
		return nil
	}
}

// withPrimaryGroupOnly drops every supplementary group but the primary one (Strict policy; the
// pod's fsGroup and supplementalGroups are added after it).
func withPrimaryGroupOnly() oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		s.Process.User.AdditionalGids = []uint32{s.Process.User.GID}
		return nil
	}
}

// withUserGroups adds the groups the image's /etc/group lists user (a name or a UID) in to the
// process's (Merge policy), keeping those it has.
func withUserGroups(user string) oci.SpecOpts {
	return func(ctx context.Context, client oci.Client, c *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		had := s.Process.User.AdditionalGids
		if err := oci.WithAdditionalGIDs(user)(ctx, client, c, s); err != nil {
			return fmt.Errorf("groups of user %s in the image: %w", user, err)
		}
		for _, g := range had {
			if !slices.Contains(s.Process.User.AdditionalGids, g) {
				s.Process.User.AdditionalGids = append(s.Process.User.AdditionalGids, g)
			}
		}
		return nil
	}
}

// withGID sets the process's primary group (runAsGroup), keeping the user.
func withGID(gid uint32) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		s.Process.User.GID = gid
		return nil
	}
}

// withSysctls sets namespaced sysctls.
func withSysctls(kv map[string]string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Sysctl == nil {
			s.Linux.Sysctl = map[string]string{}
		}
		for k, v := range kv {
			s.Linux.Sysctl[k] = v
		}
		return nil
	}
}

// withNoNewPrivileges sets no_new_privs as asked (allowPrivilegeEscalation: false sets it).
func withNoNewPrivileges(on bool) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		s.Process.NoNewPrivileges = on
		return nil
	}
}

// securityOpts turns the pod's and container's securityContext into spec options, to be applied
// after the image config (which sets the image's USER). imageUser is that USER. Errors are
// configuration errors (CreateContainerConfigError): the container is not created.
func securityOpts(root string, pod *corev1.Pod, c *corev1.Container, imageUser string) ([]oci.SpecOpts, error) {
	e := mergeSecurity(pod, c)
	if err := verifyNonRoot(pod, c, e, imageUser); err != nil {
		return nil, err
	}
	var opts []oci.SpecOpts
	switch {
	case e.RunAsUser != nil && e.RunAsGroup != nil:
		opts = append(opts, oci.WithUIDGID(uint32(*e.RunAsUser), uint32(*e.RunAsGroup)))
	case e.RunAsUser != nil:
		opts = append(opts, oci.WithUserID(uint32(*e.RunAsUser))) // group from the image's /etc/passwd
	case e.RunAsGroup != nil:
		opts = append(opts, withGID(uint32(*e.RunAsGroup)))
	}
	// The groups of the image's /etc/group: WithImageConfig gave the process those of the image's
	// USER; a runAsUser replaced them with its primary group alone. Merge (the default) gives the
	// effective user's, as containerd's CRI does; Strict none at all.
	switch {
	case e.GroupsPolicy == corev1.SupplementalGroupsPolicyStrict:
		opts = append(opts, withPrimaryGroupOnly())
	case e.RunAsUser != nil:
		opts = append(opts, withUserGroups(strconv.FormatInt(*e.RunAsUser, 10)))
	case e.RunAsGroup != nil:
		// The image's user (root without one) keeps its groups, but not the primary group the
		// image gave it: runAsGroup replaced that (the CRI's groups=2000 for runAsGroup 2000).
		user, _, _ := strings.Cut(imageUser, ":")
		if user == "" {
			user = "0"
		}
		opts = append(opts, withPrimaryGroupOnly(), withUserGroups(user))
	}
	var groups []int64
	if e.FSGroup != nil {
		groups = append(groups, *e.FSGroup)
	}
	groups = append(groups, e.SupplementalGroups...)
	if len(groups) > 0 {
		opts = append(opts, withGroups(groups))
	}
	if e.Privileged {
		opts = append(opts, oci.WithPrivileged, oci.WithHostDevices, oci.WithAllDevicesAllowed)
	} else {
		opts = append(opts, capabilityOpts(e.Capabilities)...)
	}
	if e.ReadOnlyRootFilesystem {
		opts = append(opts, oci.WithRootFSReadonly())
	}
	noNewPrivs := e.AllowPrivilegeEscalation != nil && !*e.AllowPrivilegeEscalation && !e.Privileged
	opts = append(opts, withNoNewPrivileges(noNewPrivs))
	// Seccomp last: the default profile depends on the capabilities.
	sc, err := seccompOpts(root, e.Seccomp, e.Privileged)
	if err != nil {
		return nil, err
	}
	opts = append(opts, sc...)
	if len(e.Sysctls) > 0 {
		kv := map[string]string{}
		for _, s := range e.Sysctls {
			if !namespacedSysctl(s.Name, pod.Spec.HostNetwork) {
				return nil, fmt.Errorf("sysctl %q is not namespaced (or the pod uses the host's network): refused", s.Name)
			}
			kv[s.Name] = s.Value
		}
		opts = append(opts, withSysctls(kv))
	}
	return opts, nil
}

// selinuxLevel is an MLS level as containerd's CRI accepts it.
var selinuxLevel = regexp.MustCompile(`^s\d(-s\d)??(:c\d{1,4}(\.c\d{1,4})?(,c\d{1,4}(\.c\d{1,4})?)*)?$`)

// checkSELinuxLevel refuses the level of o (nil: none) containerd's CRI refuses, SELinux on the
// host or not (so does the kubelet's runtime: a container with such a level fails to be
// created); podkeeper applies no labels, but does not run what the kubelet would not.
func checkSELinuxLevel(o *corev1.SELinuxOptions) error {
	if o == nil || o.Level == "" || selinuxLevel.MatchString(o.Level) {
		return nil
	}
	return fmt.Errorf("the format of 'level' %q is not correct", o.Level)
}
