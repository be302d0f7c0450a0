package crilog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

func ts(i int) string { return t0.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano) }

// writeRaw creates path (and its directory) with the given CRI lines.
func writeRaw(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o640); err != nil {
		t.Fatal(err)
	}
}

func TestReadLogOptions(t *testing.T) {
	path := logPath(t)
	writeRaw(t, path,
		ts(0)+" stdout F one\n",
		ts(1)+" stderr F err-one\n",
		ts(2)+" stdout P tw\n",
		ts(3)+" stderr F err-two\n",
		"this line is garbage\n",
		ts(4)+" stdout F o\n",
		ts(5)+" stdout F three\n",
		ts(6)+" stderr P err-tail\n",
	)
	tests := []struct {
		name string
		opts ReadOptions
		want string
	}{
		{"all", ReadOptions{Tail: -1}, "one\nerr-one\nerr-two\ntwo\nthree\nerr-tail"},
		{"tail 2", ReadOptions{Tail: 2}, "three\nerr-tail"},
		// Lines are numbered in the order they start: "two" (started before "err-two",
		// ended after it) is not among the last 3.
		{"tail 3", ReadOptions{Tail: 3}, "err-two\nthree\nerr-tail"},
		{"tail 0", ReadOptions{Tail: 0}, ""},
		{"tail beyond", ReadOptions{Tail: 100}, "one\nerr-one\nerr-two\ntwo\nthree\nerr-tail"},
		{"since", ReadOptions{Tail: -1, Since: t0.Add(3 * time.Second)}, "err-two\nthree\nerr-tail"},
		{"since future", ReadOptions{Tail: -1, Since: t0.Add(time.Hour)}, ""},
		{"stderr", ReadOptions{Tail: -1, Stream: Stderr}, "err-one\nerr-two\nerr-tail"},
		{"stdout tail 1", ReadOptions{Tail: 1, Stream: Stdout}, "three\n"},
		{"timestamps", ReadOptions{Tail: -1, Stream: Stdout, Timestamps: true},
			ts(0) + " one\n" + ts(2) + " two\n" + ts(5) + " three\n"},
		{"since tail timestamps", ReadOptions{Tail: 1, Since: t0.Add(time.Second), Stream: Stderr, Timestamps: true},
			ts(6) + " err-tail"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := readAll(t, path, tc.opts); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// A line far longer than what is held back (16 KiB partial chunks, no newline for 300 KiB) is
// printed whole with Tail too, from the two passes' streaming, never collected in memory.
func TestReadLogTailOfLongLines(t *testing.T) {
	path := logPath(t)
	chunk := strings.Repeat("a", 16<<10)
	lines := []string{ts(0) + " stdout F before\n"}
	for i := 0; i < 300/16; i++ {
		lines = append(lines, ts(1)+" stdout P "+chunk+"\n")
	}
	lines = append(lines, ts(2)+" stdout F end\n", ts(3)+" stdout F after\n", ts(4)+" stdout P "+chunk+"\n")
	writeRaw(t, path, lines...)
	long := strings.Repeat(chunk, 300/16) + "end"
	for _, tc := range []struct {
		tail int64
		want string
	}{
		{1, chunk},                      // the unfinished last line
		{2, "after\n" + chunk},          // and the one before
		{3, long + "\nafter\n" + chunk}, // the long one whole
		{-1, "before\n" + long + "\nafter\n" + chunk},
	} {
		got := readAll(t, path, ReadOptions{Tail: tc.tail})
		if got != tc.want {
			t.Errorf("tail %d: got %d bytes (%.40q...), want %d", tc.tail, len(got), got, len(tc.want))
		}
	}
}

func TestReadLogAcrossRotatedFiles(t *testing.T) {
	path := logPath(t)
	writeRaw(t, path+".20240301-120000.000000", ts(0)+" stdout F first\n", ts(1)+" stdout P hel")
	writeRaw(t, path+".20240301-120005.000000", "\n", ts(2)+" stdout P l\n")
	writeRaw(t, path, ts(3)+" stdout F o\n", ts(4)+" stderr F last\n")
	// Names that only share the prefix are not part of this log.
	writeRaw(t, path+".bogus", ts(9)+" stdout F bogus\n")
	writeRaw(t, path+".20240301-120000.00000x", ts(9)+" stdout F bogus\n")
	writeRaw(t, filepath.Join(filepath.Dir(path), "1.log"), ts(9)+" stdout F other\n")

	if got, want := readAll(t, path, ReadOptions{Tail: -1}), "first\nhello\nlast\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}

	// With the live file missing, the rotated files are still read.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got, want := readAll(t, path, ReadOptions{Tail: -1}), "first\nhell"; got != want {
		t.Fatalf("without live file: got %q, want %q", got, want)
	}
}

func TestReadLogErrors(t *testing.T) {
	path := logPath(t)
	err := ReadLog(context.Background(), path, ReadOptions{Tail: -1}, io.Discard)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing log: %v, want fs.ErrNotExist", err)
	}
	writeRaw(t, path, ts(0)+" stdout F x\n")
	if err := ReadLog(context.Background(), path, ReadOptions{Stream: "stdin"}, io.Discard); err == nil {
		t.Error("invalid stream accepted")
	}
}

// fastPoll makes Follow poll every millisecond for the test's duration.
func fastPoll(t *testing.T) {
	old := newPollTicker
	newPollTicker = func() (<-chan time.Time, func()) {
		tk := time.NewTicker(time.Millisecond)
		return tk.C, tk.Stop
	}
	t.Cleanup(func() { newPollTicker = old })
}

// startFollow runs ReadLog with Follow in the background. The returned
// function cancels it and returns its error.
func startFollow(t *testing.T, path string, opts ReadOptions, out io.Writer) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	opts.Follow = true
	go func() { done <- ReadLog(ctx, path, opts, out) }()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { stop() })
	return stop
}

func TestFollow(t *testing.T) {
	fastPoll(t)
	path := logPath(t)
	w := mustWriter(t, path, WithMaxSize(250), WithMaxFiles(5))
	s := w.Stream(Stdout)
	var want strings.Builder
	line := func(i int) {
		l := fmt.Sprintf("line %02d\n", i)
		mustWrite(t, s, l)
		want.WriteString(l)
	}
	for i := range 3 {
		line(i)
	}

	var out syncBuffer
	stop := startFollow(t, path, ReadOptions{Tail: 2}, &out)
	waitFor(t, "tail of existing lines", func() bool { return out.String() == "line 01\nline 02\n" })

	// Lines appended later show up one by one, across several rotations.
	expect := "line 01\nline 02\n"
	for i := 3; i < 30; i++ {
		l := fmt.Sprintf("line %02d\n", i)
		mustWrite(t, s, l)
		expect += l
		waitFor(t, "line "+l, func() bool { return out.String() == expect })
	}
	if rotated, _ := listRotated(path); len(rotated) < 2 {
		t.Fatalf("test did not rotate enough: %v", rotated)
	}
	// A partial line is shown once the reader has caught up.
	mustWrite(t, s, "prompt> ")
	s.Close()
	expect += "prompt> "
	waitFor(t, "partial line", func() bool { return out.String() == expect })

	if err := stop(); err != nil {
		t.Fatalf("ReadLog after cancel: %v", err)
	}
	if got := out.String(); got != expect {
		t.Fatalf("output %q, want %q", got, expect)
	}
}

func TestFollowSeveralRotationsBetweenPolls(t *testing.T) {
	tick := make(chan time.Time)
	old := newPollTicker
	newPollTicker = func() (<-chan time.Time, func()) { return tick, func() {} }
	t.Cleanup(func() { newPollTicker = old })

	path := logPath(t)
	w := mustWriter(t, path, WithMaxSize(200), WithMaxFiles(10))
	s := w.Stream(Stderr)
	mustWrite(t, s, "start\n")

	var out syncBuffer
	stop := startFollow(t, path, ReadOptions{Tail: -1, Timestamps: false}, &out)
	waitFor(t, "initial line", func() bool { return out.String() == "start\n" })

	// While the reader waits for its next poll, the log rotates many times.
	want := "start\n"
	for i := range 20 {
		l := fmt.Sprintf("burst %02d\n", i)
		mustWrite(t, s, l)
		want += l
	}
	if rotated, _ := listRotated(path); len(rotated) < 3 {
		t.Fatalf("test did not rotate enough: %v", rotated)
	}
	// The file the reader holds open, rotated and then compressed, is still known as the one it
	// read (by its modification time): what came after it is read, nothing skipped.
	waitFor(t, "compression", func() bool {
		files, _, _ := rotatedFiles(path)
		for i, r := range files {
			if r.plain != (i == len(files)-1) {
				return false
			}
		}
		return true
	})
	tick <- time.Time{} // blocks until the reader is polling
	waitFor(t, "burst", func() bool { return out.String() == want })

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
}

func TestFollowStopsOnCancel(t *testing.T) {
	fastPoll(t)
	path := logPath(t)
	writeRaw(t, path, ts(0)+" stdout F only\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out syncBuffer
	if err := ReadLog(ctx, path, ReadOptions{Tail: -1, Follow: true}, &out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "only\n" {
		t.Fatalf("got %q", got)
	}
}
