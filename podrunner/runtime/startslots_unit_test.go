package runtime

import (
	"context"
	"errors"
	"testing"
	"time"
)

// startSlot lets MaxParallelStarts callers through, queues the next until one releases, and
// gives up when the caller's context ends; without a bound it never waits.
func TestStartSlots(t *testing.T) {
	r := &Runtime{starts: make(chan struct{}, 2)}
	ctx := context.Background()
	rel1, err := r.startSlot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.startSlot(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		rel, err := r.startSlot(ctx)
		if err == nil {
			rel()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("a third start went through with 2 slots taken (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	rel1()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the queued start did not get the released slot")
	}

	// Both slots taken again (one still held from above): a caller whose context ends gives up.
	if _, err := r.startSlot(ctx); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := r.startSlot(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("startSlot with an ended context: %v, want DeadlineExceeded", err)
	}

	unbounded := &Runtime{}
	for i := 0; i < 100; i++ {
		if _, err := unbounded.startSlot(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := DefaultMaxParallelStarts(); n < 8 {
		t.Fatalf("DefaultMaxParallelStarts() = %d, want at least 8", n)
	}
}
