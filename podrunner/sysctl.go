package podrunner

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/node/util/sysctl"
)

// Sysctls, as the kubelet admits them: a pod may set a sysctl only when it is one of the
// kubelet's safe sysctls (namespaced and harmless to the node; SafeSysctls, by kernel version) or
// matches one of the node's allowed unsafe patterns (the kubelet's --allowed-unsafe-sysctls,
// "kernel.msg*"), and only when the pod does not share the namespace the sysctl lives in with
// the host (net.* with hostNetwork, IPC ones with hostIPC, user.* without a user namespace).
// Any other pod is rejected at admission: Failed, reason SysctlForbidden, "forbidden sysctl:
// ...". Without this, a pod could set an unsafe sysctl (kernel.msgmax) that the kubelet refuses.

// ReasonSysctlForbidden is the kubelet's rejection reason.
const ReasonSysctlForbidden = "SysctlForbidden"

// safeSysctls are the kubelet 1.37's safe sysctls, each with the kernel version that namespaces
// it (0.0: any).
var safeSysctls = []struct {
	name         string
	major, minor int
}{
	{"kernel.shm_rmid_forced", 0, 0},
	{"net.ipv4.ip_local_port_range", 0, 0},
	{"net.ipv4.tcp_syncookies", 0, 0},
	{"net.ipv4.ping_group_range", 0, 0},
	{"net.ipv4.ip_unprivileged_port_start", 0, 0},
	{"net.ipv4.ip_local_reserved_ports", 3, 16},
	{"net.ipv4.tcp_keepalive_time", 4, 5},
	{"net.ipv4.tcp_fin_timeout", 4, 6},
	{"net.ipv4.tcp_keepalive_intvl", 4, 5},
	{"net.ipv4.tcp_keepalive_probes", 4, 5},
	{"net.ipv4.tcp_rmem", 4, 15},
	{"net.ipv4.tcp_wmem", 4, 15},
	{"net.ipv4.tcp_slow_start_after_idle", 4, 15},
	{"net.ipv4.tcp_notsent_lowat", 4, 6},
}

// SafeSysctls are the safe sysctls a kernel of version major.minor namespaces. Pure.
func SafeSysctls(major, minor int) []string {
	var out []string
	for _, s := range safeSysctls {
		if major > s.major || (major == s.major && minor >= s.minor) {
			out = append(out, s.name)
		}
	}
	return out
}

// SysctlAllowlist is what pods may set: names and prefixes (a pattern ending in "*"), each with
// the namespace it lives in. The zero value allows nothing; a nil *SysctlAllowlist allows the
// safe sysctls of any kernel.
type SysctlAllowlist struct {
	names, prefixes map[string]sysctl.Namespace
}

// NewSysctlAllowlist builds the allowlist of patterns (safe sysctls and allowed unsafe ones). A
// pattern whose sysctl is not known to be namespaced is an error, as it is for the kubelet (it
// would change the node for every pod).
func NewSysctlAllowlist(patterns []string) (*SysctlAllowlist, error) {
	a := &SysctlAllowlist{names: map[string]sysctl.Namespace{}, prefixes: map[string]sysctl.Namespace{}}
	var unknown []string
	for _, p := range patterns {
		ns, name, prefixed := sysctl.GetNamespace(p)
		if ns == sysctl.UnknownNamespace {
			unknown = append(unknown, p)
			continue
		}
		if prefixed {
			a.prefixes[name] = ns
		} else {
			a.names[name] = ns
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("sysctls %s are not known to be namespaced: a pod setting one would change the node", strings.Join(unknown, ", "))
	}
	return a, nil
}

// defaultSysctls is the allowlist of a nil *SysctlAllowlist: the safe sysctls of any kernel.
var defaultSysctls = sync.OnceValue(func() *SysctlAllowlist {
	a, _ := NewSysctlAllowlist(SafeSysctls(1<<30, 0)) // safe sysctls are all namespaced
	return a
})

// AdmitSysctls decides a pod's sysctls as the kubelet's allowlist admits them; on refusal it
// returns reason SysctlForbidden and the kubelet's message. Pure.
func (a *SysctlAllowlist) AdmitSysctls(pod *corev1.Pod) (ok bool, reason, message string) {
	sc := pod.Spec.SecurityContext
	if sc == nil || len(sc.Sysctls) == 0 {
		return true, "", ""
	}
	if a == nil {
		a = defaultSysctls()
	}
	hostUsers := pod.Spec.HostUsers == nil || *pod.Spec.HostUsers
	for _, s := range sc.Sysctls {
		if err := a.check(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC, hostUsers); err != nil {
			return false, ReasonSysctlForbidden, "forbidden sysctl: " + err.Error()
		}
	}
	return true, "", ""
}

func (a *SysctlAllowlist) check(name string, hostNet, hostIPC, hostUsers bool) error {
	name = sysctl.NormalizeName(name)
	ns, found := a.names[name]
	if !found {
		for p, pns := range a.prefixes {
			if strings.HasPrefix(name, p) {
				ns, found = pns, true
				break
			}
		}
	}
	if !found {
		return fmt.Errorf("%q not allowlisted", name)
	}
	if (ns == sysctl.IPCNamespace && hostIPC) || (ns == sysctl.NetNamespace && hostNet) || (ns == sysctl.UserNamespace && hostUsers) {
		return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
	}
	return nil
}
