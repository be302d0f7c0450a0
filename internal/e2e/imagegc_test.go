package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/internal/ociimage"
)

// Image GC on a real containerd: with the thresholds at 0% an unused image is removed; the image
// of a running pod stays and the pod keeps running.
func TestImageGCRemovesOnlyUnused(t *testing.T) {
	ns := "pk-e2e-imagegc"
	// The pod runs before GC is switched on: with the thresholds at 0 a GC round between the
	// agent's start and the manifest's arrival rightly removes busybox, unused then (a slow
	// agent, as the race detector's, lost that race).
	a := startAgentAt(t, ns, env.Address)
	a.write("keep.yaml", podYAML("keep", "Always", 1, "", shContainer("keep", "sleep 3600", "")))
	first := a.waitPod(60*time.Second, "keep-"+node, "keep running", running)
	a.kill9()
	a.extra = append(a.extra, "--image-gc-high-threshold", "0", "--image-gc-low-threshold", "0",
		"--image-minimum-gc-age", "0s", "--image-gc-interval", "1s")
	a.start()
	a.waitPod(60*time.Second, "keep-"+node, "keep running, re-attached", func(p *corev1.Pod) bool {
		return running(p) && p.UID == first.UID && p.Status.ContainerStatuses[0].RestartCount == 0
	})
	ctr := func(args ...string) (string, error) {
		out, err := exec.Command("ctr", append([]string{"-a", env.Address, "-n", ns}, args...)...).CombinedOutput()
		return string(out), err
	}
	// An image of its own content (another config), imported by the agent from its images dir.
	if err := ociimage.WriteBusyboxImageFile(filepath.Join(a.root, "images", "gc-me.tar"), ociimage.Config{Name: "docker.io/library/gc-me:1", Labels: map[string]string{"gc": "me"}}); err != nil {
		t.Fatal(err)
	}
	a.eventually(30*time.Second, "gc-me imported", func() (bool, string) {
		b, _ := os.ReadFile(filepath.Join(a.dir, "agent.log"))
		return strings.Contains(string(b), "gc-me"), ""
	})
	a.eventually(30*time.Second, "gc-me removed", func() (bool, string) {
		out, err := ctr("images", "ls", "-q")
		return err == nil && !strings.Contains(out, "gc-me") && strings.Contains(out, "docker.io/library/busybox:latest"), out
	})
	time.Sleep(2 * time.Second) // more GC rounds: the used image stays
	out, _ := ctr("images", "ls", "-q")
	if !strings.Contains(out, "docker.io/library/busybox:latest") {
		t.Fatalf("image in use removed:\n%s", out)
	}
	a.waitPod(10*time.Second, "keep-"+node, "keep still running", running)
}
