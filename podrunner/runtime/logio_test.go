package runtime

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

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
