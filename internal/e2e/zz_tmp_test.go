package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestZZStopLogsTmp(t *testing.T) {
	a := startAgent(t, "pk-e2e-zz")
	vol, mount, dir := hostDir(t)
	script := `trap 'sleep 0.5; for i in 1 2 3 4 5; do echo "bye $i" || touch /host/epipe-$i; done; echo done > /host/done; exit 0' TERM; echo hello; sleep 3600 & wait`
	a.write("sl.yaml", podYAML("sl", "Always", 5, vol, shContainer("c", script, mount+
		"    livenessProbe:\n      exec:\n        command: [\"sh\", \"-c\", \"exit 1\"]\n      initialDelaySeconds: 2\n      periodSeconds: 1\n      failureThreshold: 1\n")))
	time.Sleep(12 * time.Second)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		t.Log("host file:", e.Name())
	}
	b, _ := os.ReadFile(filepath.Join(dir, "done"))
	t.Log("done:", string(b))
	out, _ := a.cli("logs", "sl", "--previous")
	t.Log("previous logs:", out)
	out, _ = a.cli("get", "pods")
	t.Log(out)
}
