package e2e

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyOutput collects what a pty master reads.
type ptyOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (p *ptyOutput) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

// `podkeeper exec -it` through a real pty: the command gets a terminal of the local size, a
// resize follows, keystrokes reach it, and podkeeper exits with the command's exit code.
func TestExecTTY(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "pk-e2e-exec-tty")
	a.write("box.yaml", podYAML("box", "Always", 1, "", shContainer("sh", "exec sleep 3600", "")))
	a.waitPod(60*time.Second, "box-e2e", "running", running)

	cmd := exec.Command(filepath.Join(binDir, "podkeeper"), "--api-socket", a.sock, "exec", "-it", "box", "--", "sh")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 33, Cols: 111})
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	out := &ptyOutput{}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := ptmx.Read(b)
			out.mu.Lock()
			out.buf.Write(b[:n])
			out.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	waitOut := func(what string, re *regexp.Regexp) {
		t.Helper()
		a.eventually(30*time.Second, what, func() (bool, string) {
			s := out.String()
			return re.MatchString(s), s
		})
	}
	if _, err := io.WriteString(ptmx, "tty; stty size\r"); err != nil {
		t.Fatal(err)
	}
	waitOut("a /dev/pts terminal", regexp.MustCompile(`/dev/pts/\d+`))
	waitOut("stty size 33 111", regexp.MustCompile(`(?m)^33 111\r?$`))
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	// SIGWINCH travels asynchronously: ask until the new size shows.
	a.eventually(30*time.Second, "stty size 40 120 after a resize", func() (bool, string) {
		_, _ = io.WriteString(ptmx, "stty size\r")
		time.Sleep(300 * time.Millisecond)
		s := out.String()
		return regexp.MustCompile(`(?m)^40 120\r?$`).MatchString(s), s
	})
	if _, err := io.WriteString(ptmx, "exit 7\r"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("podkeeper exec did not end after exit; output:\n%s", out.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("podkeeper exec -it exit: %v, want exit code 7; output:\n%s", err, out.String())
	}
}

// Without a TTY: stdin passes through, stdout and stderr stay apart, the exit code is the
// command's; and mistakes get errors a person can act on.
func TestExecStdinAndErrors(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "pk-e2e-exec")
	a.write("two.yaml", podYAML("two", "Always", 1, "", shContainer("a", "exec sleep 3600", ""), shContainer("b", "exec sleep 3600", "")))
	a.waitPod(60*time.Second, "two-e2e", "running", running)

	run := func(stdin string, args ...string) (string, string, int) {
		cmd := exec.Command(filepath.Join(binDir, "podkeeper"), append([]string{"--api-socket", a.sock}, args...)...)
		var so, se bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &so, &se
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return so.String(), se.String(), code
	}
	so, se, code := run("hello from stdin\n", "exec", "-i", "two", "-c", "b", "--", "sh", "-c", "cat; echo oops >&2; exit 4")
	if so != "hello from stdin\n" || se != "oops\n" || code != 4 {
		t.Fatalf("exec -i: stdout %q stderr %q code %d", so, se, code)
	}
	if so, _, code := run("", "exec", "two", "-c", "a", "--", "hostname"); code != 0 || strings.TrimSpace(so) == "" {
		t.Fatalf("exec hostname: %q code %d", so, code)
	}
	_, se, code = run("", "exec", "web", "--", "true")
	if code != 1 || !strings.Contains(se, "pod web not found (pods: two-e2e)") {
		t.Fatalf("unknown pod: code %d stderr %q", code, se)
	}
	_, se, code = run("", "exec", "two", "--", "true")
	if code != 1 || !strings.Contains(se, "a container name must be specified for pod two-e2e, choose one of: [a b]") {
		t.Fatalf("no container: code %d stderr %q", code, se)
	}
	_, se, code = run("", "exec", "two", "-c", "z", "--", "true")
	if code != 1 || !strings.Contains(se, "container z not found in pod two-e2e (containers: a, b)") {
		t.Fatalf("unknown container: code %d stderr %q", code, se)
	}
	_, se, code = run("", "exec", "two", "-c", "a", "--", "/no/such/binary")
	if code == 0 || !strings.Contains(se, "/no/such/binary") {
		t.Fatalf("missing binary: code %d stderr %q", code, se)
	}
	_, se, code = run("", "--api-socket", filepath.Join(os.TempDir(), "nothing-here.sock"), "exec", "two", "--", "true")
	if code != 1 || !strings.Contains(se, "is `podkeeper run` running?") {
		t.Fatalf("no agent: code %d stderr %q", code, se)
	}
}
