package main

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
)

const image = "docker.io/library/busybox:latest"

// floorRunner starts the same busybox sleepers straight through the containerd client: create
// (snapshot + spec) and start, nothing else: no sandbox, no logs, no status. It is what any
// agent on containerd must at least spend.
type floorRunner struct {
	name    string
	address string
	ns      string
	client  *containerd.Client
	useCtr  bool // start each container with `ctr run -d` instead of the client
	mu      sync.Mutex
	ids     []string
}

func newFloor(address, ns string, useCtr bool) (*floorRunner, error) {
	c, err := containerd.New(address, containerd.WithDefaultNamespace(ns))
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	name := "floor (client create+start)"
	if useCtr {
		name = "floor (ctr run -d)"
	}
	return &floorRunner{name: name, address: address, ns: ns, client: c, useCtr: useCtr}, nil
}

func (f *floorRunner) Name() string     { return f.name }
func (f *floorRunner) AgentPIDs() []int { return nil }
func (f *floorRunner) ShimPIDs() []int  { return shimsOf(f.address, f.ns) }

func (f *floorRunner) ctx(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, f.ns)
}

func (f *floorRunner) startOne(ctx context.Context, i int) error {
	id := fmt.Sprintf("floor-%d", i)
	if f.useCtr {
		out, err := exec.CommandContext(ctx, "ctr", "--address", f.address, "-n", f.ns, "run", "-d", image, id, "sh", "-c", sleeper).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ctr run -d %s: %v: %s", id, err, out)
		}
	} else {
		ctx = f.ctx(ctx)
		img, err := f.client.GetImage(ctx, image)
		if err != nil {
			return err
		}
		c, err := f.client.NewContainer(ctx, id,
			containerd.WithImage(img),
			containerd.WithNewSnapshot(id, img),
			containerd.WithRuntime("io.containerd.runc.v2", nil),
			containerd.WithNewSpec(oci.WithImageConfig(img), oci.WithProcessArgs("sh", "-c", sleeper)),
		)
		if err != nil {
			return fmt.Errorf("floor create %s: %w", id, err)
		}
		t, err := c.NewTask(ctx, cio.NullIO)
		if err != nil {
			return fmt.Errorf("floor task %s: %w", id, err)
		}
		if _, err := t.Wait(ctx); err != nil {
			return err
		}
		if err := t.Start(ctx); err != nil {
			return fmt.Errorf("floor start %s: %w", id, err)
		}
	}
	f.mu.Lock()
	f.ids = append(f.ids, id)
	f.mu.Unlock()
	return nil
}

// StartBatch starts n containers at once (one goroutine each, as podkeeper runs one worker per pod).
func (f *floorRunner) StartBatch(ctx context.Context, first, n int) (time.Duration, error) {
	t0 := time.Now()
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := first; i < first+n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs <- f.startOne(ctx, i)
		}(i)
	}
	wg.Wait()
	d := time.Since(t0)
	close(errs)
	for err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return d, nil
}

// RemoveAll stops (SIGTERM, the sleeper exits at once) and deletes every container, all at once.
func (f *floorRunner) RemoveAll(ctx context.Context) (time.Duration, error) {
	f.mu.Lock()
	ids := f.ids
	f.ids = nil
	f.mu.Unlock()
	ctx = f.ctx(ctx)
	t0 := time.Now()
	errs := make(chan error, len(ids))
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			errs <- removeContainer(ctx, f.client, id, syscall.SIGTERM)
		}(id)
	}
	wg.Wait()
	d := time.Since(t0)
	close(errs)
	for err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return d, nil
}

func removeContainer(ctx context.Context, cl *containerd.Client, id string, sig syscall.Signal) error {
	c, err := cl.LoadContainer(ctx, id)
	if err != nil {
		return err
	}
	if t, err := c.Task(ctx, nil); err == nil {
		ch, err := t.Wait(ctx)
		if err != nil {
			return err
		}
		if err := t.Kill(ctx, sig); err != nil {
			return err
		}
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			_ = t.Kill(ctx, syscall.SIGKILL)
			<-ch
		}
		if _, err := t.Delete(ctx); err != nil {
			return err
		}
	}
	return c.Delete(ctx, containerd.WithSnapshotCleanup)
}

func (f *floorRunner) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, _ = f.RemoveAll(ctx)
	f.client.Close()
}
