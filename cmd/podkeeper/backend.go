package main

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkeeper/podkeeper/cgroup"
	"github.com/podkeeper/podkeeper/podrunner"
	"github.com/podkeeper/podkeeper/podrunner/api"
)

// lateBackend serves the API before the manager exists (while containerd is awaited): no pods yet.
type lateBackend struct {
	errs   *manifestErrors
	cg     *cgroup.Manager // usage for /stats/summary (top.go); nil without pod cgroups
	node   string
	labels map[string]string // the node's labels (nodeLabels)
	info   nodeInfo          // capacity and allocatable (node.go)
	mu     sync.Mutex
	m      *podrunner.Manager
}

func (b *lateBackend) set(m *podrunner.Manager) {
	b.mu.Lock()
	b.m = m
	b.mu.Unlock()
}

func (b *lateBackend) get() *podrunner.Manager {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m
}

func (b *lateBackend) Pods() []*corev1.Pod {
	if m := b.get(); m != nil {
		return m.Pods()
	}
	return nil
}

func (b *lateBackend) FindPod(ns, name string) (*corev1.Pod, error) {
	if m := b.get(); m != nil {
		return m.FindPod(ns, name)
	}
	return nil, fmt.Errorf("pod %s %w (podkeeper is still waiting for containerd)", name, podrunner.ErrNotFound)
}

func (b *lateBackend) Events(uid types.UID) []corev1.Event {
	if m := b.get(); m != nil {
		return m.Events(uid)
	}
	return nil
}

func (b *lateBackend) ContainerLogPath(ctx context.Context, p *corev1.Pod, c string, prev bool) (string, error) {
	if m := b.get(); m != nil {
		return m.ContainerLogPath(ctx, p, c, prev)
	}
	return "", podrunner.ErrNotFound
}

func (b *lateBackend) ManifestErrors() []api.ManifestError { return b.errs.get() }

func (b *lateBackend) ExecTarget(ctx context.Context, p *corev1.Pod, c string) (string, error) {
	if m := b.get(); m != nil {
		return m.ExecTarget(ctx, p, c)
	}
	return "", podrunner.ErrNotFound
}

func (b *lateBackend) ExecIn(ctx context.Context, id string, req podrunner.ExecRequest) (int, error) {
	if m := b.get(); m != nil {
		return m.ExecIn(ctx, id, req)
	}
	return -1, podrunner.ErrNotFound
}

func (b *lateBackend) Manifests() []api.ManifestFile { return b.errs.manifests() }
