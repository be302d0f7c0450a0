package crilog

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Rotated files. The live file "<path>" is renamed to "<path>.<stamp>" when it is rotated; the
// rotated files before the newest one are then compressed in the background to
// "<path>.<stamp>.gz" (written as "<stamp>.gz.tmp" and renamed when complete), as the kubelet's
// log manager does: the newest stays plain, a reader following the log may still be reading
// it. While both "<stamp>" and "<stamp>.gz" exist (the compression just done, the plain file not
// yet removed), the plain file is the one to read.

const (
	gzSuffix  = ".gz"
	tmpSuffix = ".tmp"
)

// rotatedFile is one rotated predecessor of a live log, plain, compressed or both.
type rotatedFile struct {
	base      string // "<path>.<stamp>"
	stamp     time.Time
	plain, gz bool
}

// name is the file to read: the plain one while it exists.
func (r rotatedFile) name() string {
	if r.plain {
		return r.base
	}
	return r.base + gzSuffix
}

// rotatedFiles returns the rotated predecessors of the log at path, oldest first, and the
// temporary files of compressions that did not finish. Files that merely share the prefix are
// ignored; a missing directory has none.
func rotatedFiles(path string) ([]rotatedFile, []string, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("crilog: list rotated logs: %w", err)
	}
	byStamp := map[string]*rotatedFile{}
	var tmps []string
	for _, e := range entries {
		suffix, ok := strings.CutPrefix(e.Name(), base+".")
		if !ok || e.IsDir() {
			continue
		}
		stamp, rest := suffix, ""
		if len(suffix) > len(rotatedLayout) {
			stamp, rest = suffix[:len(rotatedLayout)], suffix[len(rotatedLayout):]
		}
		t, err := time.Parse(rotatedLayout, stamp)
		if err != nil {
			continue
		}
		// Join with the caller's spelling of path so that names compare as the caller's.
		r := byStamp[stamp]
		if r == nil {
			r = &rotatedFile{base: path + "." + stamp, stamp: t}
		}
		switch rest {
		case "":
			r.plain = true
		case gzSuffix:
			r.gz = true
		case gzSuffix + tmpSuffix:
			tmps = append(tmps, path+"."+suffix)
			continue
		default:
			continue
		}
		byStamp[stamp] = r
	}
	out := make([]rotatedFile, 0, len(byStamp))
	for _, r := range byStamp {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b rotatedFile) int { return a.stamp.Compare(b.stamp) })
	return out, tmps, nil
}

// listRotated returns the file to read of each rotated predecessor of the log at path, oldest
// first.
func listRotated(path string) ([]string, error) {
	files, _, err := rotatedFiles(path)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(files))
	for i, r := range files {
		names[i] = r.name()
	}
	return names, nil
}

// remove deletes both forms of r; missing ones are not an error.
func (r rotatedFile) remove() error {
	var errs []error
	for _, n := range []string{r.base, r.base + gzSuffix} {
		if err := os.Remove(n); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("crilog: remove old log: %w", err))
		}
	}
	return errors.Join(errs...)
}

// compressFile gzips the rotated file name to name.gz and removes name. A failure (a full disk,
// say) leaves name as it was. If name was removed meanwhile (pruned, or its container's logs
// removed), so is its compressed copy.
func compressFile(name string) error {
	in, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("crilog: compress %s: %w", name, err)
	}
	defer in.Close()
	tmp := name + gzSuffix + tmpSuffix
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return fmt.Errorf("crilog: compress %s: %w", name, err)
	}
	zw := gzip.NewWriter(out)
	_, err = io.Copy(zw, in)
	err = errors.Join(err, zw.Close(), out.Close())
	if err == nil {
		// The copy keeps the plain file's modification time: a reader following the log that
		// still holds the plain file open knows its compressed copy by it (sameRotated).
		var fi os.FileInfo
		if fi, err = in.Stat(); err == nil {
			err = os.Chtimes(tmp, time.Time{}, fi.ModTime())
		}
	}
	if err == nil {
		err = os.Rename(tmp, name+gzSuffix)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("crilog: compress %s: %w", name, err)
	}
	if err := os.Remove(name); errors.Is(err, os.ErrNotExist) {
		os.Remove(name + gzSuffix)
	} else if err != nil {
		return fmt.Errorf("crilog: compress %s: remove the plain file: %w", name, err)
	}
	return nil
}

// startCompress has the rotated files but the newest compressed in the background; one pass
// at a time, and another after it if a rotation came meanwhile. Callers hold w.mu.
func (w *Writer) startCompress() {
	if !w.cfg.compress {
		return
	}
	if w.compressing {
		w.compressAgain = true
		return
	}
	w.compressing = true
	w.compressDone.Add(1)
	go w.compressLoop()
}

func (w *Writer) compressLoop() {
	defer w.compressDone.Done()
	for {
		files, tmps, err := rotatedFiles(w.path)
		if err == nil {
			for _, t := range tmps { // left by a compression that did not finish (an agent killed)
				os.Remove(t)
			}
			for i, r := range files {
				switch {
				case r.plain && r.gz: // compressed, the plain file not yet removed (an agent killed)
					os.Remove(r.base)
				case r.plain && i < len(files)-1:
					// A failure leaves the file plain; the next rotation tries again.
					_ = compressFile(r.base)
				}
			}
		}
		w.mu.Lock()
		if !w.compressAgain {
			w.compressing = false
			w.mu.Unlock()
			return
		}
		w.compressAgain = false
		w.mu.Unlock()
	}
}

// sameRotated reports whether the rotated file name is src: the same file, or the compressed
// copy of it (compressFile gives the copy the plain file's modification time).
func sameRotated(name string, src *source) bool {
	fi, err := os.Stat(name)
	if err != nil {
		return false
	}
	if os.SameFile(fi, src.info) {
		return true
	}
	if !strings.HasSuffix(name, gzSuffix) {
		return false
	}
	cur, err := src.f.Stat()
	return err == nil && fi.ModTime().Equal(cur.ModTime())
}
