package podrunner

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ExecTarget returns the ID of the running instance of container in pod, for `podkeeper
// exec`. Errors wrap ErrNotFound and name the choices.
func (m *Manager) ExecTarget(ctx context.Context, pod *corev1.Pod, container string) (string, error) {
	var names []string
	known := false
	for _, c := range allContainers(pod) {
		names = append(names, c.Name)
		known = known || c.Name == container
	}
	if !known {
		return "", fmt.Errorf("container %s %w in pod %s (containers: %s)", container, ErrNotFound, pod.Name, strings.Join(names, ", "))
	}
	recs, err := m.rt.ListContainers(ctx, string(pod.UID))
	if err != nil {
		return "", fmt.Errorf("exec: list containers of %s: %w", pod.Name, err)
	}
	r, ok := NewPodView(recs).Latest(container)
	if !ok || r.State != StateRunning {
		return "", fmt.Errorf("container %s in pod %s is not running (%w)", container, pod.Name, ErrNotFound)
	}
	return r.ID, nil
}

// ExecIn runs req in container instance id (Runtime.Exec).
func (m *Manager) ExecIn(ctx context.Context, id string, req ExecRequest) (int, error) {
	return m.rt.Exec(ctx, id, req)
}
