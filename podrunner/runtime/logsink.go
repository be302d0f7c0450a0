package runtime

import (
	"io"
	"log/slog"
	"sync"
)

// keepDraining wraps the log stream a task's stdout or stderr is copied into so that a failing
// log file (disk full, I/O error) never stops the copy: containerd's copier gives up on the
// first write error, after which nothing reads the FIFO, the container blocks on its next
// write once the pipe is full, and its logging never resumes. Here the output that cannot be
// written is dropped (the writer's contract), one warning is logged when writing starts to
// fail and one when it works again.
func keepDraining(w io.Writer, path string, log *slog.Logger) io.Writer {
	return &drainingWriter{w: w, path: path, log: log}
}

type drainingWriter struct {
	w       io.Writer
	path    string
	log     *slog.Logger
	mu      sync.Mutex
	failing bool
	dropped int64
}

// Write always reports all of p written.
func (d *drainingWriter) Write(p []byte) (int, error) {
	_, err := d.w.Write(p)
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case err != nil && !d.failing:
		d.failing = true
		d.dropped = int64(len(p))
		if d.log != nil {
			d.log.Warn("cannot write container log; dropping output until it works again", "path", d.path, "err", err)
		}
	case err != nil:
		d.dropped += int64(len(p))
	case d.failing:
		d.failing = false
		if d.log != nil {
			d.log.Info("container log writable again", "path", d.path, "droppedBytes", d.dropped)
		}
	}
	return len(p), nil
}

// Close closes the wrapped stream when it is closable.
func (d *drainingWriter) Close() error {
	if c, ok := d.w.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
