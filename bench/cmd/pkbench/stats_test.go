package main

import (
	"testing"
	"time"
)

func TestPercentiles(t *testing.T) {
	var s sample
	for i := 100; i >= 1; i-- {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{0, time.Millisecond}, {50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}} {
		if got := s.pct(tc.p); got != tc.want {
			t.Errorf("p%v = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := (sample{}).median(); got != 0 {
		t.Errorf("empty median = %v", got)
	}
	if got := (sample{3 * time.Second}).pct(99); got != 3*time.Second {
		t.Errorf("single p99 = %v", got)
	}
}
