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

func TestSummarySpan(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		s    sample
		want string
	}{
		{sample{3 * ms, 1 * ms, 2 * ms}, "2 ms (1 ms-3 ms, n=3)"},
		{sample{-172 * ms, -53 * ms, -3 * ms}, "-53 ms (-172 ms to -3 ms, n=3)"},
		{sample{-5 * ms, 7 * ms, 1 * ms}, "1 ms (-5 ms to 7 ms, n=3)"},
	} {
		if got := tc.s.summary(false); got != tc.want {
			t.Errorf("summary(%v) = %q, want %q", tc.s, got, tc.want)
		}
	}
}
