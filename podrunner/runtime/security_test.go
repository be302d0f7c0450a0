package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkeeper/podkeeper/podrunner"
)

func ptr[T any](v T) *T { return &v }

// bareSpec applies opts to containerd's default spec with no daemon and no image. The rootfs is a
// temp dir holding /etc/passwd (uid 1000 is in group 1001) and /etc/group (root is also in wheel, 10).
func bareSpec(t *testing.T, opts ...oci.SpecOpts) *oci.Spec {
	t.Helper()
	rootfs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(rootfs, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "etc", "passwd"), []byte("root:x:0:0::/root:/bin/sh\napp:x:1000:1001::/home/app:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "etc", "group"), []byte("root:x:0:\nwheel:x:10:root\napp:x:1001:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := namespaces.WithNamespace(context.Background(), "test")
	all := append([]oci.SpecOpts{oci.WithRootFSPath(rootfs)}, opts...)
	s, err := oci.GenerateSpec(ctx, nil, &containers.Container{ID: "bare"}, all...)
	if err != nil {
		t.Fatalf("generate spec: %v", err)
	}
	return s
}

func secPod(psc *corev1.PodSecurityContext, csc *corev1.SecurityContext) (*corev1.Pod, *corev1.Container) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u"},
		Spec: corev1.PodSpec{SecurityContext: psc, Containers: []corev1.Container{{Name: "c", SecurityContext: csc}}}}
	return p, &p.Spec.Containers[0]
}

func specFor(t *testing.T, root string, psc *corev1.PodSecurityContext, csc *corev1.SecurityContext) *oci.Spec {
	t.Helper()
	pod, c := secPod(psc, csc)
	opts, err := securityOpts(root, pod, c, "")
	if err != nil {
		t.Fatalf("securityOpts: %v", err)
	}
	return bareSpec(t, opts...)
}

func TestSecurityUsersAndGroups(t *testing.T) {
	s := specFor(t, "", &corev1.PodSecurityContext{RunAsUser: ptr(int64(5)), RunAsGroup: ptr(int64(6)), FSGroup: ptr(int64(2000)), SupplementalGroups: []int64{3000, 2000}},
		&corev1.SecurityContext{RunAsUser: ptr(int64(7))})
	if u := s.Process.User; u.UID != 7 || u.GID != 6 {
		t.Errorf("user %d:%d, want 7:6 (container runAsUser wins, pod runAsGroup applies)", u.UID, u.GID)
	}
	if g := s.Process.User.AdditionalGids; !slices.Contains(g, 2000) || !slices.Contains(g, 3000) || len(slices.Compact(slices.Sorted(slices.Values(g)))) != len(g) {
		t.Errorf("additional gids %v, want fsGroup 2000 and 3000 once each", g)
	}
	s = specFor(t, "", nil, &corev1.SecurityContext{RunAsUser: ptr(int64(1000))})
	if u := s.Process.User; u.UID != 1000 || u.GID != 1001 {
		t.Errorf("runAsUser only: %d:%d, want 1000:1001 from the image's /etc/passwd", u.UID, u.GID)
	}
}

// runAsGroup alone: the image's user keeps its supplementary groups, its primary group is the
// runAsGroup one (the image's GID 0 is gone), as with the CRI.
func TestSecurityRunAsGroupOnly(t *testing.T) {
	pod, c := secPod(nil, &corev1.SecurityContext{RunAsGroup: ptr(int64(2000))})
	opts, err := securityOpts("", pod, c, "")
	if err != nil {
		t.Fatal(err)
	}
	// What WithImageConfig leaves for an image without USER: root, its groups.
	s := bareSpec(t, append([]oci.SpecOpts{oci.WithUserID(0), oci.WithAdditionalGIDs("0")}, opts...)...)
	got := slices.Sorted(slices.Values(s.Process.User.AdditionalGids))
	if u := s.Process.User; u.UID != 0 || u.GID != 2000 || !slices.Equal(got, []uint32{10, 2000}) {
		t.Errorf("user %d:%d groups %v, want 0:2000 groups [10 2000]", u.UID, u.GID, got)
	}
}

func TestSecurityRunAsNonRoot(t *testing.T) {
	for _, tc := range []struct {
		name      string
		psc       *corev1.PodSecurityContext
		csc       *corev1.SecurityContext
		imageUser string
		wantErr   string
	}{
		{"image root", nil, &corev1.SecurityContext{RunAsNonRoot: ptr(true)}, "", "container has runAsNonRoot and image will run as root"},
		{"image uid 0", nil, &corev1.SecurityContext{RunAsNonRoot: ptr(true)}, "0:0", "image will run as root"},
		{"image named user", nil, &corev1.SecurityContext{RunAsNonRoot: ptr(true)}, "nobody", "non-numeric user (nobody)"},
		{"image numeric non-root", nil, &corev1.SecurityContext{RunAsNonRoot: ptr(true)}, "65534", ""},
		{"pod policy, container uid", &corev1.PodSecurityContext{RunAsNonRoot: ptr(true)}, &corev1.SecurityContext{RunAsUser: ptr(int64(1))}, "", ""},
		{"runAsUser 0", &corev1.PodSecurityContext{RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(0))}, nil, "", "runAsUser breaks non-root policy"},
		{"not asked", nil, nil, "", ""},
	} {
		pod, c := secPod(tc.psc, tc.csc)
		_, err := securityOpts("", pod, c, tc.imageUser)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestSecurityCapabilities(t *testing.T) {
	def := bareSpec(t).Process.Capabilities.Bounding
	if !slices.Contains(def, "CAP_NET_RAW") || slices.Contains(def, "CAP_SYS_ADMIN") {
		t.Fatalf("unexpected default set %v", def)
	}
	s := specFor(t, "", nil, &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"net_raw"}}})
	for _, set := range [][]string{s.Process.Capabilities.Bounding, s.Process.Capabilities.Effective, s.Process.Capabilities.Permitted} {
		if !slices.Contains(set, "CAP_NET_ADMIN") || slices.Contains(set, "CAP_NET_RAW") || !slices.Contains(set, "CAP_CHOWN") {
			t.Errorf("add NET_ADMIN drop NET_RAW: %v", set)
		}
	}
	s = specFor(t, "", nil, &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"CHOWN"}}})
	if got := s.Process.Capabilities.Bounding; !slices.Equal(got, []string{"CAP_CHOWN"}) {
		t.Errorf("drop ALL add CHOWN: %v", got)
	}
	s = specFor(t, "", nil, &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"ALL"}}})
	if got := s.Process.Capabilities.Bounding; !slices.Contains(got, "CAP_SYS_ADMIN") {
		t.Errorf("add ALL: %v", got)
	}
	s = specFor(t, "", nil, &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"ALL", "KILL"}, Drop: []corev1.Capability{"CHOWN", "KILL"}}})
	if got := s.Process.Capabilities.Bounding; !slices.Contains(got, "CAP_SYS_ADMIN") || slices.Contains(got, "CAP_CHOWN") || slices.Contains(got, "CAP_KILL") {
		t.Errorf("add ALL drop CHOWN, KILL both added and dropped: %v", got)
	}
}

func TestSecurityPrivilegedReadOnlyNoNewPrivs(t *testing.T) {
	s := specFor(t, "", nil, &corev1.SecurityContext{Privileged: ptr(true), AllowPrivilegeEscalation: ptr(false)})
	if !slices.Contains(s.Process.Capabilities.Bounding, "CAP_SYS_ADMIN") || len(s.Linux.MaskedPaths) != 0 || s.Linux.Seccomp != nil || s.Process.NoNewPrivileges {
		t.Errorf("privileged: caps %v masked %v seccomp %v nnp %v", s.Process.Capabilities.Bounding, s.Linux.MaskedPaths, s.Linux.Seccomp, s.Process.NoNewPrivileges)
	}
	if len(s.Linux.Resources.Devices) == 0 || !s.Linux.Resources.Devices[len(s.Linux.Resources.Devices)-1].Allow {
		t.Errorf("privileged: all devices should be allowed: %+v", s.Linux.Resources.Devices)
	}
	s = specFor(t, "", nil, &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr(true), AllowPrivilegeEscalation: ptr(false)})
	if !s.Root.Readonly || !s.Process.NoNewPrivileges {
		t.Errorf("readOnlyRootFilesystem %v noNewPrivileges %v, want both", s.Root.Readonly, s.Process.NoNewPrivileges)
	}
	s = specFor(t, "", nil, nil)
	if s.Root.Readonly || s.Process.NoNewPrivileges || len(s.Linux.MaskedPaths) == 0 {
		t.Errorf("defaults: readonly %v nnp %v masked %v", s.Root.Readonly, s.Process.NoNewPrivileges, s.Linux.MaskedPaths)
	}
}

func TestSecuritySeccomp(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "seccomp", "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "seccomp", "profiles", "deny.json"), []byte(`{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := specFor(t, root, &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}, nil)
	if s.Linux.Seccomp == nil || s.Linux.Seccomp.DefaultAction != "SCMP_ACT_ERRNO" || len(s.Linux.Seccomp.Syscalls) < 10 {
		t.Errorf("RuntimeDefault: %+v", s.Linux.Seccomp)
	}
	s = specFor(t, root, &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		&corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}})
	if s.Linux.Seccomp != nil {
		t.Errorf("container Unconfined must win: %+v", s.Linux.Seccomp)
	}
	s = specFor(t, root, nil, &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("profiles/deny.json")}})
	if s.Linux.Seccomp == nil || len(s.Linux.Seccomp.Syscalls) != 1 || s.Linux.Seccomp.Syscalls[0].Names[0] != "read" {
		t.Errorf("Localhost: %+v", s.Linux.Seccomp)
	}
	pod, c := secPod(nil, &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("../../etc/missing.json")}})
	_, err := securityOpts(root, pod, c, "")
	if err == nil || !strings.Contains(err.Error(), filepath.Join(root, "seccomp", "etc", "missing.json")) {
		t.Errorf("Localhost outside the seccomp dir must stay inside it and fail clearly: %v", err)
	}
	// As containerd's CRI fails CreateContainer for it (the kubelet's CreateContainerError).
	var ce *podrunner.CreateError
	if !errors.As(err, &ce) || !strings.HasPrefix(ce.Error(), `failed to create containerd container: cannot load seccomp profile "`) {
		t.Errorf("a missing Localhost profile: %v, want a CreateError with the CRI's message", err)
	}
}

func TestSecuritySysctls(t *testing.T) {
	s := specFor(t, "", &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}, {Name: "kernel.shm_rmid_forced", Value: "1"}}}, nil)
	if s.Linux.Sysctl["net.ipv4.ip_unprivileged_port_start"] != "0" || s.Linux.Sysctl["kernel.shm_rmid_forced"] != "1" {
		t.Errorf("sysctls %v", s.Linux.Sysctl)
	}
	for _, tc := range []struct {
		name string
		host bool
	}{{"vm.swappiness", false}, {"kernel.hostname", false}, {"net.ipv4.ip_forward", true}} {
		pod, c := secPod(&corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: tc.name, Value: "1"}}}, nil)
		pod.Spec.HostNetwork = tc.host
		if _, err := securityOpts("", pod, c, ""); err == nil {
			t.Errorf("sysctl %s (hostNetwork %v) must be refused", tc.name, tc.host)
		}
	}
}

// SELinux levels as containerd's CRI checks them whether or not the host has SELinux
// (make conformance's edge-selinux-level-odd), from the container's options or else the pod's.
func TestSELinuxLevel(t *testing.T) {
	for _, tc := range []struct {
		level string
		ok    bool
	}{
		{"", true}, {"s0", true}, {"s0-s0", true}, {"s0:c1", true}, {"s0:c1.c2", true}, {"s0:c1,c2.c1023", true},
		{"not a level!", false}, {"s", false}, {"S0", false}, {"s0:c12345", false}, {"s0-s15", false},
	} {
		err := checkSELinuxLevel(&corev1.SELinuxOptions{Level: tc.level})
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v, want ok %v", tc.level, err, tc.ok)
		}
		if err != nil && err.Error() != fmt.Sprintf("the format of 'level' %q is not correct", tc.level) {
			t.Errorf("%q: message %q", tc.level, err)
		}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c1", User: "u"}}}}
	if got := *mergeSecurity(pod, &corev1.Container{}).SELinux; got.Level != "s0:c1" || got.User != "u" {
		t.Errorf("the pod's options: %+v", got)
	}
	c := &corev1.Container{SecurityContext: &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "t"}}}
	if got := *mergeSecurity(pod, c).SELinux; got != (corev1.SELinuxOptions{Type: "t"}) {
		t.Errorf("the container's options replace the pod's whole: %+v", got)
	}
}
