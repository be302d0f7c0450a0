package crilog

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// Stream names used in CRI log lines.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// MaxLineSize is the largest text a single CRI log line carries. Longer
// lines are split into partial (P) chunks of this size.
const MaxLineSize = 16 * 1024

// ErrMalformedLine is wrapped by the errors ParseLine returns.
var ErrMalformedLine = errors.New("crilog: malformed log line")

// timeLayout is the fixed-width form of time.RFC3339Nano used when writing,
// so that timestamps line up. time.RFC3339Nano parses it.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// Entry is one parsed CRI log line.
type Entry struct {
	// Time is when the agent received the chunk.
	Time time.Time
	// Stream is Stdout or Stderr.
	Stream string
	// Partial is true for a P chunk: the line continues in a later entry of
	// the same stream.
	Partial bool
	// Text is the chunk without the newline. It aliases the parsed input.
	Text []byte
}

// ParseLine parses one CRI log line, with or without its trailing newline.
// The returned Entry's Text aliases line. Errors wrap ErrMalformedLine.
//
// The tag field may carry several ':'-separated tags as the CRI allows; the
// first must be P or F and the rest are ignored.
func ParseLine(line []byte) (Entry, error) {
	line = bytes.TrimSuffix(line, []byte{'\n'})

	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return Entry{}, malformed("missing stream field", line)
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return Entry{}, malformed("bad timestamp", ts)
	}

	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return Entry{}, malformed("missing tag field", line)
	}
	var e Entry
	switch string(stream) {
	case Stdout:
		e.Stream = Stdout
	case Stderr:
		e.Stream = Stderr
	default:
		return Entry{}, malformed("unknown stream", stream)
	}

	// The text may be absent entirely for an empty line ("... F").
	tag, text, _ := bytes.Cut(rest, []byte{' '})
	first, _, _ := bytes.Cut(tag, []byte{':'})
	switch string(first) {
	case "P":
		e.Partial = true
	case "F":
	default:
		return Entry{}, malformed("unknown tag", tag)
	}

	e.Time = t
	e.Text = text
	return e, nil
}

// malformed builds an ErrMalformedLine error quoting at most a short excerpt
// of the offending input.
func malformed(what string, b []byte) error {
	const maxQuote = 64
	if len(b) > maxQuote {
		b = b[:maxQuote]
	}
	return fmt.Errorf("%w: %s: %q", ErrMalformedLine, what, b)
}
