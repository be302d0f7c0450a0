package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/podrunner/api"
)

// containerNames lists a pod's containers as `logs --all-containers` visits them: init
// containers first, in order, then app containers.
func containerNames(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.InitContainers {
		out = append(out, c.Name)
	}
	for _, c := range p.Spec.Containers {
		out = append(out, c.Name)
	}
	return out
}

// allContainerLogs prints the output of every container of a pod: one after the other, or,
// with Follow, all at once with whole lines interleaved. prefix adds "[pod/NAME/CONTAINER] ".
func allContainerLogs(ctx context.Context, cl *api.Client, ns, name string, o api.LogOptions, prefix bool, out io.Writer) error {
	p, err := cl.Pod(ctx, ns, name)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	writer := func(container string) *lineWriter {
		lw := &lineWriter{mu: &mu, out: out}
		if prefix {
			lw.prefix = []byte(fmt.Sprintf("[pod/%s/%s] ", p.Name, container))
		}
		return lw
	}
	names := containerNames(p)
	if !o.Follow {
		var errs []error
		for _, c := range names {
			oc := o
			oc.Container = c
			lw := writer(c)
			err := cl.Logs(ctx, p.Namespace, p.Name, oc, lw)
			lw.flush()
			if err != nil && !isNotFound(err) && !api.IsNoLogsYet(err) { // a container that never ran has no log yet
				errs = append(errs, fmt.Errorf("container %s: %w", c, err))
			}
		}
		return errors.Join(errs...)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, c := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			oc := o
			oc.Container = c
			lw := writer(c)
			defer lw.flush()
			if err := cl.Logs(ctx, p.Namespace, p.Name, oc, lw); err != nil && !isNotFound(err) && !api.IsNoLogsYet(err) {
				errs[i] = fmt.Errorf("container %s: %w", c, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func isNotFound(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Code == 404
}

// lineWriter writes whole lines (with an optional prefix) under a lock shared by writers of
// one output, so concurrent streams never split each other's lines.
type lineWriter struct {
	mu     *sync.Mutex
	out    io.Writer
	prefix []byte
	buf    []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if err := l.emit(l.buf[:i+1]); err != nil {
			return 0, err
		}
		l.buf = l.buf[i+1:]
	}
}

func (l *lineWriter) emit(line []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.out.Write(l.prefix); err != nil {
		return err
	}
	_, err := l.out.Write(line)
	return err
}

// flush writes a last line that had no newline.
func (l *lineWriter) flush() {
	if len(l.buf) > 0 {
		_ = l.emit(append(l.buf, '\n'))
		l.buf = nil
	}
}
