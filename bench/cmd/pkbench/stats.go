package main

import (
	"fmt"
	"sort"
	"time"
)

// sample is a set of measured durations.
type sample []time.Duration

func (s sample) sorted() sample {
	c := append(sample(nil), s...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	return c
}

// pct returns the p-th percentile (nearest rank); 0 for an empty sample.
func (s sample) pct(p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := s.sorted()
	i := int(p/100*float64(len(c))+0.999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(c) {
		i = len(c) - 1
	}
	return c[i]
}

func (s sample) median() time.Duration { return s.pct(50) }
func (s sample) min() time.Duration    { return s.pct(0) }
func (s sample) max() time.Duration    { return s.pct(100) }

// summary is "median (min-max)" or "p50 / p99 (min-max)".
func (s sample) summary(withP99 bool) string {
	if len(s) == 0 {
		return "n/a"
	}
	if withP99 {
		return fmt.Sprintf("%s / %s (%s, n=%d)", ms(s.median()), ms(s.pct(99)), s.span(), len(s))
	}
	if len(s) == 1 {
		return ms(s[0])
	}
	return fmt.Sprintf("%s (%s, n=%d)", ms(s.median()), s.span(), len(s))
}

// span is "min-max", or "min to max" when min is negative ("-172 ms to -3 ms").
func (s sample) span() string {
	if s.min() < 0 {
		return ms(s.min()) + " to " + ms(s.max())
	}
	return ms(s.min()) + "-" + ms(s.max())
}

func ms(d time.Duration) string {
	if d >= 10*time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	if d >= time.Second {
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}

// ratio is a/b as "1.23x", or "n/a".
func ratio(a, b time.Duration) string {
	if a == 0 || b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", float64(a)/float64(b))
}

func mib(kib int64) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }
