package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A container's log is rotated at --container-log-max-size, at most --container-log-max-files
// files are kept, the rotated ones but the newest gzipped (as the kubelet's log manager leaves
// them), and `podkeeper logs` reads through all of them: what it prints is every line from
// some point on, in order, up to the last.
func TestContainerLogRotation(t *testing.T) {
	a := startAgentAt(t, "pk-e2e-logrotate", env.Address, "--container-log-max-size", "20Ki", "--container-log-max-files", "3")
	const n = 3000
	a.write("chatty.yaml", podYAML("chatty", "Always", 1, "", shContainer("c",
		fmt.Sprintf(`i=0; while [ $i -lt %d ]; do echo "line-$i padding-padding-padding"; i=$((i+1)); done; sleep 3600`, n), "")))
	p := a.waitPod(60*time.Second, "chatty-"+node, "running", running)
	dir := filepath.Join(a.logs, fmt.Sprintf("default_%s_%s", p.Name, p.UID), "c")
	last := fmt.Sprintf("line-%d padding-padding-padding\n", n-1)
	var files []string
	a.eventually(30*time.Second, "the last line logged, 3 files, the older rotated one compressed", func() (bool, string) {
		out, _ := a.cli("logs", "--tail", "1", "chatty-"+node)
		ents, _ := os.ReadDir(dir)
		files = files[:0]
		gz := 0
		for _, e := range ents {
			files = append(files, e.Name())
			if strings.HasSuffix(e.Name(), ".gz") {
				gz++
			}
		}
		return out == last && len(files) == 3 && gz == 1, fmt.Sprintf("tail %q, files %v", out, files)
	})
	for _, f := range files {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > 20<<10 {
			t.Errorf("%s is %d bytes, over 20Ki", f, fi.Size())
		}
	}
	out, err := a.cli("logs", "chatty-"+node)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var first int
	if _, err := fmt.Sscanf(lines[0], "line-%d", &first); err != nil {
		t.Fatalf("first line %q: %v", lines[0], err)
	}
	for i, l := range lines {
		if want := fmt.Sprintf("line-%d padding-padding-padding", first+i); l != want {
			t.Fatalf("line %d of the log is %q, want %q (a gap or a reordering)", i, l, want)
		}
	}
	if first+len(lines) != n || len(lines) < 500 {
		t.Fatalf("logs printed lines %d to %d of %d", first, first+len(lines)-1, n)
	}
	t.Logf("files %v; logs printed lines %d to %d", files, first, n-1)
	// kubectl's --limit-bytes and --since-time, across the compressed file too.
	if out, err := a.cli("logs", "--limit-bytes", "10", "chatty-"+node); err != nil || out != lines[0][:10] {
		t.Errorf("--limit-bytes 10: %q, %v; want %q", out, err, lines[0][:10])
	}
	if out, err := a.cli("logs", "--since-time", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "chatty-"+node); err != nil || out != "" {
		t.Errorf("--since-time an hour ahead: %q, %v", out, err)
	}
	if out, err := a.cli("logs", "--since-time", "2000-01-01T00:00:00Z", "--tail", "1", "chatty-"+node); err != nil || out != last {
		t.Errorf("--since-time 2000, --tail 1: %q, %v", out, err)
	}
}

// Each started container gets the kubelet's /var/log/containers link to its log file (here the
// agent's own links dir); a replacement gets its own, the removed pod's go with it, and a link
// left dangling while the agent was down is removed at its start (one of another agent's,
// into another log dir, is not).
func TestContainerLogLinks(t *testing.T) {
	a := startAgent(t, "pk-e2e-loglinks")
	a.write("linked.yaml", podYAML("linked", "Always", 1, "", shContainer("a", "echo from-a; sleep 3600", ""), shContainer("b", "echo from-b; sleep 3600", "")))
	p := a.waitPod(60*time.Second, "linked-"+node, "running", func(p *corev1.Pod) bool { return running(p) && len(p.Status.ContainerStatuses) == 2 })
	links := func() map[string]string {
		out := map[string]string{}
		ents, _ := os.ReadDir(a.logLinks())
		for _, e := range ents {
			target, _ := os.Readlink(filepath.Join(a.logLinks(), e.Name()))
			out[e.Name()] = target
		}
		return out
	}
	want := map[string]string{}
	for _, cs := range p.Status.ContainerStatuses {
		id := strings.TrimPrefix(cs.ContainerID, "containerd://")
		want[fmt.Sprintf("linked-%s_default_%s-%s.log", node, cs.Name, id)] = filepath.Join(a.logs, fmt.Sprintf("default_linked-%s_%s", node, p.UID), cs.Name, "0.log")
	}
	a.eventually(10*time.Second, "a link per container", func() (bool, string) {
		got := links()
		return maps.Equal(got, want), fmt.Sprintf("links %v, want %v", got, want)
	})
	for name := range want {
		b, err := os.ReadFile(filepath.Join(a.logLinks(), name))
		if c := strings.TrimSuffix(strings.SplitN(name, "_", 3)[2], ".log"); err != nil || !strings.Contains(string(b), " stdout F from-"+c[:1]+"\n") {
			t.Errorf("through %s: %q, %v", name, b, err)
		}
	}

	// A restart: the new instance is linked beside the old one (which stays for logs --previous).
	if err := syscall.Kill(int(a.runningPID(string(p.UID), "a")), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p = a.waitPod(30*time.Second, p.Name, "a restarted", func(p *corev1.Pod) bool { return running(p) && status(p, "a").RestartCount == 1 })
	a.eventually(10*time.Second, "three links", func() (bool, string) { return len(links()) == 3, fmt.Sprint(links()) })
	id := strings.TrimPrefix(status(p, "a").ContainerID, "containerd://")
	if got := links()[fmt.Sprintf("linked-%s_default_a-%s.log", node, id)]; !strings.HasSuffix(got, "/a/1.log") {
		t.Errorf("the new instance's link points at %q", got)
	}

	// A dangling link into this agent's log dir, and one into another's, while the agent is down.
	a.kill9()
	dangling := filepath.Join(a.logLinks(), "gone_default_c-x.log")
	foreign := filepath.Join(a.logLinks(), "theirs_default_c-y.log")
	if err := os.Symlink(filepath.Join(a.logs, "default_gone_x", "c", "0.log"), dangling); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nonexistent/pods/c/0.log", foreign); err != nil {
		t.Fatal(err)
	}
	a.start()
	a.eventually(20*time.Second, "the dangling link of ours removed", func() (bool, string) {
		_, err := os.Lstat(dangling)
		return errors.Is(err, fs.ErrNotExist), fmt.Sprint(links())
	})
	if _, err := os.Lstat(foreign); err != nil {
		t.Errorf("another agent's link was touched: %v", err)
	}
	os.Remove(foreign)

	a.remove("linked.yaml")
	a.waitGone(60*time.Second, p.Name, string(p.UID))
	a.eventually(10*time.Second, "no link left", func() (bool, string) { return len(links()) == 0, fmt.Sprint(links()) })
}
