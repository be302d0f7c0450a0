package runtime

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/containerd/containerd/v2/pkg/cio"
)

// A container's stdout and stderr reach its CRI log through FIFOs the shim writes. containerd's
// cio copies each FIFO with a 32 KiB buffer held for the container's whole life (two per
// container: ~7 MiB of an agent's memory at 110 pods, most of it idle). logIO copies the same
// FIFOs but waits for data without a buffer (the runtime's poller tells when the FIFO is
// readable) and borrows one from a pool only for the read and the write that follow.
//
// It also opens the FIFOs without ever blocking an OS thread. containerd's fifo package opens
// the read end with a blocking open(2) in a goroutine of its own until the shim opens the write
// end; every container being created holds a thread that way, and the Go runtime keeps every
// thread it made (110 pods started at once left the agent 120-140 threads, ~50 KiB each, for its
// life). logIO opens the read end O_NONBLOCK (which never waits) and, for a new task, holds a
// write end of its own (which then never waits either) until the shim has opened its own in
// the task's create: without it, a read before the shim's open would see EOF.

// copyBufs are the buffers the FIFO copies borrow while data is there.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// logIO is a cio.IO for a task's stdout and stderr FIFOs; a stdin FIFO, when the task has one,
// is held by another process (stdin.go), never by logIO.
type logIO struct {
	fifos   *cio.FIFOSet
	readers []*os.File
	mu      sync.Mutex
	holders []int // our own write ends, until shimOpened
	wg      sync.WaitGroup
}

func (l *logIO) Config() cio.Config { return l.fifos.Config }

// Cancel gives up the write ends logIO holds: the copies then end once the shim's writers are
// gone. containerd calls it before Close, and before Wait when the task is deleted.
func (l *logIO) Cancel() { l.shimOpened() }

// shimOpened drops the write ends held for a new task once the shim has opened its own (the
// task's create has returned). Idempotent.
func (l *logIO) shimOpened() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, fd := range l.holders {
		_ = syscall.Close(fd)
	}
	l.holders = nil
}

// Wait returns once both copies have ended (the shim closed its end of the FIFOs, or Close).
func (l *logIO) Wait() { l.wg.Wait() }

// Close ends the copies and removes the FIFOs.
func (l *logIO) Close() error {
	l.shimOpened()
	for _, r := range l.readers {
		_ = r.Close()
	}
	return l.fifos.Close()
}

// newLogIO opens fifos (creating them when missing) and copies them into stdout and stderr
// until the shim closes them. hold: a new task, whose shim has not opened the FIFOs yet.
func newLogIO(fifos *cio.FIFOSet, stdout, stderr io.Writer, hold bool) (*logIO, error) {
	fifos.Stdin, fifos.Terminal = "", false
	l := &logIO{fifos: fifos}
	for _, p := range []struct {
		path string
		dst  io.Writer
	}{{fifos.Stdout, stdout}, {fifos.Stderr, stderr}} {
		if p.path == "" {
			continue
		}
		r, err := openFIFOReader(p.path)
		if err == nil && hold {
			var fd int
			if fd, err = syscall.Open(p.path, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0); err == nil {
				l.holders = append(l.holders, fd)
			} else {
				r.Close()
				err = fmt.Errorf("open %s for writing: %w", p.path, err)
			}
		}
		if err != nil {
			_ = l.Close()
			return nil, fmt.Errorf("open the log FIFOs: %w", err)
		}
		l.readers = append(l.readers, r)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			_ = copyFIFO(p.dst, r)
			r.Close()
		}()
	}
	return l, nil
}

// openFIFOReader opens the read end of the FIFO at path, creating it (mode 0700) when missing,
// without waiting for a writer; the file is non-blocking, read through the runtime's poller.
func openFIFOReader(path string) (*os.File, error) {
	if err := syscall.Mkfifo(path, 0o700); err != nil && !errors.Is(err, syscall.EEXIST) {
		return nil, fmt.Errorf("create FIFO %s: %w", path, err)
	}
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("open %s: not a FIFO", path)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// logCreator is the cio.Creator of a new task whose output goes to stdout and stderr. With
// stdin, the task's stdin FIFO is made and held open (startStdin: stdin.go); with tty, the shim
// makes the container a terminal and its one output stream is stdout.
func logCreator(fifoDir string, stdout, stderr io.Writer, tty bool, startStdin func(path string) error) cio.Creator {
	return func(id string) (cio.IO, error) {
		fifos, err := cio.NewFIFOSetInDir(fifoDir, id, tty)
		if err != nil {
			return nil, err
		}
		stdinPath := fifos.Stdin
		l, err := newLogIO(fifos, stdout, stderr, true)
		if err != nil {
			return nil, err
		}
		l.fifos.Terminal = tty
		if startStdin != nil {
			if err := startStdin(stdinPath); err != nil {
				_ = l.Close()
				return nil, err
			}
			l.fifos.Stdin = stdinPath
		}
		return l, nil
	}
}

// logAttach re-attaches to a running task's FIFOs (after an agent restart).
func logAttach(stdout, stderr io.Writer) cio.Attach {
	return func(fifos *cio.FIFOSet) (cio.IO, error) {
		if fifos == nil {
			return nil, errors.New("cannot attach: the task has no FIFOs")
		}
		l, err := newLogIO(fifos, stdout, stderr, false)
		if err != nil {
			return nil, err
		}
		return l, nil
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
