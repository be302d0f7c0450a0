package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/snapshots"
	corev1 "k8s.io/api/core/v1"
)

// Image volumes (volumes[].image, GA in the kubelet 1.36): the busybox image's files mounted
// read-only into two containers of a pod (a subPath of it too); an image that is not on the node under pullPolicy
// Never waits as ErrImageNeverPull; once the pod is removed no mount, view snapshot or lease of
// its volume is left in containerd.
func TestImageVolume(t *testing.T) {
	a := startAgent(t, "pk-e2e-imgvol")
	vol := "  volumes:\n  - name: tools\n    image:\n      reference: busybox\n      pullPolicy: Never\n"
	mount := "    volumeMounts:\n    - name: tools\n      mountPath: /tools\n"
	a.write("iv.yaml", podYAML("iv", "Always", 1, vol,
		shContainer("a", "test -x /tools/bin/busybox && echo found; touch /tools/x 2>/dev/null || echo readonly; sleep 3600", mount),
		shContainer("b", "ls /tools/bin/busybox && ls /only-bin/busybox && echo b-found; sleep 3600", mount+"    - name: tools\n      mountPath: /only-bin\n      subPath: bin\n")))
	a.write("nope.yaml", podYAML("nope", "Always", 1, "  volumes:\n  - name: data\n    image:\n      reference: 127.0.0.1:1/nope/data:1\n      pullPolicy: Never\n",
		shContainer("c", "sleep 3600", "    volumeMounts:\n    - name: data\n      mountPath: /data\n")))
	a.waitPod(60*time.Second, "iv-"+node, "iv running", running)
	a.eventually(20*time.Second, "a sees the image's files, read-only", func() (bool, string) {
		out, err := a.cli("logs", "iv-"+node, "-c", "a")
		return err == nil && strings.Contains(out, "found\nreadonly\n"), out
	})
	a.eventually(20*time.Second, "b sees them too, and its subPath", func() (bool, string) {
		out, err := a.cli("logs", "iv-"+node, "-c", "b")
		return err == nil && strings.Contains(out, "b-found"), out
	})
	p := a.waitPod(60*time.Second, "nope-"+node, "ErrImageNeverPull", func(p *corev1.Pod) bool {
		w := status(p, "c").State.Waiting
		return w != nil && w.Reason == "ErrImageNeverPull"
	})
	if w := status(p, "c").State.Waiting; !strings.Contains(w.Message, "127.0.0.1:1/nope/data:1") {
		t.Errorf("waiting message %q names no image", w.Message)
	}

	nctx, cl, closeCl := dialContainerd(t, a.address, a.ns, time.Minute)
	defer closeCl()
	leftovers := func() []string {
		var out []string
		ls, _ := cl.LeasesService().List(nctx)
		for _, l := range ls {
			if strings.HasPrefix(l.ID, "podkeeper-image-volume.") {
				out = append(out, "lease "+l.ID)
			}
		}
		_ = cl.SnapshotService("overlayfs").Walk(nctx, func(_ context.Context, i snapshots.Info) error {
			if strings.HasPrefix(i.Name, "podkeeper-image-volume.") {
				out = append(out, "snapshot "+i.Name)
			}
			return nil
		})
		b, _ := os.ReadFile("/proc/self/mountinfo")
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "/volumes/image/tools") {
				out = append(out, "mount "+l)
			}
		}
		return out
	}
	if l := leftovers(); len(l) != 3 { // the pod's lease, view snapshot and mount
		t.Errorf("while the pod runs: %q, want its lease, snapshot and mount", l)
	}
	a.remove("iv.yaml")
	a.waitGone(60*time.Second, "iv-"+node, "")
	a.eventually(30*time.Second, "nothing of the image volume left", func() (bool, string) {
		l := leftovers()
		return len(l) == 0, strings.Join(l, "; ")
	})
}
