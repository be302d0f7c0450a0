package api

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"syscall"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkeeper/podkeeper/podrunner"
)

// ExecOptions describe one `podkeeper exec`.
type ExecOptions struct {
	Container string
	Command   []string
	Stdin     io.Reader // nil: the command gets no stdin
	Stdout    io.Writer
	Stderr    io.Writer // unused with TTY
	TTY       bool
	// Size is the terminal's size when the command starts (TTY only; zero: unknown).
	Size podrunner.TermSize
	// Resize carries later terminal sizes (TTY only; may be nil).
	Resize <-chan podrunner.TermSize
}

// Exec runs a command in a container of pod namespace/name ("" namespace: any) and returns its
// exit code. Errors are about podkeeper (pod not found, agent unreachable), never the command's.
func (c *Client) Exec(ctx context.Context, namespace, name string, o ExecOptions) (int, error) {
	if namespace == "" {
		namespace = "_"
	}
	q := url.Values{"command": o.Command}
	if o.Container != "" {
		q.Set("container", o.Container)
	}
	if o.Stdin != nil {
		q.Set("stdin", "true")
	}
	if o.TTY {
		q.Set("tty", "true")
		if o.Size.Width > 0 && o.Size.Height > 0 {
			q.Set("width", strconv.Itoa(int(o.Size.Width)))
			q.Set("height", strconv.Itoa(int(o.Size.Height)))
		}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		return -1, c.unreachable(err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	req, err := http.NewRequest(http.MethodPost, "http://podkeeper/pods/"+url.PathEscape(namespace)+"/"+url.PathEscape(name)+"/exec?"+q.Encode(), nil)
	if err != nil {
		return -1, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", ExecProtocol)
	if err := req.Write(conn); err != nil {
		return -1, c.unreachable(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return -1, c.unreachable(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var st metav1.Status
		if json.Unmarshal(b, &st) == nil && st.Message != "" {
			return -1, &Error{Code: resp.StatusCode, Message: st.Message}
		}
		return -1, &Error{Code: resp.StatusCode, Message: fmt.Sprintf("exec: unexpected answer %s: %s", resp.Status, b)}
	}

	var mu sync.Mutex
	send := func(stream byte, p []byte) error {
		mu.Lock()
		defer mu.Unlock()
		return writeFrame(conn, stream, p)
	}
	if o.Stdin != nil {
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := o.Stdin.Read(buf)
				if n > 0 {
					if send(streamStdin, buf[:n]) != nil {
						return
					}
				}
				if err != nil {
					_ = send(streamStdinEOF, nil)
					return
				}
			}
		}()
	}
	if o.TTY && o.Resize != nil {
		done := make(chan struct{})
		defer close(done)
		go func() {
			for {
				select {
				case <-done:
					return
				case sz, ok := <-o.Resize:
					if !ok {
						return
					}
					var b [4]byte
					binary.BigEndian.PutUint16(b[0:2], sz.Width)
					binary.BigEndian.PutUint16(b[2:4], sz.Height)
					if send(streamResize, b[:]) != nil {
						return
					}
				}
			}
		}()
	}
	stdout, stderr := o.Stdout, o.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	for {
		stream, b, err := readFrame(br)
		if err != nil {
			if ctx.Err() != nil {
				return -1, ctx.Err()
			}
			return -1, fmt.Errorf("exec: connection to podkeeper lost before the command ended: %w", err)
		}
		switch stream {
		case streamStdout:
			if _, err := stdout.Write(b); err != nil {
				return -1, fmt.Errorf("exec: write output: %w", err)
			}
		case streamStderr:
			if _, err := stderr.Write(b); err != nil {
				return -1, fmt.Errorf("exec: write output: %w", err)
			}
		case streamExit:
			if len(b) != 4 {
				return -1, errors.New("exec: malformed exit frame")
			}
			return int(int32(binary.BigEndian.Uint32(b))), nil
		case streamError:
			return -1, errors.New(string(b))
		}
	}
}

// unreachable words a transport error the way do() does.
func (c *Client) unreachable(err error) error {
	return fmt.Errorf("cannot reach podkeeper at %s: is `podkeeper run` running?%s", c.socket, reachHint(err))
}

func reachHint(err error) string {
	switch {
	case errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EACCES):
		return " (permission denied: run as root)"
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED):
		return " (no agent listening)"
	}
	return " (" + err.Error() + ")"
}
