package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"

	"github.com/containerd/containerd/v2/pkg/cio"
)

// A container's stdout and stderr reach its CRI log through FIFOs the shim writes. containerd's
// cio copies each FIFO with a 32 KiB buffer held for the container's whole life (two per
// container: ~7 MiB of an agent's memory at 110 pods, most of it idle). logIO copies the same
// FIFOs but waits for data without a buffer (the runtime's poller tells when the FIFO is
// readable) and borrows one from a pool only for the read and the write that follow.

// copyBufs are the buffers the FIFO copies borrow while data is there.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// logIO is a cio.IO for a task's stdout and stderr FIFOs (no stdin, no terminal).
type logIO struct {
	*cio.DirectIO
	wg sync.WaitGroup
}

// Wait returns once both copies have ended (the shim closed its end of the FIFOs, or Close).
func (l *logIO) Wait() { l.wg.Wait() }

// newLogIO opens fifos and copies them into stdout and stderr until the shim closes them.
func newLogIO(fifos *cio.FIFOSet, stdout, stderr io.Writer) (cio.IO, error) {
	fifos.Stdin, fifos.Terminal = "", false
	dio, err := cio.NewDirectIO(context.Background(), fifos)
	if err != nil {
		return nil, fmt.Errorf("open the log FIFOs: %w", err)
	}
	l := &logIO{DirectIO: dio}
	for _, p := range []struct {
		src io.ReadCloser
		dst io.Writer
	}{{dio.Stdout, stdout}, {dio.Stderr, stderr}} {
		if p.src == nil {
			continue
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			_ = copyFIFO(p.dst, p.src)
			p.src.Close()
		}()
	}
	return l, nil
}

// logCreator is the cio.Creator of a new task whose output goes to stdout and stderr.
func logCreator(fifoDir string, stdout, stderr io.Writer) cio.Creator {
	return func(id string) (cio.IO, error) {
		fifos, err := cio.NewFIFOSetInDir(fifoDir, id, false)
		if err != nil {
			return nil, err
		}
		return newLogIO(fifos, stdout, stderr)
	}
}

// logAttach re-attaches to a running task's FIFOs (after an agent restart).
func logAttach(stdout, stderr io.Writer) cio.Attach {
	return func(fifos *cio.FIFOSet) (cio.IO, error) {
		if fifos == nil {
			return nil, errors.New("cannot attach: the task has no FIFOs")
		}
		return newLogIO(fifos, stdout, stderr)
	}
}

// copyFIFO copies src to dst until EOF (every writer gone) or a read error. With a src that
// exposes its file descriptor it holds a buffer only while there is data to move; otherwise it
// falls back to a plain copy.
func copyFIFO(dst io.Writer, src io.Reader) error {
	sc, ok := src.(syscall.Conn)
	if !ok {
		return plainCopy(dst, src)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return plainCopy(dst, src)
	}
	for {
		var bp *[]byte
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			if bp == nil {
				bp = copyBufs.Get().(*[]byte)
			}
			for {
				n, rerr = syscall.Read(int(fd), *bp)
				if rerr != syscall.EINTR {
					break
				}
			}
			if rerr == syscall.EAGAIN {
				copyBufs.Put(bp) // nothing to read: wait without a buffer
				bp = nil
				return false
			}
			return true
		})
		if err != nil {
			if bp != nil {
				copyBufs.Put(bp)
			}
			return err // closed
		}
		if n > 0 {
			_, _ = dst.Write((*bp)[:n]) // the destination keeps draining on errors (keepDraining)
		}
		copyBufs.Put(bp)
		if rerr != nil {
			return rerr
		}
		if n == 0 {
			return nil // EOF: the shim closed its end
		}
	}
}

func plainCopy(dst io.Writer, src io.Reader) error {
	buf := make([]byte, 4<<10)
	_, err := io.CopyBuffer(dst, src, buf)
	return err
}
