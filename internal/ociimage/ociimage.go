// Package ociimage builds a tiny, deterministic OCI image layout tarball
// around a static busybox binary. The result can be imported into containerd
// (client.Import, `ctr images import`) on machines without registry access.
package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	_ "crypto/sha256" // registers sha256 for go-digest
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Defaults applied by WriteBusyboxImage for zero-valued Config fields.
const (
	DefaultName       = "docker.io/library/busybox:latest"
	DefaultBusybox    = "/bin/busybox"
	DefaultPath       = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	DefaultWorkingDir = "/"
)

// AnnotationImageName is the index annotation containerd's importer uses to
// name the imported image (images.AnnotationImageName in containerd).
const AnnotationImageName = "io.containerd.image.name"

// epoch is the fixed modification time of every tar entry, both in the layer
// and in the outer layout tarball.
var epoch = time.Unix(0, 0).UTC()

// Config describes the image to build.
type Config struct {
	// Name is the full image reference stored in the index annotations,
	// e.g. "docker.io/library/busybox:latest". Default DefaultName.
	Name string
	// Busybox is the path to a static busybox binary. Default DefaultBusybox.
	Busybox string
	// Entrypoint is the image config Entrypoint (default none).
	Entrypoint []string
	// Cmd is the image config Cmd. A nil Cmd defaults to ["sh"] when
	// Entrypoint is empty; a non-nil empty slice means no Cmd.
	Cmd []string
	// Env defaults to []string{DefaultPath} when nil.
	Env []string
	// WorkingDir defaults to "/".
	WorkingDir string
	// StopSignal is optional, e.g. "SIGQUIT".
	StopSignal string
	// Labels are copied into the image config.
	Labels map[string]string
	// ExtraFiles are added to the layer as regular files with mode 0644
	// (path in image -> content). Missing parent directories are created
	// (mode 0755). An extra file replaces a default file at the same path.
	ExtraFiles map[string][]byte
}

// WriteBusyboxImageFile writes the image layout tarball to path, creating
// parent directories. The file is written to a temporary name in the same
// directory and renamed into place, so watchers never see a partial file.
func WriteBusyboxImageFile(p string, cfg Config) (err error) {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(p)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = WriteBusyboxImage(f, cfg); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// WriteBusyboxImage writes an OCI image layout tarball (oci-layout,
// index.json, blobs/sha256/...) holding a single-layer linux image for
// runtime.GOARCH. The output is deterministic: the same input (and busybox
// binary) yields the same bytes, so the image ID is stable across builds.
func WriteBusyboxImage(w io.Writer, cfg Config) error {
	cfg = withDefaults(cfg)

	applets, err := listApplets(cfg.Busybox)
	if err != nil {
		return err
	}
	bb, err := os.ReadFile(cfg.Busybox)
	if err != nil {
		return fmt.Errorf("ociimage: read busybox: %w", err)
	}

	layerTar, err := buildLayer(bb, applets, cfg.ExtraFiles)
	if err != nil {
		return err
	}
	diffID := digest.FromBytes(layerTar)
	layerGz, err := gzipBytes(layerTar)
	if err != nil {
		return err
	}

	platform := ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH}
	img := ocispec.Image{
		Platform: platform,
		Config: ocispec.ImageConfig{
			Env:        cfg.Env,
			Entrypoint: cfg.Entrypoint,
			Cmd:        cfg.Cmd,
			WorkingDir: cfg.WorkingDir,
			Labels:     cfg.Labels,
			StopSignal: cfg.StopSignal,
		},
		RootFS: ocispec.RootFS{
			Type:    "layers",
			DiffIDs: []digest.Digest{diffID},
		},
		History: []ocispec.History{{CreatedBy: fmt.Sprintf("podkeeper ociimage: busybox with %d applets", len(applets))}},
	}
	configJSON, err := json.Marshal(img)
	if err != nil {
		return err
	}

	manifest := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    descriptor(ocispec.MediaTypeImageConfig, configJSON),
		Layers:    []ocispec.Descriptor{descriptor(ocispec.MediaTypeImageLayerGzip, layerGz)},
	}
	manifestJSON, err := json.Marshal(manifest)
	if err != nil {
		return err
	}

	mdesc := descriptor(ocispec.MediaTypeImageManifest, manifestJSON)
	mdesc.Platform = &platform
	mdesc.Annotations = map[string]string{
		AnnotationImageName:       cfg.Name,
		ocispec.AnnotationRefName: refName(cfg.Name),
	}
	index := ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{mdesc},
	}
	indexJSON, err := json.Marshal(index)
	if err != nil {
		return err
	}
	layoutJSON, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return err
	}

	blobs := map[string][]byte{
		digest.FromBytes(configJSON).Encoded():   configJSON,
		digest.FromBytes(manifestJSON).Encoded(): manifestJSON,
		digest.FromBytes(layerGz).Encoded():      layerGz,
	}
	names := make([]string, 0, len(blobs))
	for n := range blobs {
		names = append(names, n)
	}
	sort.Strings(names)

	tw := tar.NewWriter(w)
	if err := writeFile(tw, ocispec.ImageLayoutFile, layoutJSON, 0o644); err != nil {
		return err
	}
	if err := writeFile(tw, ocispec.ImageIndexFile, indexJSON, 0o644); err != nil {
		return err
	}
	if err := writeDir(tw, ocispec.ImageBlobsDir+"/", 0o755); err != nil {
		return err
	}
	if err := writeDir(tw, ocispec.ImageBlobsDir+"/sha256/", 0o755); err != nil {
		return err
	}
	for _, n := range names {
		if err := writeFile(tw, ocispec.ImageBlobsDir+"/sha256/"+n, blobs[n], 0o644); err != nil {
			return err
		}
	}
	return tw.Close()
}

func withDefaults(cfg Config) Config {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.Busybox == "" {
		cfg.Busybox = DefaultBusybox
	}
	if cfg.Cmd == nil && len(cfg.Entrypoint) == 0 {
		cfg.Cmd = []string{"sh"}
	}
	if cfg.Env == nil {
		cfg.Env = []string{DefaultPath}
	}
	if cfg.WorkingDir == "" {
		cfg.WorkingDir = DefaultWorkingDir
	}
	return cfg
}

// refName returns the tag part of an image reference ("latest" when the
// reference has no tag), used for org.opencontainers.image.ref.name.
func refName(name string) string {
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name = name[:i]
	}
	last := name[strings.LastIndexByte(name, '/')+1:]
	if i := strings.LastIndexByte(last, ':'); i >= 0 && i+1 < len(last) {
		return last[i+1:]
	}
	return "latest"
}

func descriptor(mediaType string, b []byte) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}
}

// listApplets runs `busybox --list` and returns the sorted, de-duplicated
// applet names, excluding "busybox" itself.
func listApplets(bin string) ([]string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "--list")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("ociimage: %s --list: %w: %s", bin, err, strings.TrimSpace(stderr.String()))
	}
	seen := map[string]bool{}
	var applets []string
	for _, a := range strings.Fields(string(out)) {
		if a == "busybox" || a == "." || a == ".." || strings.ContainsRune(a, '/') || seen[a] {
			continue
		}
		seen[a] = true
		applets = append(applets, a)
	}
	if len(applets) == 0 {
		return nil, fmt.Errorf("ociimage: %s --list printed no applets", bin)
	}
	sort.Strings(applets)
	return applets, nil
}

type entry struct {
	typ      byte
	mode     int64
	linkname string
	data     []byte
}

// buildLayer returns the uncompressed layer tar.
func buildLayer(busybox []byte, applets []string, extra map[string][]byte) ([]byte, error) {
	entries := map[string]entry{}
	dir := func(p string, mode int64) { entries[p] = entry{typ: tar.TypeDir, mode: mode} }
	for _, d := range []string{"bin", "etc", "proc", "sys", "dev", "var", "home"} {
		dir(d, 0o755)
	}
	dir("root", 0o700)
	dir("tmp", 0o1777)
	entries["bin/busybox"] = entry{typ: tar.TypeReg, mode: 0o755, data: busybox}
	for _, a := range applets {
		entries["bin/"+a] = entry{typ: tar.TypeSymlink, mode: 0o777, linkname: "busybox"}
	}
	entries["etc/passwd"] = entry{typ: tar.TypeReg, mode: 0o644, data: []byte(
		"root:x:0:0:root:/root:/bin/sh\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")}
	entries["etc/group"] = entry{typ: tar.TypeReg, mode: 0o644, data: []byte(
		"root:x:0:\n" +
			"nogroup:x:65534:\n")}

	for p, data := range extra {
		clean := strings.TrimPrefix(path.Clean("/"+p), "/")
		if clean == "" {
			return nil, fmt.Errorf("ociimage: invalid extra file path %q", p)
		}
		for d := path.Dir(clean); d != "."; d = path.Dir(d) {
			e, ok := entries[d]
			if !ok {
				dir(d, 0o755)
			} else if e.typ != tar.TypeDir {
				return nil, fmt.Errorf("ociimage: extra file %q: parent %q is not a directory", p, d)
			}
		}
		if e, ok := entries[clean]; ok && e.typ == tar.TypeDir {
			return nil, fmt.Errorf("ociimage: extra file %q would replace a directory", p)
		}
		entries[clean] = entry{typ: tar.TypeReg, mode: 0o644, data: data}
	}

	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	// Parents sort before children because a parent is a prefix of its
	// children's names.
	sort.Strings(names)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		e := entries[n]
		var err error
		switch e.typ {
		case tar.TypeDir:
			err = writeDir(tw, n+"/", e.mode)
		case tar.TypeSymlink:
			err = tw.WriteHeader(header(tar.TypeSymlink, n, e.mode, 0, e.linkname))
		case tar.TypeReg:
			err = writeFile(tw, n, e.data, e.mode)
		default:
			err = errors.New("ociimage: internal error: unknown entry type")
		}
		if err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func header(typ byte, name string, mode, size int64, linkname string) *tar.Header {
	return &tar.Header{
		Typeflag: typ,
		Name:     name,
		Linkname: linkname,
		Mode:     mode,
		Size:     size,
		Uname:    "root",
		Gname:    "root",
		ModTime:  epoch,
	}
}

func writeDir(tw *tar.Writer, name string, mode int64) error {
	return tw.WriteHeader(header(tar.TypeDir, name, mode, 0, ""))
}

func writeFile(tw *tar.Writer, name string, data []byte, mode int64) error {
	if err := tw.WriteHeader(header(tar.TypeReg, name, mode, int64(len(data)), "")); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	// Header left zero-valued (no name, zero mtime) for determinism.
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
