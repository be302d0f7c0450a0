package runtime

import (
	"testing"
	"time"
)

func TestManagedRestartDelay(t *testing.T) {
	for _, tc := range []struct {
		name      string
		prev, ran time.Duration
		want      time.Duration
	}{
		{"a containerd that worked a minute or more: at once", 0, time.Minute, 0},
		{"worked long, after earlier quick deaths: at once again", 30 * time.Second, 2 * time.Hour, 0},
		{"first death soon after its start", 0, 2 * time.Second, 500 * time.Millisecond},
		{"dies again soon: twice as long", 500 * time.Millisecond, time.Second, time.Second},
		{"and again", 8 * time.Second, 100 * time.Millisecond, 16 * time.Second},
		{"capped at 30 s", 16 * time.Second, 0, 30 * time.Second},
		{"stays at the cap", 30 * time.Second, 0, 30 * time.Second},
		{"after an immediate restart that died soon: from 500 ms", 0, 59 * time.Second, 500 * time.Millisecond},
	} {
		if got := managedRestartDelay(tc.prev, tc.ran); got != tc.want {
			t.Errorf("%s: managedRestartDelay(%v, %v) = %v, want %v", tc.name, tc.prev, tc.ran, got, tc.want)
		}
	}
}
