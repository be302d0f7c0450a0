package runtime

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/fifo"
)

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// copyFIFO moves everything a writer puts into a FIFO, in pieces larger and smaller than its
// buffer and with pauses (the reader waits without a buffer), and ends at EOF.
func TestCopyFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	r, err := fifo.OpenFifo(context.Background(), path, syscall.O_RDONLY|syscall.O_CREAT|syscall.O_NONBLOCK, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	var dst lockedBuf
	done := make(chan error, 1)
	go func() { done <- copyFIFO(&dst, r) }()
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	big := bytes.Repeat([]byte("0123456789abcdef"), 8<<10) // 128 KiB, four buffers' worth
	for i, chunk := range [][]byte{[]byte("first line\n"), big, []byte("after a pause\n")} {
		if i == 2 {
			time.Sleep(100 * time.Millisecond)
		}
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
		want.Write(chunk)
	}
	w.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("copyFIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("copyFIFO did not end at EOF")
	}
	r.Close()
	if !bytes.Equal(dst.b.Bytes(), want.Bytes()) {
		t.Fatalf("copied %d bytes, want %d", dst.b.Len(), want.Len())
	}
}

// osThreads is the process's OS thread count.
func osThreads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads: line in /proc/self/status")
	return 0
}

// Opening the FIFOs of many tasks whose shim has not opened them yet holds no OS thread each
// (containerd's fifo package's blocking open did, and the runtime keeps every thread it made).
func TestLogIOOpensWithoutHoldingThreads(t *testing.T) {
	dir := t.TempDir()
	before := osThreads(t)
	var ios []cio.IO
	for i := 0; i < 100; i++ {
		fifos, err := cio.NewFIFOSetInDir(dir, fmt.Sprintf("c%d", i), false)
		if err != nil {
			t.Fatal(err)
		}
		l, err := newLogIO(fifos, io.Discard, io.Discard, true)
		if err != nil {
			t.Fatal(err)
		}
		ios = append(ios, l)
	}
	time.Sleep(200 * time.Millisecond)
	grown := osThreads(t) - before
	for _, l := range ios {
		l.Cancel()
		if err := l.Close(); err != nil {
			t.Error(err)
		}
		l.Wait()
	}
	if grown > 40 { // 200 FIFOs: one blocked open each would be ~200
		t.Fatalf("opening 200 FIFOs without writers made %d OS threads", grown)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("Close left %d FIFO dirs", len(ents))
	}
}

// A new task's copy does not end before the shim has opened its write end (logIO holds one),
// then copies everything and ends at the shim's close. An attached task's FIFO with no writer
// left (the container exited while the agent was down) ends at once instead of waiting forever.
func TestLogIOHoldsTheFIFOUntilTheShimOpensIt(t *testing.T) {
	fifos, err := cio.NewFIFOSetInDir(t.TempDir(), "c", false)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut lockedBuf
	l, err := newLogIO(fifos, &out, &errOut, true)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { l.Wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("the copies ended before the shim opened the FIFOs")
	case <-time.After(200 * time.Millisecond):
	}
	// The shim: opens both write ends during the task's create, then writes and exits.
	var shim []*os.File
	for _, p := range []string{fifos.Stdout, fifos.Stderr} {
		w, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		shim = append(shim, w)
	}
	l.shimOpened()
	time.Sleep(50 * time.Millisecond)
	select {
	case <-waited:
		t.Fatal("the copies ended while the shim still held the FIFOs")
	default:
	}
	_, _ = shim[0].Write([]byte("to stdout\n"))
	_, _ = shim[1].Write([]byte("to stderr\n"))
	for _, w := range shim {
		w.Close()
	}
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the copies did not end after the shim closed the FIFOs")
	}
	if out.b.String() != "to stdout\n" || errOut.b.String() != "to stderr\n" {
		t.Fatalf("stdout %q, stderr %q", out.b.String(), errOut.b.String())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// Attach to FIFOs nobody writes any more.
	gone, err := cio.NewFIFOSetInDir(t.TempDir(), "gone", false)
	if err != nil {
		t.Fatal(err)
	}
	a, err := newLogIO(gone, io.Discard, io.Discard, false)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { a.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("attaching to FIFOs without a writer waited for one")
	}
	_ = a.Close()
}
