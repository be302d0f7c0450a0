package runtime

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// defaultSpecWith is containerd's default spec (as podkeeper's containers start) with opts on top.
func defaultSpecWith(t *testing.T, opts ...oci.SpecOpts) *oci.Spec {
	t.Helper()
	ctx := namespaces.WithNamespace(context.Background(), "test")
	s := &oci.Spec{}
	for _, o := range append([]oci.SpecOpts{oci.WithDefaultSpec()}, opts...) {
		if err := o(ctx, nil, &containers.Container{ID: "c"}, s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestCRIMountOpts(t *testing.T) {
	vfs := func() string { return "rw,nsdelegate,memory_recursiveprot" }
	cases := []struct {
		name                 string
		unified, privileged  bool
		wantCgroupOpts       []string
		wantCgroupNS         bool
		wantWritableCgroupfs bool
	}{
		{name: "v1", wantCgroupOpts: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}},
		{name: "v1 privileged", privileged: true, wantCgroupOpts: []string{"nosuid", "noexec", "nodev", "relatime", "rw"}, wantWritableCgroupfs: true},
		{name: "v2: own cgroup namespace", unified: true, wantCgroupOpts: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}, wantCgroupNS: true},
		{name: "v2 privileged: the host's namespace, its superblock options kept", unified: true, privileged: true,
			wantCgroupOpts: []string{"nosuid", "noexec", "nodev", "relatime", "rw", "nsdelegate", "memory_recursiveprot"}, wantWritableCgroupfs: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := criMountOpts(c.unified, c.privileged, vfs)
			if c.privileged { // security.go applies it after these, as the CRI does
				opts = append(opts, oci.WithPrivileged)
			}
			s := defaultSpecWith(t, opts...)
			var dests []string
			var cg *specs.Mount
			for i, m := range s.Mounts {
				dests = append(dests, m.Destination)
				if m.Destination == "/sys/fs/cgroup" {
					cg = &s.Mounts[i]
				}
			}
			if slices.Contains(dests, "/run") {
				t.Errorf("/run still mounted: %v", dests)
			}
			if cg == nil || cg.Type != "cgroup" {
				t.Fatalf("no cgroup mount at /sys/fs/cgroup: %+v", s.Mounts)
			}
			if i := slices.Index(dests, "/sys"); i < 0 || dests[i+1] != "/sys/fs/cgroup" {
				t.Errorf("cgroup mount not right after /sys: %v", dests)
			}
			if n := len(dests) - len(slices.Compact(slices.Sorted(slices.Values(dests)))); n != 0 {
				t.Errorf("a destination mounted twice: %v", dests)
			}
			if !reflect.DeepEqual(cg.Options, c.wantCgroupOpts) {
				t.Errorf("cgroup options %v, want %v", cg.Options, c.wantCgroupOpts)
			}
			hasNS := slices.ContainsFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.CgroupNamespace })
			if hasNS != c.wantCgroupNS {
				t.Errorf("cgroup namespace %v, want %v", hasNS, c.wantCgroupNS)
			}
			if s.Process.Rlimits != nil {
				t.Errorf("rlimits set: %+v (the container should inherit containerd's)", s.Process.Rlimits)
			}
		})
	}
}

func TestWithHostnameEnv(t *testing.T) {
	cases := []struct {
		image []string
		want  []string
	}{
		{nil, []string{"HOSTNAME=web"}},
		{[]string{"PATH=/bin"}, []string{"HOSTNAME=web", "PATH=/bin"}},
		{[]string{"PATH=/bin", "HOSTNAME=image"}, []string{"PATH=/bin", "HOSTNAME=image"}}, // the image's wins, as in the CRI
	}
	for _, c := range cases {
		if got := WithHostnameEnv(c.image, "web"); !reflect.DeepEqual(got, c.want) {
			t.Errorf("WithHostnameEnv(%v) = %v, want %v", c.image, got, c.want)
		}
	}
	// The container's own env overrides it.
	got := MergeEnv(WithHostnameEnv([]string{"PATH=/bin"}, "web"), []corev1.EnvVar{{Name: "HOSTNAME", Value: "mine"}})
	if !reflect.DeepEqual(got, []string{"HOSTNAME=mine", "PATH=/bin"}) {
		t.Errorf("container env over HOSTNAME: %v", got)
	}
}

func TestWithMountsInDepthOrder(t *testing.T) {
	s := &oci.Spec{Mounts: []specs.Mount{
		{Destination: "/proc"}, {Destination: "/dev"}, {Destination: "/dev/pts"}, {Destination: "/sys"}, {Destination: "/sys/fs/cgroup"},
		{Destination: "/data/sub"}, {Destination: "/data"}, {Destination: "/etc/hosts"}, {Destination: "/dev/shm", Source: "a"},
		{Destination: "/dev/shm", Source: "b"}, {Destination: "/data/sub/deeper/"},
	}}
	if err := withMountsInDepthOrder(context.Background(), nil, nil, s); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range s.Mounts {
		got = append(got, m.Destination+m.Source)
	}
	want := []string{"/proc", "/dev", "/sys", "/data", "/dev/pts", "/data/sub", "/etc/hosts", "/dev/shma", "/dev/shmb", "/sys/fs/cgroup", "/data/sub/deeper/"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order %v\nwant  %v", got, want)
	}
}
