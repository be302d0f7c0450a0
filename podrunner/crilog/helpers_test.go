package crilog

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testClock is a settable clock; each call can optionally advance it.
type testClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func newTestClock(step time.Duration) *testClock {
	return &testClock{now: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), step: step}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now
	c.now = c.now.Add(c.step)
	return t
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls cond until it holds; the deadline only guards against hangs.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func logPath(t *testing.T) string {
	return filepath.Join(t.TempDir(), "ns_pod_uid", "app", "0.log")
}

func mustWriter(t *testing.T, path string, opts ...WriterOption) *Writer {
	t.Helper()
	w, err := NewWriter(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func mustWrite(t *testing.T, w interface{ Write([]byte) (int, error) }, s string) {
	t.Helper()
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

// readAll runs a non-following ReadLog and returns its output.
func readAll(t *testing.T, path string, opts ReadOptions) string {
	t.Helper()
	var out bytes.Buffer
	if err := ReadLog(context.Background(), path, opts, &out); err != nil {
		t.Fatalf("ReadLog(%+v): %v", opts, err)
	}
	return out.String()
}

// rawEntries parses every line of the file at path.
func rawEntries(t *testing.T, path string) []Entry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var entries []Entry
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if line == "" {
			continue
		}
		if !strings.HasSuffix(line, "\n") {
			t.Fatalf("unterminated line %q", line)
		}
		e, err := ParseLine([]byte(line))
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		entries = append(entries, e)
	}
	return entries
}
