package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podkeeper/podkeeper/podrunner"
)

// Exec implements podrunner.Runtime.
func (r *Runtime) Exec(ctx context.Context, id string, req podrunner.ExecRequest) (int, error) {
	if len(req.Cmd) == 0 {
		return -1, fmt.Errorf("exec in %s: no command", id)
	}
	if err := ctx.Err(); err != nil { // a probe or hook of an agent that is stopping
		return -1, fmt.Errorf("exec in %s: %w", id, err)
	}
	nctx := r.ctx(context.WithoutCancel(ctx))
	c, err := r.client.LoadContainer(nctx, id)
	if err != nil {
		return -1, fmt.Errorf("exec in %s: %w", id, notFound(err))
	}
	// The task this agent started (or re-attached) is at hand: no lookup in containerd.
	task := r.taskOf(nctx, c)
	if task == nil {
		return -1, fmt.Errorf("exec in %s: container is not running: %w", id, podrunner.ErrNotFound)
	}
	if st, err := task.Status(nctx); err != nil || st.Status != containerd.Running {
		return -1, fmt.Errorf("exec in %s: container is not running: %w", id, podrunner.ErrNotFound)
	}
	// The record LoadContainer fetched holds the spec: no second fetch (exec probes come here
	// every period, and under load each round trip to containerd costs tens of ms).
	info, err := c.Info(nctx, containerd.WithoutRefreshedMetadata)
	if err != nil {
		return -1, fmt.Errorf("exec in %s: read spec: %w", id, err)
	}
	spec := &oci.Spec{}
	if info.Spec == nil {
		return -1, fmt.Errorf("exec in %s: read spec: the container has none", id)
	}
	if err := json.Unmarshal(info.Spec.GetValue(), spec); err != nil {
		return -1, fmt.Errorf("exec in %s: read spec: %w", id, err)
	}
	if spec.Process == nil {
		return -1, fmt.Errorf("exec in %s: read spec: no process", id)
	}
	pspec := *spec.Process
	pspec.Args = req.Cmd
	pspec.Terminal = req.TTY
	var initial *podrunner.TermSize
	if req.TTY && req.Resize != nil {
		// A size already waiting is the terminal's first: the process starts with it.
		select {
		case sz, ok := <-req.Resize:
			if ok && sz.Width > 0 && sz.Height > 0 {
				initial = &sz
				pspec.ConsoleSize = &specs.Box{Width: uint(sz.Width), Height: uint(sz.Height)}
			}
		default:
		}
	}

	// The process (or a child holding its output) may write on after ctx ends and Exec returns:
	// from then on its output is drained and dropped, never handed to the caller's writers.
	gate := &outputGate{}
	stdout, stderr := gate.wrap(req.Stdout), gate.wrap(req.Stderr)
	var proc containerd.Process
	procSet := make(chan struct{}) // closed once task.Exec has returned (proc is set or nil)
	var stdin io.Reader
	if req.Stdin != nil {
		// The shim keeps the process's stdin open until told: close it when the reader ends.
		// The copy starts inside task.Exec, so the reader may end before proc is known.
		stdin = &closeOnEOF{r: req.Stdin, done: func() {
			<-procSet
			if proc != nil {
				_ = proc.CloseIO(nctx, containerd.WithStdinCloser)
			}
		}}
	}
	opts := []cio.Opt{cio.WithStreams(stdin, stdout, stderr), cio.WithFIFODir(r.fifoDir())}
	if req.TTY {
		opts = append(opts, cio.WithTerminal)
	}
	// From the FIFOs' making (task.Exec) to the shim's opening them (in the start), this
	// process must not end: Close waits for it.
	if !r.execStarts.enter() {
		close(procSet)
		return -1, fmt.Errorf("exec in %s: %w", id, errRuntimeClosing)
	}
	execID := "exec-" + randomHex(6)
	proc, err = task.Exec(nctx, execID, &pspec, cio.NewCreator(opts...))
	close(procSet)
	if err != nil {
		r.execStarts.leave()
		return -1, fmt.Errorf("exec in %s: %w", id, err)
	}
	cleanup := func() {
		dctx, cancel := context.WithTimeout(nctx, 5*time.Second)
		defer cancel()
		_, _ = proc.Delete(dctx, containerd.WithProcessKill)
	}
	statusC, err := proc.Wait(nctx)
	if err != nil {
		r.execStarts.leave()
		cleanup()
		return -1, fmt.Errorf("exec in %s: wait: %w", id, err)
	}
	err = proc.Start(nctx)
	r.execStarts.leave()
	if err != nil {
		cleanup()
		return -1, fmt.Errorf("exec in %s: start %q: %w", id, req.Cmd[0], err)
	}
	if initial != nil {
		_ = proc.Resize(nctx, uint32(initial.Width), uint32(initial.Height))
	}
	if req.TTY && req.Resize != nil {
		go func() {
			for {
				select {
				case sz, ok := <-req.Resize:
					if !ok {
						return
					}
					_ = proc.Resize(nctx, uint32(sz.Width), uint32(sz.Height))
				case <-statusC:
					return
				}
			}
		}()
	}
	select {
	case st := <-statusC:
		proc.IO().Wait()
		cleanup()
		code, _, err := st.Result()
		if err != nil {
			return -1, fmt.Errorf("exec in %s: %w", id, err)
		}
		return int(code), nil
	case <-ctx.Done():
		gate.close()
		if !req.LeaveRunning {
			_ = proc.Kill(nctx, syscall.SIGKILL)
		}
		// The process's end and its delete (which waits up to 2 s in the shim for output still
		// held open, by a child of a killed shell) are not waited for.
		go func() {
			if req.LeaveRunning {
				<-statusC // at the latest when the container ends
			} else {
				select {
				case <-statusC:
				case <-time.After(5 * time.Second):
				}
			}
			proc.IO().Cancel()
			cleanup()
		}()
		how := "killed"
		if req.LeaveRunning {
			how = "left running"
		}
		return -1, fmt.Errorf("exec in %s: %q %s: %w", id, req.Cmd[0], how, ctx.Err())
	}
}

// outputGate hands an exec's output to the caller's writers until closed, and drops it after.
type outputGate struct {
	mu     sync.Mutex
	closed bool
}

func (g *outputGate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// wrap is w behind the gate (io.Discard for nil). Writes through every wrapper of one gate are
// serialized.
func (g *outputGate) wrap(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return gatedWriter{g: g, w: w}
}

type gatedWriter struct {
	g *outputGate
	w io.Writer
}

func (gw gatedWriter) Write(p []byte) (int, error) {
	gw.g.mu.Lock()
	defer gw.g.mu.Unlock()
	if gw.g.closed {
		return len(p), nil
	}
	return gw.w.Write(p)
}

func notFound(err error) error {
	if errdefs.IsNotFound(err) {
		return fmt.Errorf("%w: %w", podrunner.ErrNotFound, err)
	}
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// closeOnEOF calls done once when the wrapped reader reports an error (EOF included).
type closeOnEOF struct {
	r    io.Reader
	done func()
	once bool
}

func (c *closeOnEOF) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil && !c.once {
		c.once = true
		c.done()
	}
	return n, err
}

var errRuntimeClosing = errors.New("podkeeper is stopping")

// execStartGate counts the exec starts in flight and, once closed, admits no more. The zero
// value is open.
type execStartGate struct {
	mu       sync.Mutex
	closed   bool
	inFlight int
	idle     chan struct{} // closed when inFlight drops to 0 after closing; nil before
}

// enter admits one exec start; false once the gate is closed. Each true is paired with leave.
func (g *execStartGate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.inFlight++
	return true
}

// leave ends an exec start that enter admitted.
func (g *execStartGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight--
	if g.inFlight == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// closeAndWait closes the gate and waits, at most timeout, until no admitted start is in
// flight. It returns how many were still in flight when it returned and how long it waited (0:
// none was in flight).
func (g *execStartGate) closeAndWait(timeout time.Duration) (left int, waited time.Duration) {
	g.mu.Lock()
	g.closed = true
	if g.inFlight == 0 {
		g.mu.Unlock()
		return 0, 0
	}
	if g.idle == nil {
		g.idle = make(chan struct{})
	}
	idle := g.idle
	g.mu.Unlock()
	start := time.Now()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inFlight, time.Since(start)
}
