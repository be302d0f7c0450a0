package runtime

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A shim's exec start blocked opening the write end of an exec FIFO that a killed agent made
// goes on once the next agent releases the FIFO set; a container's log FIFOs are left alone.
func TestReleaseExecFIFOs(t *testing.T) {
	dir := t.TempDir()
	mk := func(set string, names ...string) string {
		d := filepath.Join(dir, set)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if err := syscall.Mkfifo(filepath.Join(d, n), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	execSet := mk("111", "exec-0a1b2c3d4e5f-stdout", "exec-0a1b2c3d4e5f-stderr")
	logSet := mk("222", "abc.app.0-stdout", "abc.app.0-stderr")
	if err := os.MkdirAll(filepath.Join(dir, "holders"), 0o700); err != nil {
		t.Fatal(err)
	}

	opened := make(chan error, 1)
	go func() { // the shim: a blocking open of the write end, then its output
		f, err := os.OpenFile(filepath.Join(execSet, "exec-0a1b2c3d4e5f-stdout"), os.O_WRONLY, 0)
		if err == nil {
			_, err = f.Write([]byte("probe output\n"))
			f.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		t.Fatalf("the write end opened with no reader: %v", err)
	case <-time.After(100 * time.Millisecond):
	}

	if n := releaseExecFIFOs(dir, 300*time.Millisecond); n != 1 {
		t.Errorf("released %d FIFO sets, want 1 (the exec's)", n)
	}
	select {
	case err := <-opened:
		if err != nil {
			t.Errorf("shim side: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the blocked open did not go on after the release")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(execSet); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the exec's FIFO set is still there after the hold")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(logSet, "abc.app.0-stdout")); err != nil {
		t.Errorf("a container's log FIFO was touched: %v", err)
	}
}
