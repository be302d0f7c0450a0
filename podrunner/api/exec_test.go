package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/podrunner"
)

// execBackend adds a scripted exec to fakeBackend.
type execBackend struct {
	*fakeBackend
	run       func(ctx context.Context, req podrunner.ExecRequest) (int, error)
	started   chan struct{}
	cancelled chan struct{}
}

func (b *execBackend) ExecTarget(_ context.Context, p *corev1.Pod, c string) (string, error) {
	for _, pc := range p.Spec.Containers {
		if pc.Name == c {
			return p.Name + "/" + c, nil
		}
	}
	return "", fmt.Errorf("container %s %w in pod %s", c, podrunner.ErrNotFound, p.Name)
}

func (b *execBackend) ExecIn(ctx context.Context, id string, req podrunner.ExecRequest) (int, error) {
	return b.run(ctx, req)
}

func startExecServer(t *testing.T, b *execBackend) *Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "api.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = NewServer(b, testLogger()).Listen(ctx, sock)
	}()
	t.Cleanup(func() { cancel(); <-done })
	c := NewClient(sock)
	deadline := time.Now().Add(10 * time.Second)
	for c.Healthz(context.Background()) != nil {
		if time.Now().After(deadline) {
			t.Fatal("api server did not come up")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c
}

func TestExecStream(t *testing.T) {
	b := &execBackend{fakeBackend: newBackend(t), started: make(chan struct{}, 1), cancelled: make(chan struct{}, 1)}
	b.run = func(ctx context.Context, req podrunner.ExecRequest) (int, error) {
		switch req.Cmd[0] {
		case "upper": // stdin upper-cased to stdout, a note on stderr
			in, _ := io.ReadAll(req.Stdin)
			_, _ = io.WriteString(req.Stdout, strings.ToUpper(string(in)))
			_, _ = io.WriteString(req.Stderr, "done\n")
			return 3, nil
		case "size": // reports the first two terminal sizes
			for i := 0; i < 2; i++ {
				sz := <-req.Resize
				fmt.Fprintf(req.Stdout, "%dx%d tty=%v\n", sz.Width, sz.Height, req.TTY)
			}
			return 0, nil
		case "hang":
			b.started <- struct{}{}
			<-ctx.Done()
			b.cancelled <- struct{}{}
			return -1, ctx.Err()
		case "fail":
			return -1, fmt.Errorf("exec in x: start %q: no such file", req.Cmd[0])
		}
		return 0, nil
	}
	c := startExecServer(t, b)
	ctx := context.Background()

	var out, errb bytes.Buffer
	code, err := c.Exec(ctx, "", "web-node1", ExecOptions{Command: []string{"upper"}, Stdin: strings.NewReader("hello\n"), Stdout: &out, Stderr: &errb})
	if err != nil || code != 3 || out.String() != "HELLO\n" || errb.String() != "done\n" {
		t.Fatalf("upper: code %d err %v stdout %q stderr %q", code, err, out.String(), errb.String())
	}

	out.Reset()
	resize := make(chan podrunner.TermSize, 1)
	resize <- podrunner.TermSize{Width: 120, Height: 40}
	code, err = c.Exec(ctx, "", "web-node1", ExecOptions{Command: []string{"size"}, TTY: true, Size: podrunner.TermSize{Width: 80, Height: 24}, Resize: resize, Stdout: &out})
	if err != nil || code != 0 || out.String() != "80x24 tty=true\n120x40 tty=true\n" {
		t.Fatalf("size: code %d err %v stdout %q", code, err, out.String())
	}

	if _, err := c.Exec(ctx, "", "web-node1", ExecOptions{Command: []string{"fail"}}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("fail: %v", err)
	}
	if _, err := c.Exec(ctx, "", "nope", ExecOptions{Command: []string{"true"}}); err == nil || err.Error() != "pod nope not found (pods: web-node1, multi-node1)" {
		t.Fatalf("unknown pod: %v", err)
	}
	if _, err := c.Exec(ctx, "", "web-node1", ExecOptions{Container: "zz", Command: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "container zz not found in pod web-node1") {
		t.Fatalf("unknown container: %v", err)
	}
	if _, err := c.Exec(ctx, "", "multi-node1", ExecOptions{Command: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "choose one of: [a b]") {
		t.Fatalf("no container named: %v", err)
	}
	if _, err := c.Exec(ctx, "", "web-node1", ExecOptions{}); err == nil || !strings.Contains(err.Error(), "no command given") {
		t.Fatalf("no command: %v", err)
	}

	// The client going away kills the command.
	hctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Exec(hctx, "", "web-node1", ExecOptions{Command: []string{"hang"}})
		errc <- err
	}()
	select {
	case <-b.started:
	case <-time.After(10 * time.Second):
		t.Fatalf("hang never started: %v", <-errc)
	}
	cancel()
	select {
	case <-b.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("command not cancelled when the client went away")
	}
	if err := <-errc; err == nil {
		t.Fatal("cancelled exec returned no error")
	}
}
