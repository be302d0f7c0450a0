package runtime

import (
	"context"
	"encoding/json"
	"log/slog"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// RecursiveReadOnly says this runtime makes recursively read-only mounts (a volumeMount's
// recursiveReadOnly: Enabled, or IfPossible resolved to Enabled).
func (r *Runtime) RecursiveReadOnly() bool { return r.rro }

// detectRecursiveReadOnly asks runc (the one containerd's runc shim finds on PATH) which mount
// options it knows, as containerd's CRI does: recursively read-only mounts need runc's "rro"
// option and a kernel with mount_setattr (5.12).
func detectRecursiveReadOnly(ctx context.Context, log *slog.Logger) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "runc", "features").Output()
	if err != nil {
		log.Info("recursive read-only mounts unavailable: runc features failed", "err", err)
		return false
	}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return false
	}
	ok := rroSupported(out, unix.ByteSliceToString(uts.Release[:]))
	log.Debug("recursive read-only mounts", "supported", ok)
	return ok
}

// rroSupported decides from `runc features` output and the kernel release. Pure.
func rroSupported(features []byte, kernelRelease string) bool {
	var f struct {
		MountOptions []string `json:"mountOptions"`
	}
	if json.Unmarshal(features, &f) != nil || !slices.Contains(f.MountOptions, "rro") {
		return false
	}
	parts := strings.SplitN(kernelRelease, ".", 3)
	if len(parts) < 2 {
		return false
	}
	leading := func(s string) (int, error) { // "12-rc1" -> 12
		end := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
		if end >= 0 {
			s = s[:end]
		}
		return strconv.Atoi(s)
	}
	major, err1 := leading(parts[0])
	minor, err2 := leading(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return major > 5 || (major == 5 && minor >= 12)
}
