package crilog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Defaults for NewWriter.
const (
	DefaultMaxSize  int64 = 10 << 20 // 10 MiB
	DefaultMaxFiles       = 5        // the live file and 4 rotated ones
)

// ErrClosed is returned by writes to a closed Writer or stream.
var ErrClosed = errors.New("crilog: writer closed")

// rotatedLayout is the UTC timestamp appended to rotated file names. It is
// fixed-width, so lexical order is chronological order.
const rotatedLayout = "20060102-150405.000000"

// flushThreshold bounds how many formatted bytes a Writer buffers before
// writing them to the file within one call.
const flushThreshold = 64 << 10

// WriterOption configures NewWriter.
type WriterOption func(*writerConfig)

type writerConfig struct {
	maxSize  int64
	maxFiles int
	compress bool
	clock    func() time.Time
}

// WithMaxSize sets the size in bytes at which the live file is rotated
// (default DefaultMaxSize). A single line larger than this still gets
// written, alone in its file.
func WithMaxSize(size int64) WriterOption {
	return func(c *writerConfig) { c.maxSize = size }
}

// WithMaxFiles sets how many files are kept, counting the live file
// (default DefaultMaxFiles). With 1, rotation discards the old content.
func WithMaxFiles(n int) WriterOption {
	return func(c *writerConfig) { c.maxFiles = n }
}

// WithCompression sets whether rotated files but the newest are gzipped in the background
// (default true, as the kubelet's log manager does).
func WithCompression(on bool) WriterOption {
	return func(c *writerConfig) { c.compress = on }
}

// WithClock replaces time.Now for line timestamps and rotated file names.
// Intended for tests. A nil clock is ignored.
func WithClock(now func() time.Time) WriterOption {
	return func(c *writerConfig) {
		if now != nil {
			c.clock = now
		}
	}
}

// Writer writes one container's log file in CRI format and rotates it by
// size. It is safe for concurrent use: each stream's lines are written
// whole, so output of different streams never mixes inside a line.
type Writer struct {
	path string
	cfg  writerConfig

	mu      sync.Mutex
	f       *os.File // live file; nil after a failed reopen
	size    int64    // bytes in the live file, including buf
	buf     []byte   // formatted lines not yet written to f
	streams []*stream
	closed  bool

	compressing, compressAgain bool           // a compression pass runs; another is due after it
	compressDone               sync.WaitGroup // the running pass, waited for by Close
}

// NewWriter opens the log file at path for appending, creating it (mode
// 0640) and its parent directories (mode 0755) if needed.
func NewWriter(path string, opts ...WriterOption) (*Writer, error) {
	cfg := writerConfig{maxSize: DefaultMaxSize, maxFiles: DefaultMaxFiles, compress: true, clock: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.maxSize <= 0 {
		return nil, fmt.Errorf("crilog: max size must be positive, got %d", cfg.maxSize)
	}
	if cfg.maxFiles < 1 {
		return nil, fmt.Errorf("crilog: max files must be at least 1, got %d", cfg.maxFiles)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("crilog: create log directory: %w", err)
	}
	w := &Writer{path: path, cfg: cfg}
	if err := w.openLive(); err != nil {
		return nil, err
	}
	return w, nil
}

// Path returns the path of the live log file.
func (w *Writer) Path() string { return w.path }

// Stream returns a writer for the stream "stdout" or "stderr". Bytes are
// split into lines (ending at "\n" or "\r\n", neither kept); a trailing
// partial line is buffered until its newline arrives, until it exceeds
// MaxLineSize (then MaxLineSize bytes are written as a P chunk), or until
// Close (then it is written as a P chunk).
//
// Each call returns an independent stream with its own buffer; a stream is
// not meant to be written by several goroutines at once. For an unknown
// name, or after the Writer is closed, the returned stream's Write fails.
// Write always consumes all of p: if the file cannot be written, the
// affected lines are lost and the error is returned.
func (w *Writer) Stream(name string) io.WriteCloser {
	s := &stream{w: w, name: name}
	if name != Stdout && name != Stderr {
		s.err = fmt.Errorf("crilog: invalid stream name %q", name)
		return s
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		s.err = ErrClosed
		return s
	}
	w.streams = append(w.streams, s)
	return s
}

// CopyFrom copies r into a new stream called name until EOF, then flushes
// and closes that stream. After a write error it keeps draining r, so a
// producer such as a container writing into a FIFO never blocks, and returns
// the first error at the end. A read error ends the copy.
func (w *Writer) CopyFrom(name string, r io.Reader) error {
	s := w.Stream(name)
	if st := s.(*stream); st.err != nil && st.err != ErrClosed {
		return st.err
	}
	var firstErr error
	buf := make([]byte, 32<<10)
	for {
		n, rerr := r.Read(buf)
		if n > 0 && firstErr == nil {
			if _, err := s.Write(buf[:n]); err != nil {
				firstErr = fmt.Errorf("crilog: copy %s: %w", name, err)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("crilog: copy %s: read: %w", name, rerr)
			}
			break
		}
	}
	if err := s.Close(); err != nil && firstErr == nil {
		firstErr = fmt.Errorf("crilog: copy %s: %w", name, err)
	}
	return firstErr
}

// Close flushes the partial lines of all open streams as P chunks and
// closes the file, then waits for a running compression of rotated files.
// Later writes fail with ErrClosed. Close is idempotent.
func (w *Writer) Close() error {
	defer w.compressDone.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	ts := w.now()
	var errs []error
	for _, s := range w.streams {
		errs = append(errs, s.flushPartial(ts))
		s.closed = true
	}
	w.streams = nil
	errs = append(errs, w.flush())
	if w.f != nil {
		if err := w.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("crilog: close %s: %w", w.path, err))
		}
		w.f = nil
	}
	return errors.Join(errs...)
}

// now returns the current timestamp formatted for a log line.
func (w *Writer) now() string {
	return w.cfg.clock().UTC().Format(timeLayout)
}

// openLive opens (or creates) the live file and records its size, which
// must account for nothing buffered: callers flush before reopening.
func (w *Writer) openLive() error {
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("crilog: open log file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("crilog: stat log file: %w", err)
	}
	w.f = f
	w.size = fi.Size() + int64(len(w.buf))
	return nil
}

// writeLine appends a complete line of text, splitting it into P chunks of
// MaxLineSize followed by a final F chunk. Callers hold w.mu.
func (w *Writer) writeLine(streamName, ts string, text []byte) error {
	var errs []error
	for len(text) > MaxLineSize {
		errs = append(errs, w.appendChunk(streamName, ts, 'P', text[:MaxLineSize]))
		text = text[MaxLineSize:]
	}
	errs = append(errs, w.appendChunk(streamName, ts, 'F', text))
	return errors.Join(errs...)
}

// appendChunk formats one CRI line into w.buf, rotating first if the line
// would push the live file past the maximum size. If rotation fails the
// line still goes to the current file. Callers hold w.mu.
func (w *Writer) appendChunk(streamName, ts string, tag byte, text []byte) error {
	var rerr error
	n := int64(len(ts) + 1 + len(streamName) + 3 + len(text) + 1)
	if w.size > 0 && w.size+n > w.cfg.maxSize {
		rerr = w.rotate()
	}
	w.buf = append(w.buf, ts...)
	w.buf = append(w.buf, ' ')
	w.buf = append(w.buf, streamName...)
	w.buf = append(w.buf, ' ', tag, ' ')
	w.buf = append(w.buf, text...)
	w.buf = append(w.buf, '\n')
	w.size += n
	if len(w.buf) >= flushThreshold {
		return errors.Join(rerr, w.flush())
	}
	return rerr
}

// flush writes buffered lines to the live file, reopening it if an earlier
// rotation left no file open. On failure the buffered lines are dropped.
// Callers hold w.mu.
func (w *Writer) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if w.f == nil {
		if err := w.openLive(); err != nil {
			w.size -= int64(len(w.buf))
			w.buf = w.buf[:0]
			return err
		}
	}
	n, err := w.f.Write(w.buf)
	w.size -= int64(len(w.buf) - n)
	w.buf = w.buf[:0]
	if cap(w.buf) > 4*flushThreshold {
		w.buf = nil // don't pin a buffer grown by one huge write
	}
	if err != nil {
		return fmt.Errorf("crilog: write %s: %w", w.path, err)
	}
	return nil
}

// rotate renames the live file to a timestamped name, opens a new live file
// and deletes the oldest rotated files beyond maxFiles-1. Callers hold w.mu.
func (w *Writer) rotate() error {
	if err := w.flush(); err != nil {
		return err
	}
	if w.f == nil {
		return w.openLive()
	}
	name, err := w.nextRotatedName()
	if err != nil {
		return err
	}
	if err := os.Rename(w.path, name); err != nil {
		return fmt.Errorf("crilog: rotate %s: %w", w.path, err)
	}
	// Writes to the old descriptor would land in the rotated file; drop it.
	closeErr := w.f.Close()
	w.f = nil
	w.size = 0
	errs := []error{w.openLive(), w.prune()}
	if closeErr != nil {
		errs = append(errs, fmt.Errorf("crilog: close rotated file: %w", closeErr))
	}
	w.startCompress()
	return errors.Join(errs...)
}

// nextRotatedName returns a rotated-file name for the current time, moved
// past the newest existing rotated file so names stay unique and ordered
// even if the clock stalls or steps back.
func (w *Writer) nextRotatedName() (string, error) {
	existing, _, err := rotatedFiles(w.path)
	if err != nil {
		return "", err
	}
	t := w.cfg.clock().UTC().Truncate(time.Microsecond)
	if len(existing) > 0 {
		if lt := existing[len(existing)-1].stamp; !t.After(lt) {
			t = lt.Add(time.Microsecond)
		}
	}
	return w.path + "." + t.Format(rotatedLayout), nil
}

// prune deletes the oldest rotated files so that at most maxFiles-1 remain.
func (w *Writer) prune() error {
	files, _, err := rotatedFiles(w.path)
	if err != nil {
		return err
	}
	var errs []error
	for len(files) > w.cfg.maxFiles-1 {
		errs = append(errs, files[0].remove())
		files = files[1:]
	}
	return errors.Join(errs...)
}

// stream is the io.WriteCloser returned by Writer.Stream. All its state is
// guarded by the owning Writer's mutex.
type stream struct {
	w      *Writer
	name   string
	buf    []byte // the current line's bytes not yet written
	closed bool
	err    error // set at creation for unusable streams
}

// Write implements io.Writer; see Writer.Stream.
func (s *stream) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if s.closed || w.closed {
		return 0, ErrClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	ts := w.now()
	var errs []error
	rest := p
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			s.buf = append(s.buf, rest...)
			break
		}
		line := rest[:i]
		rest = rest[i+1:]
		if len(s.buf) > 0 {
			s.buf = append(s.buf, line...)
			line = s.buf
		}
		// A line ends at "\n" or "\r\n", neither kept: as the CRI's log copier reads lines.
		line = bytes.TrimSuffix(line, []byte{'\r'})
		errs = append(errs, w.writeLine(s.name, ts, line))
		s.buf = s.buf[:0]
	}
	// Emit full-size P chunks of an overlong unfinished line. A trailing "\r" waits: it may be
	// the start of a "\r\n" line end, which is not the line's text.
	off, avail := 0, len(s.buf)
	if avail > 0 && s.buf[avail-1] == '\r' {
		avail--
	}
	for avail-off > MaxLineSize {
		errs = append(errs, w.appendChunk(s.name, ts, 'P', s.buf[off:off+MaxLineSize]))
		off += MaxLineSize
	}
	if off > 0 {
		s.buf = append(s.buf[:0], s.buf[off:]...)
	}
	errs = append(errs, w.flush())
	return len(p), errors.Join(errs...)
}

// Close writes any buffered partial line as a P chunk and detaches the
// stream from its Writer. It is idempotent.
func (s *stream) Close() error {
	if s.err != nil {
		return nil
	}
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	w.streams = slices.DeleteFunc(w.streams, func(o *stream) bool { return o == s })
	return errors.Join(s.flushPartial(w.now()), w.flush())
}

// flushPartial writes the buffered partial line, if any, as a P chunk.
// Callers hold s.w.mu.
func (s *stream) flushPartial(ts string) error {
	if len(s.buf) == 0 {
		return nil
	}
	err := s.w.appendChunk(s.name, ts, 'P', s.buf)
	s.buf = s.buf[:0]
	return err
}

// Remove deletes the log at path and its rotated predecessors, plain and compressed: what a
// container instance leaves once it is garbage collected. Nothing there is not an error.
func Remove(path string) error {
	rotated, tmps, err := rotatedFiles(path)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range rotated {
		errs = append(errs, r.remove())
	}
	for _, p := range append(tmps, path) {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
