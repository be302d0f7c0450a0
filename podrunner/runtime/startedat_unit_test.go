package runtime

import (
	"testing"
	"time"
)

func TestRestampStart(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	cases := []struct {
		name      string
		start     time.Time
		want      time.Time
		rewritten bool
	}{
		{"fast create: the stamp stays", t0.Add(60 * time.Millisecond), t0, false},
		{"at the slack: stays", t0.Add(startedAtSlack), t0, false},
		{"slow create (loaded machine): the start", t0.Add(17 * time.Second), t0.Add(17 * time.Second), true},
		{"a usual create on a slow machine: stays", t0.Add(300 * time.Millisecond), t0, false},
		{"a sandbox wait: the start", t0.Add(800 * time.Millisecond), t0.Add(800 * time.Millisecond), true},
	}
	for _, tc := range cases {
		got, re := restampStart(t0, tc.start)
		if !got.Equal(tc.want) || re != tc.rewritten {
			t.Errorf("%s: got %v %v, want %v %v", tc.name, got, re, tc.want, tc.rewritten)
		}
	}
}
