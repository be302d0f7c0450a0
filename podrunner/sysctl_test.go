package podrunner

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestSafeSysctlsByKernel(t *testing.T) {
	if got := SafeSysctls(3, 10); len(got) != 5 || got[0] != "kernel.shm_rmid_forced" {
		t.Errorf("kernel 3.10: %v, want the 5 safe on any kernel", got)
	}
	if got := SafeSysctls(4, 6); !slices.Contains(got, "net.ipv4.tcp_fin_timeout") || slices.Contains(got, "net.ipv4.tcp_rmem") {
		t.Errorf("kernel 4.6: %v", got)
	}
	if got := SafeSysctls(6, 1); len(got) != len(safeSysctls) {
		t.Errorf("kernel 6.1: %d safe sysctls, want all %d", len(got), len(safeSysctls))
	}
}

// The kubelet's sysctl admission, with its messages.
func TestAdmitSysctls(t *testing.T) {
	withUnsafe, err := NewSysctlAllowlist(append(SafeSysctls(6, 1), "kernel.msg*", "net.core.somaxconn"))
	if err != nil {
		t.Fatal(err)
	}
	pod := func(hostNet, hostIPC bool, names ...string) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: hostNet, HostIPC: hostIPC, SecurityContext: &corev1.PodSecurityContext{}}}
		for _, n := range names {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: n, Value: "1"})
		}
		return p
	}
	tests := []struct {
		name  string
		allow *SysctlAllowlist
		pod   *corev1.Pod
		msg   string // "": admitted
	}{
		{"no sysctls", nil, pod(false, false), ""},
		{"a safe one, default list", nil, pod(false, false, "net.ipv4.ip_unprivileged_port_start"), ""},
		{"slashes are dots", nil, pod(false, false, "net/ipv4/ping_group_range"), ""},
		{"unsafe, not allowed", nil, pod(false, false, "kernel.msgmax"), `forbidden sysctl: "kernel.msgmax" not allowlisted`},
		{"unsafe, allowed by a pattern", withUnsafe, pod(false, false, "kernel.msgmax", "net.core.somaxconn"), ""},
		{"a name allowed, not its neighbour", withUnsafe, pod(false, false, "net.core.rmem_max"), `forbidden sysctl: "net.core.rmem_max" not allowlisted`},
		{"net with hostNetwork", nil, pod(true, false, "net.ipv4.tcp_syncookies"), `forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host Net enabled`},
		{"IPC with hostIPC", withUnsafe, pod(false, true, "kernel.msgmax"), `forbidden sysctl: "kernel.msgmax" not allowed with host IPC enabled`},
	}
	for _, tc := range tests {
		ok, reason, msg := tc.allow.AdmitSysctls(tc.pod)
		if tc.msg == "" {
			if !ok {
				t.Errorf("%s: rejected: %s %s", tc.name, reason, msg)
			}
			continue
		}
		if ok || reason != ReasonSysctlForbidden || msg != tc.msg {
			t.Errorf("%s: %v %q %q, want rejected SysctlForbidden %q", tc.name, ok, reason, msg, tc.msg)
		}
	}
	if _, err := NewSysctlAllowlist([]string{"vm.swappiness"}); err == nil || !strings.Contains(err.Error(), "vm.swappiness") {
		t.Errorf("a sysctl that is not namespaced allowed: %v", err)
	}
}
