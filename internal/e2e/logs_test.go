package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
}
