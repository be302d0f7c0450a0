package runtime

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podkeeper/podkeeper/cgroup"
	"github.com/podkeeper/podkeeper/podrunner"
)

// Volumes live under <root>/pods/<uid>/volumes/<kind>/<name>:
//
//	empty-dir/   emptyDir (a directory; medium Memory: a tmpfs, sized by sizeLimit; medium
//	             HugePages[-<size>]: hugetlbfs, hugepages.go)
//	configmap/    configMap          ─┐ written by the atomic writer: files in a timestamped
//	secret/       secret (tmpfs)      │ dir, a "..data" symlink to it, and one symlink per
//	downward-api/ downwardAPI (tmpfs) │ top-level entry; an update writes a new dir and swaps
//	projected/    projected (tmpfs)  ─┘ "..data" in one rename, as the kubelet does, so readers
//	                                    never see half an update.
//
// configMap, secret, downwardAPI and projected volumes are mounted read-only, as the kubelet does.
// RemovePodFiles unmounts every tmpfs under the pod dir before deleting it.

const (
	volEmptyDir  = "empty-dir"
	volConfigMap = "configmap"
	volSecret    = "secret"
	volDownward  = "downward-api"
	volProjected = "projected"

	dataDirName = "..data"
	defaultMode = 0o644 // the API's default for configMap, secret, downwardAPI and projected
)

// volumeFile is one file an atomically written volume holds.
type volumeFile struct {
	Data []byte
	Mode os.FileMode
}

// volumeKind says where a volume lives and whether the writer fills it.
func volumeKind(v *corev1.Volume) (kind string, atomic, tmpfs bool, err error) {
	switch {
	case v.EmptyDir != nil:
		return volEmptyDir, false, v.EmptyDir.Medium == corev1.StorageMediumMemory, nil
	case v.ConfigMap != nil:
		return volConfigMap, true, false, nil
	case v.Secret != nil:
		return volSecret, true, true, nil
	case v.DownwardAPI != nil:
		return volDownward, true, true, nil
	case v.Projected != nil:
		return volProjected, true, true, nil
	case v.HostPath != nil:
		return "", false, false, nil
	case v.Image != nil:
		return volImage, false, false, nil
	}
	return "", false, false, fmt.Errorf("volume %q: this volume type is not supported (emptyDir, hostPath, configMap, secret, downwardAPI, projected and image are)", v.Name)
}

func volumeDir(root, uid, kind, name string) string {
	return filepath.Join(podDir(root, uid), "volumes", kind, name)
}

// volumePayload computes the files of a configMap, secret, downwardAPI or projected volume.
// Pure but for the lookup. A missing object (or key) that is not optional is an error
// (CreateContainerConfigError); an optional one gives no files.
func volumePayload(pod *corev1.Pod, v *corev1.Volume, lookup podrunner.ConfigLookup, nodeAlloc corev1.ResourceList) (map[string]volumeFile, error) {
	out := map[string]volumeFile{}
	add := func(files map[string]volumeFile) {
		for k, f := range files {
			out[k] = f
		}
	}
	switch {
	case v.ConfigMap != nil:
		files, err := configMapFiles(pod.Namespace, &v.ConfigMap.LocalObjectReference, v.ConfigMap.Items, v.ConfigMap.Optional, modeOr(v.ConfigMap.DefaultMode, defaultMode), lookup)
		if err != nil {
			return nil, err
		}
		add(files)
	case v.Secret != nil:
		files, err := secretFiles(pod.Namespace, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional, modeOr(v.Secret.DefaultMode, defaultMode), lookup)
		if err != nil {
			return nil, err
		}
		add(files)
	case v.DownwardAPI != nil:
		files, err := downwardFiles(pod, v.DownwardAPI.Items, modeOr(v.DownwardAPI.DefaultMode, defaultMode), nodeAlloc)
		if err != nil {
			return nil, err
		}
		add(files)
	case v.Projected != nil:
		mode := modeOr(v.Projected.DefaultMode, defaultMode)
		for _, src := range v.Projected.Sources {
			var files map[string]volumeFile
			var err error
			switch {
			case src.ConfigMap != nil:
				files, err = configMapFiles(pod.Namespace, &src.ConfigMap.LocalObjectReference, src.ConfigMap.Items, src.ConfigMap.Optional, mode, lookup)
			case src.Secret != nil:
				files, err = secretFiles(pod.Namespace, src.Secret.Name, src.Secret.Items, src.Secret.Optional, mode, lookup)
			case src.DownwardAPI != nil:
				files, err = downwardFiles(pod, src.DownwardAPI.Items, mode, nodeAlloc)
			case src.ServiceAccountToken != nil:
				err = fmt.Errorf("projected serviceAccountToken needs an API server; podkeeper runs without one")
			case src.ClusterTrustBundle != nil:
				err = fmt.Errorf("projected clusterTrustBundle needs an API server; podkeeper runs without one")
			case src.PodCertificate != nil:
				err = fmt.Errorf("projected podCertificate needs an API server; podkeeper runs without one")
			default:
				err = fmt.Errorf("projected volume %q: a source of a kind podkeeper does not know", v.Name)
			}
			if err != nil {
				return nil, err
			}
			add(files)
		}
	}
	for p := range out {
		if err := checkRelPath(p); err != nil {
			return nil, fmt.Errorf("volume %q: %w", v.Name, err)
		}
	}
	return out, nil
}

func modeOr(m *int32, def int32) os.FileMode {
	if m != nil {
		return os.FileMode(*m) & 0o777
	}
	return os.FileMode(def)
}

// checkRelPath refuses paths that are absolute, contain "..", or start with "..".
func checkRelPath(p string) error {
	if p == "" || filepath.IsAbs(p) || strings.HasPrefix(p, "..") {
		return fmt.Errorf("invalid path %q", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fmt.Errorf("invalid path %q: must not contain '..'", p)
		}
	}
	return nil
}

// keyFiles maps keys to files: every key, or just items (each key must exist unless optional).
func keyFiles(kind, name string, data map[string][]byte, items []corev1.KeyToPath, optional bool, mode os.FileMode) (map[string]volumeFile, error) {
	out := map[string]volumeFile{}
	if len(items) == 0 {
		for k, d := range data {
			out[k] = volumeFile{Data: d, Mode: mode}
		}
		return out, nil
	}
	for _, it := range items {
		d, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("configuration error: %s %q has no key %q", kind, name, it.Key)
		}
		m := mode
		if it.Mode != nil {
			m = os.FileMode(*it.Mode) & 0o777
		}
		out[it.Path] = volumeFile{Data: d, Mode: m}
	}
	return out, nil
}

func configMapFiles(ns string, ref *corev1.LocalObjectReference, items []corev1.KeyToPath, optional *bool, mode os.FileMode, lookup podrunner.ConfigLookup) (map[string]volumeFile, error) {
	opt := optional != nil && *optional
	var cm *corev1.ConfigMap
	ok := false
	if lookup != nil {
		cm, ok = lookup.ConfigMap(ns, ref.Name)
	}
	if !ok {
		if opt {
			return nil, nil
		}
		return nil, fmt.Errorf("configmap %q not found", ref.Name)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles("configmap", ref.Name, data, items, opt, mode)
}

func secretFiles(ns, name string, items []corev1.KeyToPath, optional *bool, mode os.FileMode, lookup podrunner.ConfigLookup) (map[string]volumeFile, error) {
	opt := optional != nil && *optional
	var s *corev1.Secret
	ok := false
	if lookup != nil {
		s, ok = lookup.Secret(ns, name)
	}
	if !ok {
		if opt {
			return nil, nil
		}
		return nil, fmt.Errorf("secret %q not found", name)
	}
	data := map[string][]byte{}
	for k, v := range s.Data {
		data[k] = v
	}
	for k, v := range s.StringData {
		data[k] = []byte(v)
	}
	return keyFiles("secret", name, data, items, opt, mode)
}

func downwardFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, mode os.FileMode, nodeAlloc corev1.ResourceList) (map[string]volumeFile, error) {
	out := map[string]volumeFile{}
	for _, it := range items {
		var val string
		var err error
		switch {
		case it.FieldRef != nil:
			val, err = FieldRefValue(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			val, err = ResourceFieldValue(pod, it.ResourceFieldRef, nodeAlloc)
		default:
			err = fmt.Errorf("downwardAPI item %q has neither fieldRef nor resourceFieldRef", it.Path)
		}
		if err != nil {
			return nil, err
		}
		m := mode
		if it.Mode != nil {
			m = os.FileMode(*it.Mode) & 0o777
		}
		out[it.Path] = volumeFile{Data: []byte(val), Mode: m}
	}
	return out, nil
}

// formatMap renders labels or annotations as the downward API does: key="value" lines, sorted,
// values quoted as Go strings.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(k + "=" + strconv.Quote(m[k]))
	}
	return b.String()
}

// FieldRefValue resolves a downward-API fieldPath of pod, as the kubelet does. status.podIP may be
// empty when the pod has no IP yet.
func FieldRefValue(pod *corev1.Pod, path string) (string, error) {
	if key, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return pod.Status.HostIP, nil
	case "status.hostIPs":
		return joinIPs(pod.Status.HostIPs, pod.Status.HostIP), nil
	case "status.podIP":
		return pod.Status.PodIP, nil
	case "status.podIPs":
		var ips []string
		for _, ip := range pod.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		if len(ips) == 0 && pod.Status.PodIP != "" {
			ips = []string{pod.Status.PodIP}
		}
		return strings.Join(ips, ","), nil
	}
	return "", fmt.Errorf("unsupported fieldPath %q", path)
}

func joinIPs(ips []corev1.HostIP, one string) string {
	var out []string
	for _, ip := range ips {
		out = append(out, ip.IP)
	}
	if len(out) == 0 && one != "" {
		out = []string{one}
	}
	return strings.Join(out, ",")
}

// subscript parses prefix['key'] (or prefix["key"]).
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"[")
	if !ok || !strings.HasSuffix(rest, "]") || len(rest) < 3 {
		return "", false
	}
	rest = rest[:len(rest)-1]
	q := rest[0]
	if (q != '\'' && q != '"') || rest[len(rest)-1] != q {
		return "", false
	}
	return rest[1 : len(rest)-1], true
}

// ResourceFieldValue resolves a resourceFieldRef (limits/requests of cpu, memory,
// ephemeral-storage) as the kubelet does: a missing limit is the pod-level limit, else the node's
// allocatable; the value is
// divided by divisor (default 1) and rounded up; a missing request is the limit (as the API
// defaults it), else 0.
func ResourceFieldValue(pod *corev1.Pod, ref *corev1.ResourceFieldSelector, nodeAlloc corev1.ResourceList) (string, error) {
	var c *corev1.Container
	for _, ctr := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if ctr.Name == ref.ContainerName {
			cc := ctr
			c = &cc
		}
	}
	if c == nil {
		return "", fmt.Errorf("resourceFieldRef: no container %q", ref.ContainerName)
	}
	kind, res, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	name := corev1.ResourceName(res)
	if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourceEphemeralStorage && !strings.HasPrefix(res, "hugepages-") {
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	var q resource.Quantity
	var have bool
	if kind == "limits" {
		q, have = c.Resources.Limits[name]
		if !have && cgroup.PodLevelSet(pod) {
			q, have = pod.Spec.Resources.Limits[name] // the pod's limit bounds the container
			have = have && !q.IsZero()
		}
		if !have {
			q, have = nodeAlloc[name]
		}
	} else {
		q, have = c.Resources.Requests[name]
		if !have {
			q, have = c.Resources.Limits[name] // the API defaults requests to limits
		}
	}
	if !have {
		q = resource.Quantity{}
	}
	div := ref.Divisor
	if div.IsZero() {
		div = resource.MustParse("1")
	}
	if name == corev1.ResourceCPU {
		// ceil(cpu / divisor), in millicores, as the kubelet.
		return strconv.FormatInt((q.MilliValue()+div.MilliValue()-1)/div.MilliValue(), 10), nil
	}
	v := q.Value()
	d := div.Value()
	if d == 0 {
		return "", fmt.Errorf("resourceFieldRef %q: divisor %s too small", ref.Resource, div.String())
	}
	return strconv.FormatInt((v+d-1)/d, 10), nil
}

// writeAtomic makes dir hold exactly files, swapping them in with one rename of the "..data"
// symlink, as the kubelet's atomic writer does. Unchanged content is not rewritten. gid >= 0
// gives files and dirs that group (fsGroup) and makes files group-readable.
func writeAtomic(dir string, files map[string]volumeFile, gid int) (bool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	if sameContent(dir, files, gid) {
		return false, nil
	}
	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, err
	}
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return false, err
	}
	for p, f := range files {
		full := filepath.Join(tsDir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return false, err
		}
		mode := fileMode(f.Mode, gid)
		if err := os.WriteFile(full, f.Data, mode); err != nil {
			return false, err
		}
		if err := os.Chmod(full, mode); err != nil {
			return false, err
		}
	}
	if gid >= 0 {
		err := filepath.Walk(tsDir, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, -1, gid)
		})
		if err != nil {
			return false, fmt.Errorf("fsGroup ownership: %w", err)
		}
	}
	dataLink := filepath.Join(dir, dataDirName)
	old, _ := os.Readlink(dataLink)
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(tsDir), tmp); err != nil {
		return false, err
	}
	if err := os.Rename(tmp, dataLink); err != nil {
		return false, err
	}
	tops := map[string]bool{}
	for p := range files {
		top, _, _ := strings.Cut(p, "/")
		tops[top] = true
	}
	for top := range tops {
		link := filepath.Join(dir, top)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(dataDirName, top), link); err != nil {
			return false, err
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "..") && !tops[e.Name()] && e.Type()&os.ModeSymlink != 0 {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	if old != "" && old != filepath.Base(tsDir) && strings.HasPrefix(old, "..") {
		_ = os.RemoveAll(filepath.Join(dir, old))
	}
	return true, nil
}

func fileMode(m os.FileMode, gid int) os.FileMode {
	if gid >= 0 {
		m |= 0o440 // the kubelet's read-only volume ownership mask
	}
	return m
}

// sameContent reports whether dir's current "..data" holds exactly files.
func sameContent(dir string, files map[string]volumeFile, gid int) bool {
	target, err := os.Readlink(filepath.Join(dir, dataDirName))
	if err != nil {
		return false
	}
	base := filepath.Join(dir, target)
	seen := 0
	err = filepath.Walk(base, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		f, ok := files[rel]
		if !ok || fi.Mode().Perm() != fileMode(f.Mode, gid) {
			return errDiffers
		}
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(b, f.Data) {
			return errDiffers
		}
		seen++
		return nil
	})
	return err == nil && seen == len(files)
}

var errDiffers = fmt.Errorf("differs")

// ensureTmpfs mounts a tmpfs on dir unless one is mounted there already. size 0: the kernel's
// default (half the RAM).
func ensureTmpfs(dir string, size int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if isMountPoint(dir) {
		return nil
	}
	data := "mode=0755"
	if size > 0 {
		data += ",size=" + strconv.FormatInt(size, 10)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// isMountPoint reports whether dir is the root of a mount (its device differs from its parent's).
func isMountPoint(dir string) bool {
	var st, pst unix.Stat_t
	if unix.Lstat(dir, &st) != nil || unix.Lstat(filepath.Dir(dir), &pst) != nil {
		return false
	}
	return st.Dev != pst.Dev
}

// unmountUnder unmounts every mount at or below dir (deepest first).
func unmountUnder(dir string) error {
	mounts, err := readMountinfo()
	if err != nil {
		return err
	}
	var points []string
	for _, m := range mounts {
		if m.point == dir || strings.HasPrefix(m.point, dir+"/") {
			points = append(points, m.point)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []string
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
			errs = append(errs, fmt.Sprintf("unmount %s: %v", p, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// mountEntry is one line of /proc/self/mountinfo: the mount point and its optional fields
// (shared:N, master:N...).
type mountEntry struct {
	point    string
	optional []string
}

// readMountinfo lists this process's mounts, in the kernel's order (a later mount of the same
// point is on top).
func readMountinfo() ([]mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMountinfo(f)
}

func parseMountinfo(r io.Reader) ([]mountEntry, error) {
	var out []mountEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		e := mountEntry{point: unescapeMount(fields[4])}
		for _, f := range fields[min(6, len(fields)):] {
			if f == "-" {
				break
			}
			e.optional = append(e.optional, f)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// fsGroupOf is the pod's fsGroup, or -1.
func fsGroupOf(pod *corev1.Pod) int {
	if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		return int(*sc.FSGroup)
	}
	return -1
}

// prepareVolume makes volume v of pod ready on the host and returns the directory to bind and
// whether it must be mounted read-only. Idempotent: a second container reusing the volume gets
// the same directory (content refreshed). A failure is a *podrunner.VolumeError (the kubelet's
// FailedMount).
func prepareVolume(root string, pod *corev1.Pod, v *corev1.Volume, lookup podrunner.ConfigLookup, nodeAlloc corev1.ResourceList) (string, bool, error) {
	dir, ro, err := setUpVolume(root, pod, v, lookup, nodeAlloc)
	if err != nil {
		return "", false, &podrunner.VolumeError{Volume: v.Name, Err: err}
	}
	return dir, ro, nil
}

// setUpVolume is prepareVolume's work; its errors do not name the volume.
func setUpVolume(root string, pod *corev1.Pod, v *corev1.Volume, lookup podrunner.ConfigLookup, nodeAlloc corev1.ResourceList) (string, bool, error) {
	kind, atomic, tmpfs, err := volumeKind(v)
	if err != nil {
		return "", false, err
	}
	if v.Image != nil {
		return "", false, errors.New("an image volume is mounted by the runtime (mountImageVolume)")
	}
	if v.HostPath != nil {
		if err := prepareHostPath(v.HostPath.Path, v.HostPath.Type); err != nil {
			return "", false, err
		}
		return v.HostPath.Path, false, nil
	}
	dir := volumeDir(root, string(pod.UID), kind, v.Name)
	gid := fsGroupOf(pod)
	if v.EmptyDir != nil && hugePagesMedium(v.EmptyDir.Medium) {
		size, err := hugePageSize(v.EmptyDir.Medium, pod)
		if err != nil {
			return "", false, err
		}
		if err := ensureHugetlbfs(dir, size); err != nil {
			return "", false, err
		}
	}
	if tmpfs {
		var size int64
		if v.EmptyDir != nil {
			size = MemoryEmptyDirSize(pod, v.EmptyDir.SizeLimit, nodeAlloc.Memory().Value())
		}
		if err := ensureTmpfs(dir, size); err != nil {
			return "", false, err
		}
	}
	if !atomic { // emptyDir
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return "", false, err
		}
		if gid >= 0 {
			if err := os.Chown(dir, -1, gid); err != nil {
				return "", false, fmt.Errorf("fsGroup: %w", err)
			}
		}
		if err := os.Chmod(dir, volumeRootMode(tmpfs, gid)); err != nil {
			return "", false, err
		}
		return dir, false, nil
	}
	files, err := volumePayload(pod, v, lookup, nodeAlloc)
	if err != nil {
		return "", false, err
	}
	if _, err := writeAtomic(dir, files, gid); err != nil {
		return "", false, fmt.Errorf("write: %w", err)
	}
	if gid >= 0 {
		_ = os.Chown(dir, -1, gid)
	}
	if err := os.Chmod(dir, volumeRootMode(tmpfs, gid)); err != nil {
		return "", false, err
	}
	return dir, true, nil
}

// MemoryEmptyDirSize is the size of a medium: Memory emptyDir's tmpfs, as the kubelet sizes it:
// the least of the node's allocatable memory, the pod's memory limit (its cgroup's, when it has
// one) and the volume's sizeLimit, each counted when above zero; 0 (the kernel's default, half
// the RAM) when none is. Pure.
func MemoryEmptyDirSize(pod *corev1.Pod, sizeLimit *resource.Quantity, nodeAllocatable int64) int64 {
	size := int64(0)
	least := func(v int64) {
		if v > 0 && (size == 0 || v < size) {
			size = v
		}
	}
	least(nodeAllocatable)
	least(cgroup.PodResources(pod, 0).Memory)
	if sizeLimit != nil {
		least(sizeLimit.Value())
	}
	return size
}

// volumeRootMode is the mode of a volume's top directory as the kubelet leaves it (its
// configMap, secret, downwardAPI and projected volumes sit in an emptyDir too): rwx for all, the
// sticky bit a fresh tmpfs has (the kubelet keeps it), setgid with an fsGroup. Pure.
func volumeRootMode(tmpfs bool, fsGroup int) os.FileMode {
	mode := os.FileMode(0o777)
	if tmpfs {
		mode |= os.ModeSticky
	}
	if fsGroup >= 0 {
		mode |= os.ModeSetgid
	}
	return mode
}

// refreshVolumes rewrites the configMap, secret, downwardAPI and projected volumes of pod that
// exist on the host from the lookup's current content. A volume whose object went missing keeps
// its last content (as the kubelet does) and the error is reported.
func refreshVolumes(root string, pod *corev1.Pod, lookup podrunner.ConfigLookup, nodeAlloc corev1.ResourceList) (bool, error) {
	changed := false
	var errs []string
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		kind, atomic, _, err := volumeKind(v)
		if err != nil || !atomic {
			continue
		}
		dir := volumeDir(root, string(pod.UID), kind, v.Name)
		if _, err := os.Lstat(filepath.Join(dir, dataDirName)); err != nil {
			continue // not set up by any container yet
		}
		files, err := volumePayload(pod, v, lookup, nodeAlloc)
		if err != nil {
			errs = append(errs, fmt.Sprintf("volume %q: %v", v.Name, err))
			continue
		}
		c, err := writeAtomic(dir, files, fsGroupOf(pod))
		if err != nil {
			errs = append(errs, fmt.Sprintf("volume %q: %v", v.Name, err))
			continue
		}
		changed = changed || c
	}
	if len(errs) > 0 {
		return changed, fmt.Errorf("refresh volumes: %s", strings.Join(errs, "; "))
	}
	return changed, nil
}

// RefreshVolumes implements podrunner.VolumeRefresher.
func (r *Runtime) RefreshVolumes(pod *corev1.Pod, lookup podrunner.ConfigLookup) (bool, error) {
	return refreshVolumes(r.cfg.RootDir, pod, lookup, r.nodeAllocatable())
}

// nodeAllocatable is what a container without limits may use (resourceFieldRef limits default
// to it, and it bounds a medium: Memory emptyDir): Config.Allocatable, else the machine's CPUs
// and memory.
func (r *Runtime) nodeAllocatable() corev1.ResourceList {
	if r.cfg.Allocatable != nil {
		return r.cfg.Allocatable
	}
	return hostAllocatable()
}

func hostAllocatable() corev1.ResourceList {
	out := corev1.ResourceList{
		corev1.ResourceCPU: *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		out[corev1.ResourceMemory] = *resource.NewQuantity(int64(si.Totalram)*int64(si.Unit), resource.BinarySI)
	}
	return out
}
