package runtime

import (
	"testing"
	"time"
)

func TestExecStartGate(t *testing.T) {
	t.Run("none in flight: closing does not wait, and admits no more", func(t *testing.T) {
		var g execStartGate
		if !g.enter() {
			t.Fatal("an open gate refused a start")
		}
		g.leave()
		if left, waited := g.closeAndWait(time.Second); left != 0 || waited != 0 {
			t.Errorf("closeAndWait = %d, %v; want 0, 0", left, waited)
		}
		if g.enter() {
			t.Error("a closed gate admitted a start")
		}
	})
	t.Run("a start in flight is waited for until it leaves", func(t *testing.T) {
		var g execStartGate
		g.enter()
		g.enter()
		go func() {
			time.Sleep(20 * time.Millisecond)
			g.leave()
			time.Sleep(30 * time.Millisecond)
			g.leave()
		}()
		left, waited := g.closeAndWait(10 * time.Second)
		if left != 0 || waited < 50*time.Millisecond || waited >= 10*time.Second {
			t.Errorf("closeAndWait = %d, %v; want 0 after the second leave (~50ms)", left, waited)
		}
	})
	t.Run("a start that does not end is waited for until the bound", func(t *testing.T) {
		var g execStartGate
		g.enter()
		left, waited := g.closeAndWait(30 * time.Millisecond)
		if left != 1 || waited < 30*time.Millisecond {
			t.Errorf("closeAndWait = %d, %v; want 1 left after 30ms", left, waited)
		}
		g.leave() // a late leave after the bound neither blocks nor panics
		if left, _ := g.closeAndWait(time.Second); left != 0 {
			t.Errorf("second closeAndWait left %d, want 0", left)
		}
	})
}
