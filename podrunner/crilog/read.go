package crilog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
)

// ReadOptions select what ReadLog prints.
type ReadOptions struct {
	// Tail, if >= 0, prints only the last Tail lines (after reassembly and
	// filtering) of the existing log. -1 (or any negative value) prints all.
	Tail int64
	// Since, if not zero, skips lines that started before it.
	Since time.Time
	// Timestamps prefixes each line with its RFC3339Nano timestamp (that of
	// its first chunk) and a space.
	Timestamps bool
	// Stream is "" for both streams, or Stdout or Stderr.
	Stream string
	// Follow keeps printing new lines, across rotations, until ctx is done.
	Follow bool
}

// newPollTicker paces Follow. Tests replace it.
var newPollTicker = func() (<-chan time.Time, func()) {
	t := time.NewTicker(250 * time.Millisecond)
	return t.C, t.Stop
}

const (
	// maxRawLine bounds a stored line that has no newline yet; longer runs
	// are not CRI lines and are skipped up to the next newline.
	maxRawLine = 1 << 20
	// maxPending bounds how much of an unfinished line is held back when
	// printing directly; beyond it the text so far is printed.
	maxPending = 64 << 10
)

// ReadLog writes the log at path to out as the container printed it: the
// rotated predecessors oldest first (compressed ones decompressed), then the
// live file. Partial (P) chunks are joined to their line and F chunks end it
// with a newline; lines of stdout and stderr are reassembled separately.
// Malformed lines are skipped. A last line that never got its F chunk is
// printed without a newline.
//
// Without Follow, ReadLog returns after the existing content; it returns an
// error wrapping fs.ErrNotExist if neither the live file nor any rotated
// file exists. With Follow it then polls the live file, follows it when it
// is rotated, and returns nil once ctx is done.
func ReadLog(ctx context.Context, path string, opts ReadOptions, out io.Writer) error {
	switch opts.Stream {
	case "", Stdout, Stderr:
	default:
		return fmt.Errorf("crilog: read %s: invalid stream %q", path, opts.Stream)
	}
	r := &logReader{opts: opts, out: bufio.NewWriter(out), chunk: make([]byte, 32<<10)}
	if opts.Tail >= 0 {
		// Two passes, so that memory stays bounded whatever the lines' length (a line of
		// megabytes without a newline is stored as 16 KiB partial chunks): the first counts
		// the lines, the second prints from the first of the last Tail ones on, as without
		// Tail. Lines are numbered in the order they start.
		counter := &logReader{opts: opts, counting: true, chunk: r.chunk}
		cur, err := counter.readExisting(ctx, path)
		cur.close()
		if err != nil {
			return err
		}
		r.dropLines = max(0, counter.lines-opts.Tail)
	}

	cur, err := r.readExisting(ctx, path)
	if cur != nil {
		defer func() { cur.close() }()
	}
	if err != nil {
		return err
	}
	r.flushPending()
	if err := r.out.Flush(); err != nil {
		return fmt.Errorf("crilog: read %s: write output: %w", path, err)
	}
	if !opts.Follow {
		return nil
	}
	return r.follow(ctx, path, &cur)
}

// logReader holds the reassembly and output state of one ReadLog call.
type logReader struct {
	opts    ReadOptions
	out     *bufio.Writer // nil while counting
	pending [2]pendingLine
	chunk   []byte // read buffer
	// counting: only count the lines (Since and Stream applied) into lines; nothing is kept
	// or printed. Else the first dropLines lines are left out (Tail).
	counting  bool
	lines     int64 // lines started so far (Since and Stream applied)
	dropLines int64
}

// pendingLine is a line of one stream whose F chunk has not arrived yet.
type pendingLine struct {
	active  bool      // a chunk of this line has been seen
	skip    bool      // the line is filtered out by Since
	started bool      // part of the line (and its prefix) was already printed
	t       time.Time // time of the first chunk
	buf     []byte
}

// record is one piece of output: a line or a part of one.
type record struct {
	t       time.Time
	text    []byte
	prefix  bool // print the timestamp prefix (if enabled) before text
	newline bool // the line ends here
}

// source is an open log file and how far it has been consumed.
type source struct {
	f        *os.File
	r        io.Reader // f, or its decompressed content for a compressed rotated file
	info     os.FileInfo
	off      int64
	carry    []byte // bytes after the last newline
	skipping bool   // discarding an overlong run up to the next newline
}

func openSource(name string) (*source, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("crilog: open %s: %w", name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("crilog: stat %s: %w", name, err)
	}
	src := &source{f: f, r: f, info: fi}
	if strings.HasSuffix(name, gzSuffix) {
		zr, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("crilog: open %s: %w", name, err)
		}
		src.r = zr
	}
	return src, nil
}

func (s *source) close() {
	if s != nil {
		s.f.Close()
	}
}

// readExisting reads the rotated files and the live file. It returns the
// last file read, still open, so that Follow can continue from it.
func (r *logReader) readExisting(ctx context.Context, path string) (*source, error) {
	// Open the live file before listing rotated files: if it is rotated in
	// between, it shows up in the list and the loop below stops there.
	live, err := openSource(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	rotated, err := listRotated(path)
	if err != nil {
		live.close()
		return nil, err
	}
	cur, err := r.readRotated(ctx, rotated, nil, live)
	if err != nil {
		live.close()
		return cur, err
	}
	if live == nil {
		if cur == nil {
			return nil, fmt.Errorf("crilog: read %s: %w", path, fs.ErrNotExist)
		}
		return cur, nil
	}
	cur.close()
	return live, r.drain(live, !r.opts.Follow)
}

// readRotated reads the rotated files in names, oldest first, stopping
// before live if it is among them. prev is the file read before them (it is
// closed once a successor is open); the last file read is returned open.
func (r *logReader) readRotated(ctx context.Context, names []string, prev, live *source) (*source, error) {
	cur := prev
	for _, name := range names {
		if err := ctx.Err(); err != nil && !r.opts.Follow {
			return cur, err
		}
		if live != nil && sameFile(name, live.info) {
			break
		}
		src, err := openSource(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // pruned meanwhile
		}
		if err != nil {
			return cur, err
		}
		cur.close()
		cur = src
		if err := r.drain(src, true); err != nil {
			return cur, err
		}
	}
	return cur, nil
}

// follow polls for new content until ctx is done. *cur is the last file
// read; it is replaced as the log rotates.
func (r *logReader) follow(ctx context.Context, path string, cur **source) error {
	tick, stop := newPollTicker()
	defer stop()
	for {
		if err := r.drain(*cur, false); err != nil {
			return err
		}
		rotated, err := r.checkRotation(ctx, path, cur)
		if err != nil {
			return err
		}
		if rotated {
			continue // read the new live file right away
		}
		r.flushPending()
		if err := r.out.Flush(); err != nil {
			return fmt.Errorf("crilog: follow %s: write output: %w", path, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
		}
	}
}

// checkRotation reports whether the live file is no longer *cur and, if so,
// reads what was appended to *cur, any rotated files after it and switches
// *cur to the new live file. A live file that shrank is re-read from the
// start.
func (r *logReader) checkRotation(ctx context.Context, path string, cur **source) (bool, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return false, nil // between rename and create, or removed: wait
	}
	c := *cur
	if os.SameFile(fi, c.info) {
		if fi.Size() < c.off {
			if _, err := c.f.Seek(0, io.SeekStart); err != nil {
				return false, fmt.Errorf("crilog: follow %s: rewind: %w", path, err)
			}
			c.off, c.carry, c.skipping = 0, c.carry[:0], false
		}
		return false, nil
	}
	live, err := openSource(path)
	if err != nil {
		return false, nil // gone again; retry on the next tick
	}
	// Whatever was written to the old file before the rename is complete.
	if err := r.drain(c, true); err != nil {
		live.close()
		return false, err
	}
	rotated, err := listRotated(path)
	if err != nil {
		live.close()
		return false, err
	}
	var next []string
	for i, name := range rotated {
		if sameRotated(name, c) {
			next = rotated[i+1:]
			break
		}
	}
	// If c is not among the rotated files it was pruned; files older than
	// the live one cannot be told apart from already-read ones, so skip.
	c, err = r.readRotated(ctx, next, c, live)
	*cur = c
	if err != nil {
		live.close()
		return false, err
	}
	c.close()
	*cur = live
	return true, nil
}

func sameFile(name string, info os.FileInfo) bool {
	fi, err := os.Stat(name)
	return err == nil && os.SameFile(fi, info)
}

// drain reads src to its current end and handles every complete line. If
// final, a trailing line without newline is handled too.
func (r *logReader) drain(src *source, final bool) error {
	for {
		n, err := src.r.Read(r.chunk)
		if n > 0 {
			src.off += int64(n)
			r.feed(src, r.chunk[:n])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("crilog: read %s: %w", src.f.Name(), err)
		}
	}
	if final {
		if len(src.carry) > 0 && !src.skipping {
			r.handleLine(src.carry)
		}
		src.carry, src.skipping = src.carry[:0], false
	}
	return nil
}

// feed splits data into lines, joining it with the carry of src.
func (r *logReader) feed(src *source, data []byte) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if !src.skipping {
				src.carry = append(src.carry, data...)
				if len(src.carry) > maxRawLine {
					src.carry, src.skipping = src.carry[:0], true
				}
			}
			return
		}
		line := data[:i]
		data = data[i+1:]
		if src.skipping {
			src.skipping = false
			continue
		}
		if len(src.carry) > 0 {
			src.carry = append(src.carry, line...)
			line = src.carry
		}
		r.handleLine(line)
		src.carry = src.carry[:0]
	}
}

// handleLine parses one stored line and adds it to its stream's line.
func (r *logReader) handleLine(raw []byte) {
	e, err := ParseLine(raw)
	if err != nil {
		return // malformed lines are skipped
	}
	if r.opts.Stream != "" && e.Stream != r.opts.Stream {
		return
	}
	p := &r.pending[streamIndex(e.Stream)]
	if !p.active {
		p.active = true
		p.t = e.Time
		p.skip = !r.opts.Since.IsZero() && e.Time.Before(r.opts.Since)
		if !p.skip {
			p.skip = r.counting || r.lines < r.dropLines // counted only; or before the tail
			r.lines++
		}
	}
	if !p.skip {
		p.buf = append(p.buf, e.Text...)
	}
	if !e.Partial {
		if !p.skip {
			r.emit(record{t: p.t, text: p.buf, prefix: !p.started, newline: true})
		}
		*p = pendingLine{buf: p.buf[:0]}
		return
	}
	if len(p.buf) >= maxPending {
		r.emitPartial(p)
	}
}

// flushPending prints the unfinished lines seen so far, without newline.
func (r *logReader) flushPending() {
	for i := range r.pending {
		if p := &r.pending[i]; p.active && !p.skip && len(p.buf) > 0 {
			r.emitPartial(p)
		}
	}
}

func (r *logReader) emitPartial(p *pendingLine) {
	r.emit(record{t: p.t, text: p.buf, prefix: !p.started})
	p.started = true
	p.buf = p.buf[:0]
}

// emit prints rec.
func (r *logReader) emit(rec record) {
	r.write(rec)
}

func (r *logReader) write(rec record) {
	if rec.prefix && r.opts.Timestamps {
		r.out.WriteString(rec.t.Format(time.RFC3339Nano))
		r.out.WriteByte(' ')
	}
	r.out.Write(rec.text)
	if rec.newline {
		r.out.WriteByte('\n')
	}
}

func streamIndex(name string) int {
	if name == Stderr {
		return 1
	}
	return 0
}
