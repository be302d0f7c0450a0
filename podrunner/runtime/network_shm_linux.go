package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/podrunner"
)

// A pod's containers share its IPC namespace, so they also share one /dev/shm (POSIX shared
// memory lives there), as with the CRI: a 64 MiB tmpfs per sandbox, mounted on the host under
// the pod dir when the sandbox is created (path in its labels), bind-mounted into every
// container, unmounted when the sandbox is removed. hostIPC pods use the host's /dev/shm.

const podShmSize = 64 << 20

// LabelShm records a sandbox's /dev/shm mount, so any runtime (whatever its root dir) can remove it.
const LabelShm = "podkeeper.io/shm"

func sandboxShmPath(root, podUID, sandboxID string) string {
	return filepath.Join(podDir(root, podUID), "shm", sandboxID)
}

// mountSandboxShm creates the sandbox's /dev/shm tmpfs. Idempotent.
func mountSandboxShm(path string) error {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return fmt.Errorf("create pod /dev/shm: %w", err)
	}
	if isMountpoint(path) {
		return nil
	}
	if err := unix.Mount("shm", path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, fmt.Sprintf("mode=1777,size=%d", podShmSize)); err != nil {
		return fmt.Errorf("mount pod /dev/shm: %w", err)
	}
	return nil
}

// unmountSandboxShm removes it. Missing is fine.
func unmountSandboxShm(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount pod /dev/shm %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

func isMountpoint(path string) bool {
	var st, parent unix.Stat_t
	if unix.Stat(path, &st) != nil || unix.Stat(filepath.Dir(path), &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
}

// podShmOpts bind-mounts the sandbox's /dev/shm into a container (none for hostIPC pods, which
// containerNamespaceOpts gives the host's). The tmpfs is (re)mounted if missing, e.g. after a
// reboot replaced the sandbox.
func (r *Runtime) podShmOpts(pod *corev1.Pod, sb podrunner.ContainerRecord) ([]oci.SpecOpts, error) {
	if pod.Spec.HostIPC {
		return nil, nil
	}
	path := sandboxShmPath(r.cfg.RootDir, string(pod.UID), sb.ID)
	if err := mountSandboxShm(path); err != nil {
		return nil, err
	}
	return []oci.SpecOpts{func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		m := specs.Mount{Destination: "/dev/shm", Type: "bind", Source: path, Options: []string{"rbind", "rprivate", "rw"}}
		for i := range s.Mounts {
			if s.Mounts[i].Destination == "/dev/shm" {
				s.Mounts[i] = m
				return nil
			}
		}
		s.Mounts = append(s.Mounts, m)
		return nil
	}}, nil
}

// releaseSandboxShm unmounts the /dev/shm of removed container id (labels: its labels). Not a
// sandbox: nothing.
func (r *Runtime) releaseSandboxShm(id string, labels map[string]string) error {
	if podrunner.ContainerKind(labels[LabelKind]) != podrunner.KindSandbox {
		return nil
	}
	path := labels[LabelShm]
	if path == "" && labels[LabelPodUID] != "" && r.cfg.RootDir != "" {
		path = sandboxShmPath(r.cfg.RootDir, labels[LabelPodUID], id) // mounted by a container start
	}
	if path == "" {
		return nil
	}
	return unmountSandboxShm(path)
}

// unmountPodShms unmounts every sandbox /dev/shm left in a pod's dir (before the dir is deleted).
func unmountPodShms(root, podUID string) error {
	ents, err := os.ReadDir(filepath.Join(podDir(root, podUID), "shm"))
	if err != nil {
		return nil
	}
	var errs []error
	for _, e := range ents {
		errs = append(errs, unmountSandboxShm(filepath.Join(podDir(root, podUID), "shm", e.Name())))
	}
	return errors.Join(errs...)
}
