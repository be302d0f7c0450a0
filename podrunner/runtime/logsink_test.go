package runtime

import (
	"bytes"
	"errors"
	"testing"
)

type flakyWriter struct {
	fail bool
	buf  bytes.Buffer
}

func (f *flakyWriter) Write(p []byte) (int, error) {
	if f.fail {
		return 0, errors.New("no space left on device")
	}
	return f.buf.Write(p)
}

// A failing log never fails the copy: output is dropped while it fails and written again after.
func TestKeepDrainingSurvivesWriteErrors(t *testing.T) {
	f := &flakyWriter{}
	w := keepDraining(f, "/logs/c/0.log", nil)
	for _, tc := range []struct {
		fail bool
		in   string
	}{{false, "a\n"}, {true, "lost\n"}, {true, "lost too\n"}, {false, "b\n"}} {
		f.fail = tc.fail
		n, err := w.Write([]byte(tc.in))
		if err != nil || n != len(tc.in) {
			t.Fatalf("Write(%q) with fail=%v = %d, %v; want %d, nil", tc.in, tc.fail, n, err, len(tc.in))
		}
	}
	if got := f.buf.String(); got != "a\nb\n" {
		t.Fatalf("written %q, want %q", got, "a\nb\n")
	}
	if d := w.(*drainingWriter); d.failing || d.dropped != int64(len("lost\nlost too\n")) {
		t.Fatalf("state failing=%v dropped=%d", d.failing, d.dropped)
	}
}
