package crilog

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWriterLineFormat(t *testing.T) {
	path := logPath(t)
	clock := newTestClock(0)
	w := mustWriter(t, path, WithClock(clock.Now))

	out, errs := w.Stream(Stdout), w.Stream(Stderr)
	mustWrite(t, out, "hello\nwor")
	mustWrite(t, out, "ld\n\n")
	mustWrite(t, errs, "oops")
	if err := errs.Close(); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, out, "tail")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	ts := "2024-01-02T03:04:05.000000000Z"
	want := ts + " stdout F hello\n" +
		ts + " stdout F world\n" +
		ts + " stdout F \n" +
		ts + " stderr P oops\n" +
		ts + " stdout P tail\n"
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("file content:\n%s\nwant:\n%s", got, want)
	}

	entries := rawEntries(t, path)
	if len(entries) != 5 || !entries[0].Time.Equal(clock.Now()) || entries[3].Stream != Stderr || !entries[4].Partial {
		t.Fatalf("parsed back: %+v", entries)
	}

	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm&^0o640 != 0 {
		t.Errorf("file mode %v, want at most 0640", perm)
	}
	if _, err := out.Write([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("write after Close: %v, want ErrClosed", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestWriterAppendsToExistingFile(t *testing.T) {
	path := logPath(t)
	for _, s := range []string{"first\n", "second\n"} {
		w := mustWriter(t, path)
		mustWrite(t, w.Stream(Stdout), s)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if got := readAll(t, path, ReadOptions{Tail: -1}); got != "first\nsecond\n" {
		t.Fatalf("got %q", got)
	}
}

func TestLongLineSplit(t *testing.T) {
	long := strings.Repeat("abcdefgh", 5*1024) // 40 KiB
	cases := []struct {
		name   string
		frag   int // write fragment size; 0 = one write
		input  string
		closed bool // close the stream instead of ending with a newline
		want   []int
		tags   string
	}{
		{"one write", 0, long, false, []int{16384, 16384, 8192}, "PPF"},
		{"fragments", 1000, long, false, []int{16384, 16384, 8192}, "PPF"},
		{"exactly max", 7, long[:MaxLineSize], false, []int{16384}, "F"},
		{"max plus one", 0, long[:MaxLineSize+1], false, []int{16384, 1}, "PF"},
		{"unterminated", 0, long[:MaxLineSize], true, []int{16384}, "P"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := logPath(t)
			w := mustWriter(t, path)
			s := w.Stream(Stdout)
			in := tc.input
			if !tc.closed {
				in += "\n"
			}
			frag := tc.frag
			if frag == 0 {
				frag = len(in)
			}
			for len(in) > 0 {
				n := min(frag, len(in))
				mustWrite(t, s, in[:n])
				in = in[n:]
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			var sizes []int
			var tags string
			for _, e := range rawEntries(t, path) {
				sizes = append(sizes, len(e.Text))
				tags += map[bool]string{true: "P", false: "F"}[e.Partial]
			}
			if !slices.Equal(sizes, tc.want) || tags != tc.tags {
				t.Fatalf("chunks %v %s, want %v %s", sizes, tags, tc.want, tc.tags)
			}
			want := tc.input
			if !tc.closed {
				want += "\n"
			}
			if got := readAll(t, path, ReadOptions{Tail: -1}); got != want {
				t.Fatalf("ReadLog returned %d bytes, want %d", len(got), len(want))
			}
		})
	}
}

// Line ends as containerd's CRI log copier reads them: "\n" or "\r\n" ends a line and neither
// is part of its text; any other "\r" is text.
func TestLineEnds(t *testing.T) {
	long := strings.Repeat("x", MaxLineSize)
	cases := []struct {
		name   string
		writes []string
		closed bool     // close the stream after the writes
		want   []string // chunks, each "<tag> <text>"
		read   string   // what ReadLog gives back
	}{
		{"crlf", []string{"a\r\nb\n"}, false, []string{"F a", "F b"}, "a\nb\n"},
		{"crlf across writes", []string{"a\r", "\nb\n"}, false, []string{"F a", "F b"}, "a\nb\n"},
		{"lone cr is text", []string{"a\rb\n"}, false, []string{"F a\rb"}, "a\rb\n"},
		{"one cr of two dropped", []string{"a\r\r\n"}, false, []string{"F a\r"}, "a\r\n"},
		{"cr at close is text", []string{"a\r"}, true, []string{"P a\r"}, "a\r"},
		{"empty crlf line", []string{"\r\n"}, false, []string{"F "}, "\n"},
		{"max then crlf across writes", []string{long + "\r", "\n"}, false, []string{"F " + long}, long + "\n"},
		{"max then cr as text", []string{long + "\r", "y\n"}, false, []string{"P " + long, "F \ry"}, long + "\ry\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := logPath(t)
			w := mustWriter(t, path)
			s := w.Stream(Stdout)
			for _, in := range tc.writes {
				mustWrite(t, s, in)
			}
			if tc.closed {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range rawEntries(t, path) {
				got = append(got, map[bool]string{true: "P", false: "F"}[e.Partial]+" "+string(e.Text))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("chunks %q, want %q", got, tc.want)
			}
			if got := readAll(t, path, ReadOptions{Tail: -1}); got != tc.read {
				t.Fatalf("ReadLog gave %q, want %q", got, tc.read)
			}
		})
	}
}

func TestConcurrentStreamsDoNotInterleave(t *testing.T) {
	path := logPath(t)
	w := mustWriter(t, path)

	// Each goroutine writes its own lines in random fragments; some lines
	// are longer than MaxLineSize so P chunks are exercised too.
	produce := func(name string, seed uint64) string {
		rng := rand.New(rand.NewPCG(seed, 1))
		var all strings.Builder
		for i := range 300 {
			pad := 10 + rng.IntN(100)
			if i%50 == 0 {
				pad = MaxLineSize + 500
			}
			all.WriteString(fmt.Sprintf("%s-%d-%s\n", name, i, strings.Repeat(name[3:4], pad)))
		}
		return all.String()
	}
	inputs := map[string]string{Stdout: produce(Stdout, 1), Stderr: produce(Stderr, 2)}

	var wg sync.WaitGroup
	for name, data := range inputs {
		wg.Go(func() {
			s := w.Stream(name)
			rng := rand.New(rand.NewPCG(uint64(len(name)), 7))
			for len(data) > 0 {
				n := min(1+rng.IntN(200), len(data))
				if _, err := s.Write([]byte(data[:n])); err != nil {
					t.Error(err)
					return
				}
				data = data[n:]
			}
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// Every stored line must parse and belong wholly to its stream.
	for _, e := range rawEntries(t, path) {
		other := map[string]string{Stdout: "e", Stderr: "o"}[e.Stream]
		if strings.Contains(string(e.Text), other) {
			t.Fatalf("%s line contains %q: %.80q", e.Stream, other, e.Text)
		}
	}
	for name, want := range inputs {
		if got := readAll(t, path, ReadOptions{Tail: -1, Stream: name}); got != want {
			t.Errorf("%s: reassembled output differs from input (%d vs %d bytes)", name, len(got), len(want))
		}
	}
}

func TestRotation(t *testing.T) {
	for _, tc := range []struct {
		name string
		step time.Duration
	}{
		{"advancing clock", time.Second},
		{"stalled clock", 0}, // rotated names must still be unique and ordered
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := logPath(t)
			const maxSize, maxFiles = 300, 3
			clock := newTestClock(tc.step)
			w := mustWriter(t, path, WithMaxSize(maxSize), WithMaxFiles(maxFiles), WithClock(clock.Now))
			s := w.Stream(Stdout)
			var lines []string
			for i := range 200 {
				lines = append(lines, fmt.Sprintf("line-%03d\n", i))
				mustWrite(t, s, lines[i])
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}

			entries, err := os.ReadDir(filepath.Dir(path))
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != maxFiles {
				t.Fatalf("%d files, want %d", len(entries), maxFiles)
			}
			for _, e := range entries {
				fi, err := e.Info()
				if err != nil {
					t.Fatal(err)
				}
				if fi.Size() > maxSize {
					t.Errorf("%s is %d bytes, over the max", e.Name(), fi.Size())
				}
			}
			rotated, err := listRotated(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(rotated) != maxFiles-1 {
				t.Fatalf("rotated files %v", rotated)
			}

			// ReadLog returns a contiguous, in-order suffix of what was written.
			got := readAll(t, path, ReadOptions{Tail: -1})
			all := strings.Join(lines, "")
			if got == "" || !strings.HasSuffix(all, got) || !strings.HasPrefix(got, "line-") {
				t.Fatalf("ReadLog returned %q", got)
			}
			if n := strings.Count(got, "\n"); n < 2*maxSize/len("2024-01-02T03:04:05.000000000Z stdout F line-000\n") {
				t.Fatalf("only %d lines retained", n)
			}
		})
	}
}

func TestWriterOneFileRotation(t *testing.T) {
	path := logPath(t)
	w := mustWriter(t, path, WithMaxSize(100), WithMaxFiles(1))
	s := w.Stream(Stderr)
	for i := range 20 {
		mustWrite(t, s, fmt.Sprintf("message %d\n", i))
	}
	if rotated, _ := listRotated(path); len(rotated) != 0 {
		t.Fatalf("rotated files kept: %v", rotated)
	}
	if got := readAll(t, path, ReadOptions{Tail: -1}); !strings.HasSuffix(got, "message 19\n") {
		t.Fatalf("got %q", got)
	}
}

func TestCopyFrom(t *testing.T) {
	path := logPath(t)
	w := mustWriter(t, path)
	if err := w.CopyFrom(Stdout, strings.NewReader("a\nb\nc")); err != nil {
		t.Fatal(err)
	}
	if err := w.CopyFrom(Stderr, io.MultiReader(strings.NewReader("partial"), errReader{})); err == nil {
		t.Fatal("read error not reported")
	}
	var got []string
	for _, e := range rawEntries(t, path) {
		got = append(got, fmt.Sprintf("%s %v %s", e.Stream, e.Partial, e.Text))
	}
	want := []string{"stdout false a", "stdout false b", "stdout true c", "stderr true partial"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("boom") }

func TestWriterInvalidUse(t *testing.T) {
	path := logPath(t)
	if _, err := NewWriter(path, WithMaxSize(0)); err == nil {
		t.Error("max size 0 accepted")
	}
	if _, err := NewWriter(path, WithMaxFiles(0)); err == nil {
		t.Error("max files 0 accepted")
	}
	w := mustWriter(t, path)
	if _, err := w.Stream("stdin").Write([]byte("x\n")); err == nil {
		t.Error("invalid stream accepted")
	}
	if err := w.CopyFrom("stdin", strings.NewReader("x")); err == nil {
		t.Error("CopyFrom accepted invalid stream")
	}
	w.Close()
	if _, err := w.Stream(Stdout).Write([]byte("x\n")); !errors.Is(err, ErrClosed) {
		t.Errorf("stream of closed writer: %v", err)
	}
	if err := w.CopyFrom(Stdout, strings.NewReader("x\n")); !errors.Is(err, ErrClosed) {
		t.Errorf("CopyFrom on closed writer: %v", err)
	}
}

// Remove takes the live file and its rotated predecessors, and nothing that merely shares the
// prefix.
func TestRemoveLogAndRotated(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "3.log")
	keep := []string{filepath.Join(dir, "3.logx"), filepath.Join(dir, "4.log"), filepath.Join(dir, "3.log.not-a-time")}
	gone := []string{path, path + ".20261203-061500.000001", path + ".20261203-061600.000002"}
	for _, p := range append(append([]string{}, keep...), gone...) {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	for _, p := range gone {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there", p)
		}
	}
	for _, p := range keep {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	if err := Remove(filepath.Join(dir, "missing", "0.log")); err != nil {
		t.Errorf("missing log: %v", err)
	}
}
