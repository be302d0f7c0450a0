package podrunner

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// RecursiveReadOnly says whether a volume mount is to be made recursively read-only (the
// mounts under it read-only too, not only the mount itself): for recursiveReadOnly Enabled
// always, an error when the runtime cannot (supported false); for IfPossible when the runtime
// can; never otherwise. The manifest's validation has already refused the mode on a writable
// mount or with a propagation other than None. Pure.
func RecursiveReadOnly(m corev1.VolumeMount, supported bool) (bool, error) {
	if m.RecursiveReadOnly == nil || !m.ReadOnly {
		return false, nil
	}
	switch *m.RecursiveReadOnly {
	case corev1.RecursiveReadOnlyIfPossible:
		return supported, nil
	case corev1.RecursiveReadOnlyEnabled:
		if !supported {
			return false, fmt.Errorf("volume %q requested recursive read-only mode, but the runtime does not support it", m.Name)
		}
		return true, nil
	}
	return false, nil
}

// volumeMountStatuses is a container status's volumeMounts as the kubelet reports them: each of
// the spec's mounts by name and path, and for a read-only one whether it is recursively
// read-only (Enabled or Disabled; absent for a writable mount). Pure.
func volumeMountStatuses(c *corev1.Container, rroSupported bool) []corev1.VolumeMountStatus {
	var out []corev1.VolumeMountStatus
	for _, m := range c.VolumeMounts {
		st := corev1.VolumeMountStatus{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly}
		if m.ReadOnly {
			mode := corev1.RecursiveReadOnlyDisabled
			if rro, err := RecursiveReadOnly(m, rroSupported); err == nil && rro {
				mode = corev1.RecursiveReadOnlyEnabled
			}
			st.RecursiveReadOnly = &mode
		}
		out = append(out, st)
	}
	return out
}
