package runtime

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// execFIFOHold is how long the FIFOs of an exec an earlier agent left are held open: longer
// than the 30 s a containerd 1.6 runc shim waits in an exec start for a reader.
const execFIFOHold = 35 * time.Second

// releaseExecFIFOs opens the output FIFOs of the execs an earlier agent started and did not see
// through (it was killed between making them and the shim opening them), found in fifoDir's
// FIFO sets whose every FIFO is an exec's ("exec-<id>-stdout"). A shim whose exec start waits
// to open their write ends holds its locks meanwhile, and every call to it (the pod's kills,
// states, exits) waits behind; a reader lets the open go on. Each FIFO is opened for reading
// and writing (which never blocks, and never reads end-of-file before it is closed), what
// comes through is dropped, and after hold it is closed and the set removed. It returns how
// many FIFO sets it found; called once at Connect, before this agent makes any exec of its own.
func releaseExecFIFOs(fifoDir string, hold time.Duration) int {
	sets, _ := os.ReadDir(fifoDir)
	n := 0
	for _, set := range sets {
		if !set.IsDir() {
			continue
		}
		dir := filepath.Join(fifoDir, set.Name())
		ents, err := os.ReadDir(dir)
		if err != nil || len(ents) == 0 {
			continue
		}
		var fifos []string
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), "exec-") || e.Type()&os.ModeNamedPipe == 0 {
				fifos = nil // a container's log FIFOs (re-attached later), or not podkeeper's
				break
			}
			fifos = append(fifos, filepath.Join(dir, e.Name()))
		}
		if len(fifos) == 0 {
			continue
		}
		n++
		var wg sync.WaitGroup
		for _, p := range fifos {
			f, err := os.OpenFile(p, os.O_RDWR|syscall.O_NONBLOCK, 0)
			if err != nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = f.SetReadDeadline(time.Now().Add(hold))
				_, _ = io.Copy(io.Discard, f)
				_ = f.Close()
			}()
		}
		go func() {
			wg.Wait()
			_ = os.RemoveAll(dir)
		}()
	}
	return n
}
