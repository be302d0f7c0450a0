package api

// Exec: running a command in a container through the local API.
//
//	POST /pods/{namespace}/{name}/exec?container=C&command=ARG0&command=ARG1...&stdin=true&tty=true&width=W&height=H
//	Connection: Upgrade
//	Upgrade: podkeeper-exec/1
//
// Errors found before the command starts (pod or container not found, container not running,
// no command) are ordinary JSON error answers (a v1 Status with 400/404). Otherwise the server
// answers "101 Switching Protocols" and both sides then speak frames on the connection:
//
//	+--------+-------------------+-------------+
//	| stream | length (uint32 BE) | payload ... |
//	+--------+-------------------+-------------+
//
// client -> server: streamStdin (bytes for the command's stdin), streamStdinEOF (no payload:
// stdin ended), streamResize (uint16 BE width, uint16 BE height: the terminal changed size).
// server -> client: streamStdout, streamStderr (output; a TTY has stdout only), then exactly one
// of streamExit (int32 BE exit code) or streamError (a message: the command could not be run),
// after which the server closes the connection. When the client's connection goes away, the
// command is killed. The terminal's first size travels in the query (width, height) so that the
// command starts with it.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/podrunner"
)

// ExecProtocol is the Upgrade token of the exec stream.
const ExecProtocol = "podkeeper-exec/1"

// Frame streams.
const (
	streamStdin    byte = 0
	streamStdout   byte = 1
	streamStderr   byte = 2
	streamExit     byte = 3
	streamError    byte = 4
	streamResize   byte = 5
	streamStdinEOF byte = 6
)

// maxFrame bounds a frame's payload (a peer announcing more is broken).
const maxFrame = 1 << 20

// ExecBackend is implemented by backends that run commands in containers (podrunner.Manager).
type ExecBackend interface {
	// ExecTarget returns the ID of the running instance of container in pod. Errors wrap
	// podrunner.ErrNotFound when there is no such container or it is not running.
	ExecTarget(ctx context.Context, pod *corev1.Pod, container string) (string, error)
	// ExecIn runs req in the container instance id and returns the exit code (see
	// podrunner.Runtime.Exec: ctx ending kills the process).
	ExecIn(ctx context.Context, id string, req podrunner.ExecRequest) (int, error)
}

func writeFrame(w io.Writer, stream byte, payload []byte) error {
	var hdr [5]byte
	hdr[0] = stream
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(payload)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

func readFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("exec stream: frame of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return 0, nil, err
	}
	return hdr[0], b, nil
}

// frameWriter writes each Write as one frame of a stream; safe for concurrent use with the
// other frameWriters sharing mu.
type frameWriter struct {
	mu     *sync.Mutex
	w      io.Writer
	stream byte
}

func (f frameWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for off := 0; off < len(p); off += maxFrame {
		end := min(off+maxFrame, len(p))
		if err := writeFrame(f.w, f.stream, p[off:end]); err != nil {
			return off, err
		}
	}
	return len(p), nil
}

func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	eb, ok := s.b.(ExecBackend)
	if !ok {
		writeError(w, fmt.Errorf("%w: this agent cannot exec", errBadRequest))
		return
	}
	p, err := s.find(r)
	if err != nil {
		writeError(w, err)
		return
	}
	q := r.URL.Query()
	cmd := q["command"]
	if len(cmd) == 0 {
		writeError(w, fmt.Errorf("%w: no command given (podkeeper exec POD -- COMMAND [ARGS...])", errBadRequest))
		return
	}
	container := q.Get("container")
	if container == "" {
		if container, err = DefaultContainer(p); err != nil {
			writeError(w, err)
			return
		}
	}
	id, err := eb.ExecTarget(r.Context(), p, container)
	if err != nil {
		writeError(w, err)
		return
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), ExecProtocol) {
		writeError(w, fmt.Errorf("%w: exec needs `Upgrade: %s`", errBadRequest, ExecProtocol))
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		writeError(w, errors.New("exec: connection cannot be taken over"))
		return
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		s.log.Warn("exec: hijack", "err", err)
		return
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+ExecProtocol+"\r\n\r\n"); err != nil {
		return
	}
	tty := q.Get("tty") == "true"
	s.log.Info("exec", "pod", p.Namespace+"/"+p.Name, "container", container, "command", cmd, "tty", tty)
	code, err := runExecStream(r.Context(), conn, brw.Reader, eb, id, podrunner.ExecRequest{Cmd: cmd, TTY: tty}, q)
	var mu sync.Mutex
	out := frameWriter{mu: &mu, w: conn}
	if err != nil {
		out.stream = streamError
		_, _ = out.Write([]byte(err.Error()))
		return
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(int32(code)))
	out.stream = streamExit
	_, _ = out.Write(b[:])
}

// runExecStream runs the command with its streams carried by frames on conn (read through br).
func runExecStream(ctx context.Context, conn net.Conn, br *bufio.Reader, eb ExecBackend, id string, req podrunner.ExecRequest, q map[string][]string) (int, error) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	var mu sync.Mutex
	req.Stdout = frameWriter{mu: &mu, w: conn, stream: streamStdout}
	req.Stderr = frameWriter{mu: &mu, w: conn, stream: streamStderr}
	resize := make(chan podrunner.TermSize, 8)
	if req.TTY {
		req.Resize = resize
		w, _ := strconv.ParseUint(first(q["width"]), 10, 16)
		h, _ := strconv.ParseUint(first(q["height"]), 10, 16)
		if w > 0 && h > 0 {
			resize <- podrunner.TermSize{Width: uint16(w), Height: uint16(h)}
		}
	}
	var stdinW *io.PipeWriter
	if first(q["stdin"]) == "true" {
		var pr *io.PipeReader
		pr, stdinW = io.Pipe()
		req.Stdin = pr
	}
	go func() {
		// The client's frames; its connection ending kills the command.
		defer cancel()
		for {
			stream, b, err := readFrame(br)
			if err != nil {
				if stdinW != nil {
					stdinW.CloseWithError(io.EOF)
				}
				return
			}
			switch stream {
			case streamStdin:
				if stdinW != nil {
					if _, err := stdinW.Write(b); err != nil {
						stdinW = nil // the command closed its stdin; keep reading resizes
					}
				}
			case streamStdinEOF:
				if stdinW != nil {
					stdinW.Close()
					stdinW = nil
				}
			case streamResize:
				if len(b) == 4 && req.TTY {
					sz := podrunner.TermSize{Width: binary.BigEndian.Uint16(b[0:2]), Height: binary.BigEndian.Uint16(b[2:4])}
					select {
					case resize <- sz:
					default: // a burst of resizes: the latest ones that fit are enough
					}
				}
			}
		}
	}()
	return eb.ExecIn(ctx, id, req)
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
