package crilog

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeRotating writes n numbered lines through a Writer that rotates every ~300 bytes and
// closes it (which waits for the background compression); it returns what was written.
func writeRotating(t *testing.T, path string, n int, opts ...WriterOption) string {
	t.Helper()
	clock := newTestClock(time.Second)
	w := mustWriter(t, path, append([]WriterOption{WithMaxSize(300), WithMaxFiles(4), WithClock(clock.Now)}, opts...)...)
	s := w.Stream(Stdout)
	var all strings.Builder
	for i := range n {
		line := fmt.Sprintf("line-%03d\n", i)
		all.WriteString(line)
		mustWrite(t, s, line)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return all.String()
}

func dirNames(t *testing.T, path string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimPrefix(e.Name(), filepath.Base(path)))
	}
	return out
}

// Rotated files but the newest are gzipped, as the kubelet's log manager leaves them; ReadLog
// reads through them, in order.
func TestRotatedFilesCompressed(t *testing.T) {
	path := logPath(t)
	all := writeRotating(t, path, 200)
	files, tmps, err := rotatedFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 || len(tmps) != 0 {
		t.Fatalf("rotated %+v, temporary %v; want 3 and none (files: %v)", files, tmps, dirNames(t, path))
	}
	for i, r := range files {
		if last := i == len(files)-1; r.plain != last || r.gz == last {
			t.Errorf("%s: plain %v, compressed %v; only the newest should be plain", r.base, r.plain, r.gz)
		}
	}
	// A compressed file holds CRI lines.
	f, err := os.Open(files[0].name())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n") {
		if _, err := ParseLine([]byte(l)); err != nil {
			t.Fatalf("compressed file's line %q: %v", l, err)
		}
	}
	got := readAll(t, path, ReadOptions{Tail: -1})
	if !strings.HasSuffix(all, got) || !strings.HasPrefix(got, "line-") || strings.Count(got, "\n") < 20 {
		t.Fatalf("ReadLog returned %q", got)
	}
	if tail := readAll(t, path, ReadOptions{Tail: 2}); tail != "line-198\nline-199\n" {
		t.Fatalf("tail 2: %q", tail)
	}
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	if left := dirNames(t, path); len(left) != 0 {
		t.Fatalf("left after Remove: %v", left)
	}
}

func TestRotatedFilesUncompressed(t *testing.T) {
	path := logPath(t)
	writeRotating(t, path, 200, WithCompression(false))
	files, _, err := rotatedFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range files {
		if !r.plain || r.gz {
			t.Errorf("%s compressed with compression off", r.base)
		}
	}
}

// What a compression cut short leaves (an agent killed): a temporary file, or a plain file beside
// its compressed copy. The plain one is read; the next rotation's pass clears both.
func TestRotatedLeftovers(t *testing.T) {
	path := logPath(t)
	stamp := func(i int) string {
		return path + "." + time.Date(2020, 1, 1, 0, 0, i, 0, time.UTC).Format(rotatedLayout)
	}
	line := func(s string) string { return "2020-01-01T00:00:00.000000000Z stdout F " + s + "\n" }
	gz := func(name, content string) {
		f, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		zw := gzip.NewWriter(f)
		io.WriteString(zw, content)
		zw.Close()
		f.Close()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	gz(stamp(1)+gzSuffix, line("one"))
	os.WriteFile(stamp(2), []byte(line("two")), 0o640)
	gz(stamp(2)+gzSuffix, line("two"))
	os.WriteFile(stamp(3), []byte(line("three")), 0o640)
	os.WriteFile(stamp(3)+gzSuffix+tmpSuffix, []byte("half a gzip"), 0o640)
	if got, err := listRotated(path); err != nil || !slices.Equal(got, []string{stamp(1) + gzSuffix, stamp(2), stamp(3)}) {
		t.Fatalf("listRotated: %v %v", got, err)
	}
	if got := readAll(t, path, ReadOptions{Tail: -1}); got != "one\ntwo\nthree\n" {
		t.Fatalf("ReadLog: %q", got)
	}
	// A rotation (a new writer on the same path, as after an agent restart) clears them.
	w := mustWriter(t, path, WithMaxSize(60), WithMaxFiles(10))
	mustWrite(t, w.Stream(Stdout), "four\nfive\n")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, tmps, _ := rotatedFiles(path)
	if len(tmps) != 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
	for i, r := range files {
		if r.plain && (r.gz || i < len(files)-1) {
			t.Errorf("%s: plain %v, compressed %v", r.base, r.plain, r.gz)
		}
	}
	if got := readAll(t, path, ReadOptions{Tail: -1}); got != "one\ntwo\nthree\nfour\nfive\n" {
		t.Fatalf("ReadLog after the rotation: %q (files %v)", got, dirNames(t, path))
	}
}
