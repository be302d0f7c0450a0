package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func needBusybox(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(DefaultBusybox); err != nil {
		t.Fatalf("no busybox at %s: %v (apt-get install busybox-static, or make deps)", DefaultBusybox, err)
	}
}

func build(t *testing.T, cfg Config) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteBusyboxImage(&buf, cfg); err != nil {
		t.Fatalf("WriteBusyboxImage: %v", err)
	}
	return buf.Bytes()
}

type layerEntry struct {
	hdr  *tar.Header
	data []byte
}

type parsed struct {
	index    ocispec.Index
	manifest ocispec.Manifest
	config   ocispec.Image
	layer    map[string]layerEntry
	order    []string
}

func readTar(t *testing.T, r io.Reader) (map[string]layerEntry, []string) {
	t.Helper()
	m := map[string]layerEntry{}
	var order []string
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("tar: %v", err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("tar read %s: %v", h.Name, err)
		}
		if _, dup := m[h.Name]; dup {
			t.Errorf("duplicate tar entry %q", h.Name)
		}
		m[h.Name] = layerEntry{h, b}
		order = append(order, h.Name)
	}
	return m, order
}

// parseLayout walks index.json -> manifest -> config -> layer, checking
// every descriptor's digest and size against the blob it names.
func parseLayout(t *testing.T, b []byte) parsed {
	t.Helper()
	files, _ := readTar(t, bytes.NewReader(b))
	var p parsed

	var layout ocispec.ImageLayout
	if err := json.Unmarshal(files[ocispec.ImageLayoutFile].data, &layout); err != nil {
		t.Fatalf("oci-layout: %v", err)
	}
	if layout.Version != ocispec.ImageLayoutVersion {
		t.Fatalf("oci-layout version %q", layout.Version)
	}
	if err := json.Unmarshal(files[ocispec.ImageIndexFile].data, &p.index); err != nil {
		t.Fatalf("index.json: %v", err)
	}

	blob := func(d ocispec.Descriptor) []byte {
		t.Helper()
		if err := d.Digest.Validate(); err != nil {
			t.Fatalf("descriptor digest %q: %v", d.Digest, err)
		}
		e, ok := files["blobs/sha256/"+d.Digest.Encoded()]
		if !ok {
			t.Fatalf("blob %s missing", d.Digest)
		}
		if got := digest.FromBytes(e.data); got != d.Digest {
			t.Fatalf("blob %s has digest %s", d.Digest, got)
		}
		if int64(len(e.data)) != d.Size {
			t.Fatalf("blob %s: size %d, descriptor says %d", d.Digest, len(e.data), d.Size)
		}
		return e.data
	}

	if p.index.SchemaVersion != 2 || p.index.MediaType != ocispec.MediaTypeImageIndex {
		t.Fatalf("index: schemaVersion %d mediaType %q", p.index.SchemaVersion, p.index.MediaType)
	}
	if len(p.index.Manifests) != 1 {
		t.Fatalf("index has %d manifests", len(p.index.Manifests))
	}
	md := p.index.Manifests[0]
	if md.MediaType != ocispec.MediaTypeImageManifest {
		t.Fatalf("manifest descriptor media type %q", md.MediaType)
	}
	if err := json.Unmarshal(blob(md), &p.manifest); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if p.manifest.SchemaVersion != 2 || p.manifest.MediaType != ocispec.MediaTypeImageManifest {
		t.Fatalf("manifest: schemaVersion %d mediaType %q", p.manifest.SchemaVersion, p.manifest.MediaType)
	}
	if p.manifest.Config.MediaType != ocispec.MediaTypeImageConfig {
		t.Fatalf("config media type %q", p.manifest.Config.MediaType)
	}
	if err := json.Unmarshal(blob(p.manifest.Config), &p.config); err != nil {
		t.Fatalf("config: %v", err)
	}
	if len(p.manifest.Layers) != 1 || p.manifest.Layers[0].MediaType != ocispec.MediaTypeImageLayerGzip {
		t.Fatalf("layers: %+v", p.manifest.Layers)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob(p.manifest.Layers[0])))
	if err != nil {
		t.Fatalf("layer gzip: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("layer gunzip: %v", err)
	}
	if p.config.RootFS.Type != "layers" || len(p.config.RootFS.DiffIDs) != 1 {
		t.Fatalf("rootfs: %+v", p.config.RootFS)
	}
	if got := digest.FromBytes(raw); got != p.config.RootFS.DiffIDs[0] {
		t.Fatalf("diff_id %s, uncompressed layer is %s", p.config.RootFS.DiffIDs[0], got)
	}
	p.layer, p.order = readTar(t, bytes.NewReader(raw))

	// Every blob is referenced.
	for name := range files {
		if len(name) > len("blobs/sha256/") && name[:len("blobs/sha256/")] == "blobs/sha256/" {
			d := name[len("blobs/sha256/"):]
			if d != md.Digest.Encoded() && d != p.manifest.Config.Digest.Encoded() && d != p.manifest.Layers[0].Digest.Encoded() {
				t.Errorf("unreferenced blob %s", name)
			}
		}
	}
	return p
}

func TestLayoutValid(t *testing.T) {
	needBusybox(t)
	p := parseLayout(t, build(t, Config{Name: "docker.io/library/busybox:1.36"}))

	md := p.index.Manifests[0]
	if got := md.Annotations[AnnotationImageName]; got != "docker.io/library/busybox:1.36" {
		t.Errorf("image name annotation %q", got)
	}
	if got := md.Annotations[ocispec.AnnotationRefName]; got != "1.36" {
		t.Errorf("ref name annotation %q", got)
	}
	if md.Platform == nil || md.Platform.OS != "linux" || md.Platform.Architecture != runtime.GOARCH {
		t.Errorf("platform %+v", md.Platform)
	}
	if p.config.OS != "linux" || p.config.Architecture != runtime.GOARCH {
		t.Errorf("config platform %s/%s", p.config.OS, p.config.Architecture)
	}
	c := p.config.Config
	if !reflect.DeepEqual(c.Cmd, []string{"sh"}) || c.Entrypoint != nil || c.WorkingDir != "/" ||
		!reflect.DeepEqual(c.Env, []string{DefaultPath}) {
		t.Errorf("default config %+v", c)
	}

	bb, err := os.ReadFile(DefaultBusybox)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := p.layer["bin/busybox"]
	if !ok || e.hdr.Typeflag != tar.TypeReg || e.hdr.Mode != 0o755 || !bytes.Equal(e.data, bb) {
		t.Errorf("bin/busybox missing or wrong (present %v)", ok)
	}
	for _, a := range []string{"sh", "echo", "ls", "sleep", "cat"} {
		e, ok := p.layer["bin/"+a]
		if !ok || e.hdr.Typeflag != tar.TypeSymlink || e.hdr.Linkname != "busybox" {
			t.Errorf("bin/%s: not a symlink to busybox (present %v)", a, ok)
		}
	}
	wantDirs := map[string]int64{"bin/": 0o755, "etc/": 0o755, "tmp/": 0o1777, "proc/": 0o755, "sys/": 0o755,
		"dev/": 0o755, "root/": 0o700, "var/": 0o755, "home/": 0o755}
	for d, mode := range wantDirs {
		e, ok := p.layer[d]
		if !ok || e.hdr.Typeflag != tar.TypeDir || e.hdr.Mode != mode {
			t.Errorf("dir %s missing or wrong mode (present %v)", d, ok)
		}
	}
	if got := string(p.layer["etc/passwd"].data); got != "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n" {
		t.Errorf("etc/passwd = %q", got)
	}
	if got := string(p.layer["etc/group"].data); got != "root:x:0:\nnogroup:x:65534:\n" {
		t.Errorf("etc/group = %q", got)
	}
	// Parents precede children.
	seen := map[string]bool{}
	for _, n := range p.order {
		if dir := filepath.Dir(filepath.Clean(n)); dir != "." && !seen[dir+"/"] {
			t.Errorf("%s appears before its parent %s/", n, dir)
		}
		seen[n] = true
	}
}

func TestConfigFieldsAndExtraFiles(t *testing.T) {
	needBusybox(t)
	cfg := Config{
		Name:       "example.com/x/bb:v1",
		Entrypoint: []string{"/bin/sh", "-c"},
		Cmd:        []string{"sleep 1"},
		Env:        []string{"A=b"},
		WorkingDir: "/tmp",
		StopSignal: "SIGQUIT",
		Labels:     map[string]string{"k": "v"},
		ExtraFiles: map[string][]byte{
			"/etc/hostname":          []byte("box\n"),
			"usr/share/hello/a.txt":  []byte("hello"),
			"/etc/passwd":            []byte("root:x:0:0::/:/bin/sh\n"),
			"/srv//deep/../file.cfg": []byte("x=1"),
		},
	}
	p := parseLayout(t, build(t, cfg))
	c := p.config.Config
	if !reflect.DeepEqual(c.Entrypoint, cfg.Entrypoint) || !reflect.DeepEqual(c.Cmd, cfg.Cmd) ||
		!reflect.DeepEqual(c.Env, cfg.Env) || c.WorkingDir != "/tmp" || c.StopSignal != "SIGQUIT" ||
		!reflect.DeepEqual(c.Labels, cfg.Labels) {
		t.Errorf("config %+v", c)
	}
	for name, want := range map[string]string{
		"etc/hostname":          "box\n",
		"usr/share/hello/a.txt": "hello",
		"etc/passwd":            "root:x:0:0::/:/bin/sh\n",
		"srv/file.cfg":          "x=1",
	} {
		e, ok := p.layer[name]
		if !ok || e.hdr.Typeflag != tar.TypeReg || e.hdr.Mode != 0o644 || string(e.data) != want {
			t.Errorf("extra file %s missing or wrong (present %v)", name, ok)
		}
	}
	for _, d := range []string{"usr/", "usr/share/", "usr/share/hello/", "srv/"} {
		if e, ok := p.layer[d]; !ok || e.hdr.Typeflag != tar.TypeDir {
			t.Errorf("parent dir %s missing", d)
		}
	}
	if got := p.index.Manifests[0].Annotations[ocispec.AnnotationRefName]; got != "v1" {
		t.Errorf("ref name %q", got)
	}
}

func TestEntrypointWithoutCmd(t *testing.T) {
	needBusybox(t)
	p := parseLayout(t, build(t, Config{Entrypoint: []string{"/bin/sleep"}}))
	if p.config.Config.Cmd != nil {
		t.Errorf("Cmd = %q, want none when only Entrypoint is set", p.config.Config.Cmd)
	}
	if got := p.index.Manifests[0].Annotations[AnnotationImageName]; got != DefaultName {
		t.Errorf("default name %q", got)
	}
}

func TestDeterministic(t *testing.T) {
	needBusybox(t)
	cfg := Config{
		Labels:     map[string]string{"b": "2", "a": "1", "c": "3"},
		ExtraFiles: map[string][]byte{"/a/b": []byte("1"), "/c": []byte("2"), "/a/a/a": []byte("3"), "/z": nil},
	}
	first := build(t, cfg)
	for i := 0; i < 3; i++ {
		if !bytes.Equal(first, build(t, cfg)) {
			t.Fatalf("build %d differs from first build", i+2)
		}
	}
	if bytes.Equal(first, build(t, Config{})) {
		t.Fatal("different configs produced identical output")
	}
}

func TestWriteFile(t *testing.T) {
	needBusybox(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "a", "b", "bb.tar")
	if err := WriteBusyboxImageFile(out, Config{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, build(t, Config{})) {
		t.Error("file content differs from WriteBusyboxImage output")
	}
	ents, err := os.ReadDir(filepath.Dir(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		t.Errorf("leftover files next to output: %v", ents)
	}
}

func TestErrors(t *testing.T) {
	needBusybox(t)
	var buf bytes.Buffer
	if err := WriteBusyboxImage(&buf, Config{Busybox: filepath.Join(t.TempDir(), "nope")}); err == nil {
		t.Error("missing busybox: no error")
	}
	for _, extra := range []map[string][]byte{
		{"/": []byte("x")},
		{"/etc": []byte("x")},
		{"/etc/passwd/x": []byte("x")},
	} {
		if err := WriteBusyboxImage(&buf, Config{ExtraFiles: extra}); err == nil {
			t.Errorf("ExtraFiles %v: no error", extra)
		}
	}
	dir := t.TempDir()
	if err := WriteBusyboxImageFile(filepath.Join(dir, "x.tar"), Config{Busybox: "/nonexistent"}); err == nil {
		t.Error("WriteBusyboxImageFile with missing busybox: no error")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("failed write left files behind: %v", ents)
	}
}

func TestRefName(t *testing.T) {
	for in, want := range map[string]string{
		"docker.io/library/busybox:latest":    "latest",
		"busybox":                             "latest",
		"localhost:5000/bb":                   "latest",
		"localhost:5000/bb:1.2":               "1.2",
		"docker.io/library/bb:v1@sha256:abcd": "v1",
		"docker.io/library/bb@sha256:abcd":    "latest",
	} {
		if got := refName(in); got != want {
			t.Errorf("refName(%q) = %q, want %q", in, got, want)
		}
	}
}
