package runtime

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mapLookup is a ConfigLookup over fixed objects (namespace/name keys).
type mapLookup struct {
	cms     map[string]*corev1.ConfigMap
	secrets map[string]*corev1.Secret
}

func (m mapLookup) ConfigMap(ns, name string) (*corev1.ConfigMap, bool) {
	c, ok := m.cms[ns+"/"+name]
	return c, ok
}

func (m mapLookup) Secret(ns, name string) (*corev1.Secret, bool) {
	s, ok := m.secrets[ns+"/"+name]
	return s, ok
}

func volPod(vols ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid1",
			Labels: map[string]string{"app": "web", "tier": "front"}, Annotations: map[string]string{"note": `say "hi"`}},
		Spec: corev1.PodSpec{NodeName: "node1", Volumes: vols, Containers: []corev1.Container{{Name: "main",
			Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
			}}}},
		Status: corev1.PodStatus{HostIP: "192.168.1.5"},
	}
}

func TestVolumePayload(t *testing.T) {
	lookup := mapLookup{
		cms:     map[string]*corev1.ConfigMap{"default/cfg": {Data: map[string]string{"a.conf": "A", "b.conf": "B"}, BinaryData: map[string][]byte{"bin": {0, 1}}}},
		secrets: map[string]*corev1.Secret{"default/tls": {Data: map[string][]byte{"key": []byte("k"), "crt": []byte("c")}}},
	}
	mode := int32(0o400)
	yes := true
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	for _, tc := range []struct {
		name    string
		vol     corev1.Volume
		want    map[string]string // path -> data
		modes   map[string]os.FileMode
		wantErr string
	}{
		{name: "configMap all keys, binaryData too", vol: corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
			want: map[string]string{"a.conf": "A", "b.conf": "B", "bin": "\x00\x01"}, modes: map[string]os.FileMode{"a.conf": 0o644}},
		{name: "configMap items with path and mode", vol: corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"},
			Items: []corev1.KeyToPath{{Key: "a.conf", Path: "sub/a", Mode: &mode}}}}},
			want: map[string]string{"sub/a": "A"}, modes: map[string]os.FileMode{"sub/a": 0o400}},
		{name: "configMap missing", vol: corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}}}},
			wantErr: `configmap "nope" not found`},
		{name: "configMap missing but optional", vol: corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Optional: &yes}}},
			want: map[string]string{}},
		{name: "configMap missing key", vol: corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"},
			Items: []corev1.KeyToPath{{Key: "zz", Path: "zz"}}}}}, wantErr: `has no key "zz"`},
		{name: "secret defaultMode", vol: corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls", DefaultMode: &mode}}},
			want: map[string]string{"key": "k", "crt": "c"}, modes: map[string]os.FileMode{"key": 0o400}},
		{name: "item path escaping", vol: corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls", Items: []corev1.KeyToPath{{Key: "key", Path: "../x"}}}}},
			wantErr: "invalid path"},
		{name: "downwardAPI", vol: corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "ann", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['note']"}},
			{Path: "mem", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
			{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.cpu"}},
		}}}},
			want: map[string]string{"labels": "app=\"web\"\ntier=\"front\"", "ann": `say "hi"`, "mem": "64", "cpu": "2"}},
		{name: "projected", vol: corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: []corev1.KeyToPath{{Key: "a.conf", Path: "a"}}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "tls"}, Items: []corev1.KeyToPath{{Key: "key", Path: "k"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
		}}}},
			want: map[string]string{"a": "A", "k": "k", "name": "web"}},
		{name: "projected serviceAccountToken is refused", vol: corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}, wantErr: "needs an API server"},
		{name: "projected podCertificate is refused (was silently empty)", vol: corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/x"}}}}}}, wantErr: "needs an API server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := volumePayload(volPod(tc.vol), &tc.vol, lookup, alloc)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != len(tc.want) {
				t.Errorf("files %v, want %v", files, tc.want)
			}
			for p, d := range tc.want {
				if string(files[p].Data) != d {
					t.Errorf("%s = %q, want %q", p, files[p].Data, d)
				}
			}
			for p, m := range tc.modes {
				if files[p].Mode != m {
					t.Errorf("%s mode %o, want %o", p, files[p].Mode, m)
				}
			}
		})
	}
}

func TestFieldAndResourceRefs(t *testing.T) {
	pod := volPod()
	pod.UID = "u-1"
	for path, want := range map[string]string{
		"metadata.name": "web", "metadata.namespace": "default", "metadata.uid": "u-1", "spec.nodeName": "node1",
		"metadata.labels['app']": "web", `metadata.labels["tier"]`: "front", "metadata.labels['none']": "",
		"status.hostIP": "192.168.1.5", "status.podIP": "",
	} {
		if got, err := FieldRefValue(pod, path); err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := FieldRefValue(pod, "spec.bogus"); err == nil {
		t.Error("unknown fieldPath must fail")
	}
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	for _, tc := range []struct {
		res, div, want string
	}{
		{"limits.memory", "", "67108864"},
		{"limits.memory", "1Mi", "64"},
		{"limits.cpu", "", "4"},      // no limit: node allocatable
		{"limits.cpu", "1m", "4000"}, // in millicores
		{"requests.cpu", "1m", "250"},
		{"requests.cpu", "", "1"}, // 250m rounded up to whole cores
		{"requests.memory", "1Mi", "64"},
	} {
		ref := &corev1.ResourceFieldSelector{ContainerName: "main", Resource: tc.res}
		if tc.div != "" {
			ref.Divisor = resource.MustParse(tc.div)
		}
		if got, err := ResourceFieldValue(pod, ref, alloc); err != nil || got != tc.want {
			t.Errorf("%s / %q = %q, %v; want %q", tc.res, tc.div, got, err, tc.want)
		}
	}
	// With pod-level limits, a container without its own limit sees the pod's, not the node's.
	pod.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}}
	if got, err := ResourceFieldValue(pod, &corev1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}, alloc); err != nil || got != "1500" {
		t.Errorf("limits.cpu under a pod-level limit = %q, %v; want 1500", got, err)
	}
	if got, err := ResourceFieldValue(pod, &corev1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}, alloc); err != nil || got != "64" {
		t.Errorf("limits.memory (the container's own) = %q, %v; want 64", got, err)
	}
}

func TestWriteAtomicSwapsDataLink(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	changed, err := writeAtomic(dir, map[string]volumeFile{"a": {Data: []byte("1"), Mode: 0o644}, "d/b": {Data: []byte("2"), Mode: 0o600}}, -1)
	if err != nil || !changed {
		t.Fatalf("first write: %v %v", changed, err)
	}
	first, _ := os.Readlink(filepath.Join(dir, "..data"))
	if b, _ := os.ReadFile(filepath.Join(dir, "d", "b")); string(b) != "2" {
		t.Errorf("d/b = %q", b)
	}
	if l, _ := os.Readlink(filepath.Join(dir, "a")); l != "..data/a" {
		t.Errorf("a links to %q, want ..data/a", l)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "d", "b")); fi.Mode().Perm() != 0o600 {
		t.Errorf("d/b mode %o", fi.Mode().Perm())
	}
	if changed, err := writeAtomic(dir, map[string]volumeFile{"a": {Data: []byte("1"), Mode: 0o644}, "d/b": {Data: []byte("2"), Mode: 0o600}}, -1); err != nil || changed {
		t.Errorf("same content must not rewrite: %v %v", changed, err)
	}
	if changed, err := writeAtomic(dir, map[string]volumeFile{"a": {Data: []byte("new"), Mode: 0o644}}, -1); err != nil || !changed {
		t.Fatalf("update: %v %v", changed, err)
	}
	second, _ := os.Readlink(filepath.Join(dir, "..data"))
	if second == first {
		t.Error("..data must point to a new dir")
	}
	if _, err := os.Stat(filepath.Join(dir, first)); !os.IsNotExist(err) {
		t.Errorf("old data dir %s left behind", first)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a")); string(b) != "new" {
		t.Errorf("a = %q after update", b)
	}
	if _, err := os.Lstat(filepath.Join(dir, "d")); !os.IsNotExist(err) {
		t.Error("entry d no longer in the payload must go")
	}
}

func TestSubPathAndHostPathChecks(t *testing.T) {
	src := t.TempDir()
	file := filepath.Join(src, "f")
	_ = os.WriteFile(file, []byte("x"), 0o644)
	typ := func(t corev1.HostPathType) *corev1.HostPathType { return &t }
	for _, tc := range []struct {
		path string
		typ  corev1.HostPathType
		ok   bool
	}{
		{src, corev1.HostPathDirectory, true}, {file, corev1.HostPathDirectory, false},
		{file, corev1.HostPathFile, true}, {src, corev1.HostPathFile, false},
		{filepath.Join(src, "mk", "d"), corev1.HostPathDirectoryOrCreate, true},
		{filepath.Join(src, "mk2", "f"), corev1.HostPathFileOrCreate, true},
		{file, corev1.HostPathSocket, false}, {"/dev/null", corev1.HostPathCharDev, true},
		{file, corev1.HostPathCharDev, false}, {"/dev/null", corev1.HostPathBlockDev, false},
	} {
		if err := prepareHostPath(tc.path, typ(tc.typ)); (err == nil) != tc.ok {
			t.Errorf("hostPath %s type %s: err %v, want ok=%v", tc.path, tc.typ, err, tc.ok)
		}
	}
}

func TestTerminationMessageFromFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "msg")
	long := strings.Repeat("a", 5000) + "END"
	if err := os.WriteFile(f, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	got := terminationMessage(map[string]string{LabelTermMsgFile: f}, 1)
	if len(got) != 4096 || !strings.HasSuffix(got, "END") {
		t.Errorf("message of %d bytes ending %q; want the file's last 4096 bytes, as the kubelet reads them", len(got), got[len(got)-3:])
	}
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(empty, nil, 0o644)
	if got := terminationMessage(map[string]string{LabelTermMsgFile: empty, LabelTermMsgPolicy: "FallbackToLogsOnError", LabelLogPath: filepath.Join(dir, "none.log")}, 1); got != "" {
		t.Errorf("no file, no log: %q", got)
	}
}

// A subPath is resolved inside its volume and bind-mounted onto podkeeper's own path: a missing
// one is created, a symlink inside the volume is followed, one that leads out (a container could
// have left it there, CVE-2017-1002101) or "..", an absolute path, is refused; a file subPath is
// mounted as that file; a symlink swapped in after the mount changes nothing.
func TestSubPathMountStaysInsideTheVolume(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (bind mounts)")
	}
	root := t.TempDir()
	vol := filepath.Join(root, "vol")
	outside := filepath.Join(root, "secret")
	for _, d := range []string{vol, outside, filepath.Join(vol, "real")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.WriteFile(filepath.Join(outside, "key"), []byte("host secret"), 0o600)
	_ = os.WriteFile(filepath.Join(vol, "real", "conf"), []byte("in volume"), 0o644)
	_ = os.Symlink("/", filepath.Join(vol, "escape"))
	_ = os.Symlink("../secret", filepath.Join(vol, "up"))
	_ = os.Symlink("real", filepath.Join(vol, "inside"))
	n := 0
	mount := func(sub string) (string, error) {
		n++
		target := filepath.Join(root, "subpaths", strconv.Itoa(n))
		got, err := subPathMount(vol, sub, target)
		if err == nil {
			t.Cleanup(func() { _ = unix.Unmount(got, unix.MNT_DETACH) })
		}
		return got, err
	}
	for _, bad := range []string{"../secret", "/etc", "a/../../b", "escape", "escape/etc", "up", "up/key", "inside/../../secret"} {
		if got, err := mount(bad); err == nil {
			t.Errorf("subPath %q must be refused, got %s", bad, got)
		}
	}
	got, err := mount("new/dir")
	mounted := func(p string) bool {
		ms, err := readMountinfo()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.point == p {
				return true
			}
		}
		return false
	}
	if fi, serr := os.Stat(filepath.Join(vol, "new", "dir")); err != nil || serr != nil || !fi.IsDir() || !mounted(got) {
		t.Errorf("missing subPath must be created as a dir and mounted: %v %v", err, serr)
	}
	// The directories made get the volume root's mode (the kubelet's), past the umask.
	for _, d := range []string{"new", "new/dir"} {
		if fi, err := os.Stat(filepath.Join(vol, d)); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: mode %v (%v), want the volume's 0755", d, fi.Mode(), err)
		}
	}
	if err := os.Chmod(vol, 0o777|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	if _, err := mount("open/to/all"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(vol, "open", "to")); err != nil || fi.Mode()&(os.ModePerm|os.ModeSetgid) != 0o777|os.ModeSetgid {
		t.Errorf("open/to: mode %v (%v), want the volume's 2777", fi.Mode(), err)
	}
	got, err = mount("inside/conf") // through a symlink that stays in the volume, to a file
	if b, rerr := os.ReadFile(got); err != nil || rerr != nil || string(b) != "in volume" {
		t.Errorf("file subPath through an inside symlink: %v %v %q", err, rerr, b)
	}
	got, err = mount("real")
	if err != nil {
		t.Fatal(err)
	}
	// Mounting the same target again (a container restarted) replaces the mount, never stacks.
	if again, err := subPathMount(vol, "real", got); err != nil || again != got {
		t.Fatalf("remount: %v", err)
	}
	stacked := 0
	if ms, err := readMountinfo(); err == nil {
		for _, m := range ms {
			if m.point == got {
				stacked++
			}
		}
	}
	if stacked != 1 {
		t.Errorf("%d mounts at %s after a remount, want 1", stacked, got)
	}
	// Swap the directory for a symlink out of the volume: the mount still shows the original.
	if err := os.Rename(filepath.Join(vol, "real"), filepath.Join(vol, "moved")); err != nil {
		t.Fatal(err)
	}
	_ = os.Symlink(outside, filepath.Join(vol, "real"))
	if _, err := os.Stat(filepath.Join(got, "key")); err == nil {
		t.Error("the mount followed a symlink swapped in after it was made")
	}
	if b, err := os.ReadFile(filepath.Join(got, "conf")); err != nil || string(b) != "in volume" {
		t.Errorf("the mount lost the checked directory: %v %q", err, b)
	}
}

func TestExpandSubPathExpr(t *testing.T) {
	vars := map[string]string{"POD": "web-1", "NS": "prod", "EMPTY": ""}
	for _, tc := range []struct{ expr, want, err string }{
		{"$(NS)/$(POD)", "prod/web-1", ""},
		{"logs/$(POD)", "logs/web-1", ""},
		{"$$(POD)", "$(POD)", ""},
		{"$(NOPE)/$(EMPTY)", "", "missing value for EMPTY, NOPE"},
	} {
		got, err := expandSubPathExpr(tc.expr, vars)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("%q: got %q %v, want %q %q", tc.expr, got, err, tc.want, tc.err)
		}
	}
}

func TestMemoryEmptyDirSize(t *testing.T) {
	mi := func(n int64) int64 { return n << 20 }
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	withLimit := func(limit string) *corev1.Pod {
		c := corev1.Container{Name: "c"}
		if limit != "" {
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit)}
		}
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
	}
	cases := []struct {
		name      string
		pod       *corev1.Pod
		sizeLimit *resource.Quantity
		alloc     int64
		want      int64
	}{
		{"nothing known: the kernel's default", withLimit(""), nil, 0, 0},
		{"node allocatable", withLimit(""), nil, mi(4096), mi(4096)},
		{"the pod's limit under it", withLimit("64Mi"), nil, mi(4096), mi(64)},
		{"a smaller sizeLimit", withLimit("64Mi"), q("16Mi"), mi(4096), mi(16)},
		{"a sizeLimit above the pod's limit is cut to it", withLimit("64Mi"), q("1Gi"), mi(4096), mi(64)},
		{"a sizeLimit without other bounds", withLimit(""), q("8Mi"), 0, mi(8)},
		{"a zero sizeLimit counts as none", withLimit(""), q("0"), mi(100), mi(100)},
	}
	for _, c := range cases {
		if got := MemoryEmptyDirSize(c.pod, c.sizeLimit, c.alloc); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

func TestVolumeRootMode(t *testing.T) {
	cases := []struct {
		tmpfs bool
		gid   int
		want  os.FileMode
	}{
		{false, -1, 0o777},
		{true, -1, 0o777 | os.ModeSticky},
		{false, 4000, 0o777 | os.ModeSetgid},
		{true, 4000, 0o777 | os.ModeSticky | os.ModeSetgid},
	}
	for _, c := range cases {
		if got := volumeRootMode(c.tmpfs, c.gid); got != c.want {
			t.Errorf("volumeRootMode(%v, %d) = %v, want %v", c.tmpfs, c.gid, got, c.want)
		}
	}
}
