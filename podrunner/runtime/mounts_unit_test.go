package runtime

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestBindOptions(t *testing.T) {
	prop := func(m corev1.MountPropagationMode) *corev1.MountPropagationMode { return &m }
	cases := []struct {
		name         string
		vm           corev1.VolumeMount
		readOnly     bool
		rro          bool
		want         []string
		wantPropagat string
	}{
		{"default: private, writable", corev1.VolumeMount{}, false, false, []string{"rbind", "rprivate", "rw"}, ""},
		{"None is private", corev1.VolumeMount{MountPropagation: prop(corev1.MountPropagationNone)}, false, false, []string{"rbind", "rprivate", "rw"}, ""},
		{"read-only", corev1.VolumeMount{}, true, false, []string{"rbind", "rprivate", "ro"}, ""},
		{"recursively read-only", corev1.VolumeMount{}, true, true, []string{"rbind", "rprivate", "ro", "rro"}, ""},
		{"rro never on a writable mount", corev1.VolumeMount{}, false, true, []string{"rbind", "rprivate", "rw"}, ""},
		{"HostToContainer: rslave", corev1.VolumeMount{MountPropagation: prop(corev1.MountPropagationHostToContainer)}, false, false, []string{"rbind", "rslave", "rw"}, "rslave"},
		{"Bidirectional: rshared", corev1.VolumeMount{MountPropagation: prop(corev1.MountPropagationBidirectional)}, false, false, []string{"rbind", "rshared", "rw"}, "rshared"},
		{"HostToContainer read-only", corev1.VolumeMount{MountPropagation: prop(corev1.MountPropagationHostToContainer)}, true, false, []string{"rbind", "rslave", "ro"}, "rslave"},
		{"bindMountOptions", corev1.VolumeMount{BindMountOptions: []string{"noexec", "nosuid"}}, false, false, []string{"rbind", "rprivate", "rw", "noexec", "nosuid"}, ""},
	}
	for _, tc := range cases {
		got, p := bindOptions(tc.vm, tc.readOnly, tc.rro)
		if !reflect.DeepEqual(got, tc.want) || p != tc.wantPropagat {
			t.Errorf("%s: got %q %q, want %q %q", tc.name, got, p, tc.want, tc.wantPropagat)
		}
	}
}

const sampleMountinfo = `26 1 254:0 / / rw,relatime - ext4 /dev/vda rw
30 26 0:40 / /srv/shared rw,relatime shared:12 - tmpfs tmpfs rw
31 30 0:41 / /srv/shared/slave rw,relatime master:12 - tmpfs tmpfs rw
32 26 0:42 / /srv/with\040space rw shared:13 master:7 - tmpfs tmpfs rw
33 26 0:43 / /srv/over rw - tmpfs tmpfs rw
34 26 0:44 / /srv/over rw shared:20 - tmpfs tmpfs rw
`

func TestMountOf(t *testing.T) {
	cases := []struct {
		path, wantMount string
		wantOpt         []string
	}{
		{"/var/lib/x", "/", nil},
		{"/srv/shared", "/srv/shared", []string{"shared:12"}},
		{"/srv/shared/a/b", "/srv/shared", []string{"shared:12"}},
		{"/srv/shared/slave/x", "/srv/shared/slave", []string{"master:12"}},
		{"/srv/sharedish", "/", nil}, // a prefix of the name is not a parent
		{"/srv/with space/d", "/srv/with space", []string{"shared:13", "master:7"}},
		{"/srv/over/d", "/srv/over", []string{"shared:20"}}, // the mount on top wins
	}
	for _, tc := range cases {
		mounts, err := parseMountinfo(strings.NewReader(sampleMountinfo))
		if err != nil {
			t.Fatal(err)
		}
		mp, opt, err := mountOf(mounts, tc.path)
		if err != nil || mp != tc.wantMount || !reflect.DeepEqual(opt, tc.wantOpt) {
			t.Errorf("%s: got %q %q %v, want %q %q", tc.path, mp, opt, err, tc.wantMount, tc.wantOpt)
		}
	}
}

func TestPropagationAllowed(t *testing.T) {
	cases := []struct {
		optional []string
		need     string
		wantErr  string
	}{
		{nil, "rslave", "not a shared or slave mount"},
		{nil, "rshared", "not a shared mount"},
		{[]string{"shared:1"}, "rslave", ""},
		{[]string{"master:1"}, "rslave", ""},
		{[]string{"shared:1"}, "rshared", ""},
		{[]string{"master:1"}, "rshared", "not a shared mount"},
		{[]string{"shared:2", "master:1"}, "rshared", ""},
	}
	for _, tc := range cases {
		err := propagationAllowed("/p", "/m", tc.optional, tc.need)
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%v %s: got %v, want %q", tc.optional, tc.need, err, tc.wantErr)
		}
	}
}

func TestRROSupported(t *testing.T) {
	with := []byte(`{"ociVersionMin":"1.0.0","mountOptions":["bind","rbind","ro","rro"]}`)
	without := []byte(`{"mountOptions":["bind","rbind","ro"]}`)
	cases := []struct {
		features []byte
		kernel   string
		want     bool
	}{
		{with, "6.18.44-fc-v1294", true},
		{with, "5.12.0", true},
		{with, "5.12-rc1", true},
		{with, "5.11.22", false}, // no mount_setattr
		{with, "4.19.0-25-amd64", false},
		{without, "6.1.0", false}, // runc before 1.1
		{[]byte("not json"), "6.1.0", false},
		{with, "weird", false},
	}
	for _, tc := range cases {
		if got := rroSupported(tc.features, tc.kernel); got != tc.want {
			t.Errorf("%s %s: got %v, want %v", tc.features, tc.kernel, got, tc.want)
		}
	}
}

func TestSandboxRefusalRuntimeClass(t *testing.T) {
	empty, gvisor := "", "gvisor"
	if err := sandboxRefusal(&corev1.Pod{Spec: corev1.PodSpec{RuntimeClassName: &empty}}, ""); err != nil {
		t.Errorf("empty runtimeClassName (the default class): %v", err)
	}
	err := sandboxRefusal(&corev1.Pod{Spec: corev1.PodSpec{RuntimeClassName: &gvisor}}, "")
	if err == nil || !strings.Contains(err.Error(), `runtimeclass.node.k8s.io "gvisor" not found`) {
		t.Errorf("runtimeClassName gvisor: %v", err)
	}
}

func TestSandboxRefusal(t *testing.T) {
	b := func(v bool) *bool { return &v }
	for _, tc := range []struct {
		hostUsers *bool
		refused   bool
	}{{nil, false}, {b(true), false}, {b(false), true}} {
		err := sandboxRefusal(&corev1.Pod{Spec: corev1.PodSpec{HostUsers: tc.hostUsers}}, "")
		if (err != nil) != tc.refused || (err != nil && !strings.Contains(err.Error(), "does not support user namespaces")) {
			t.Errorf("hostUsers %v: %v", tc.hostUsers, err)
		}
	}
}

func TestSandboxRefusalFQDN(t *testing.T) {
	yes := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{Hostname: strings.Repeat("h", 40), Subdomain: strings.Repeat("s", 40), SetHostnameAsFQDN: &yes}}
	err := sandboxRefusal(pod, "cluster.local")
	if err == nil || !strings.Contains(err.Error(), "failed to construct FQDN from pod hostname and cluster domain") {
		t.Errorf("setHostnameAsFQDN past 64 characters: %v, want the sandbox refused", err)
	}
	pod.Spec.Hostname, pod.Spec.Subdomain = "h", "s"
	if err := sandboxRefusal(pod, "cluster.local"); err != nil {
		t.Errorf("a short FQDN: %v", err)
	}
}

// A pod-level SELinux level containerd's CRI refuses fails the sandbox, in the CRI's words
// (edge-selinux-level-odd-pod); a good one does not.
func TestSandboxRefusalSELinuxLevel(t *testing.T) {
	pod := func(level string) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "t", Level: level}}}}
	}
	if err := sandboxRefusal(pod("s0:c1,c2"), ""); err != nil {
		t.Errorf("a good level: %v", err)
	}
	want := `failed to generate sandbox container spec: failed to init selinux options &SELinuxOption{User:,Role:,Type:t,Level:not a level!,}: the format of 'level' "not a level!" is not correct`
	if err := sandboxRefusal(pod("not a level!"), ""); err == nil || err.Error() != want {
		t.Errorf("a bad level: %v\nwant %s", err, want)
	}
}
