package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podkeeper/podkeeper/internal/testenv"
)

// `podkeeper image import` and `image ls` talk to containerd directly (no agent needed).
func TestImageImportAndList(t *testing.T) {
	tar := filepath.Join(t.TempDir(), "bb.tar")
	if err := testenv.BusyboxTarball(tar); err != nil {
		t.Fatal(err)
	}
	pk := filepath.Join(binDir, "podkeeper")
	common := []string{"--containerd-address", env.Address, "--containerd-namespace", "pk-e2e-images"}
	out, err := exec.Command(pk, append([]string{"image", "import"}, append(common, tar)...)...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "imported "+testenv.Image) {
		t.Fatalf("image import: %v\n%s", err, out)
	}
	out, err = exec.Command(pk, append([]string{"image", "ls"}, common...)...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), testenv.Image) || !strings.Contains(string(out), "sha256:") {
		t.Fatalf("image ls: %v\n%s", err, out)
	}
	out, err = exec.Command(pk, "image", "ls", "--containerd-address", filepath.Join(t.TempDir(), "none.sock")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "cannot reach containerd") {
		t.Fatalf("image ls without containerd: %v\n%s", err, out)
	}
}
