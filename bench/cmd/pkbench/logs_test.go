package main

import (
	"strings"
	"testing"
)

func TestParseCRILog(t *testing.T) {
	long := strings.Repeat("x", 50)
	data := "2026-12-07T04:00:00.000000001Z stdout F one\n" +
		"2026-12-07T04:00:00.000000002Z stderr P e\n" +
		"2026-12-07T04:00:00.000000003Z stdout F \n" +
		"2026-12-07T04:00:00.000000004Z stdout P " + long + "\n" +
		"2026-12-07T04:00:00.000000005Z stderr F a b\n"
	n, chunks, stamps := parseCRILog([]byte(data))
	if n != 5 {
		t.Errorf("%d lines, want 5", n)
	}
	if got, want := renderChunks(chunks["stdout"]), `F "one" · F "" · P "xxxxxxxxxxxx"…(50 bytes, crc `; !strings.HasPrefix(got, want) {
		t.Errorf("stdout %q, want it to start with %q", got, want)
	}
	if got, want := renderChunks(chunks["stderr"]), `P "e" · F "a b"`; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
	if stamps != "RFC 3339, in order" {
		t.Errorf("timestamps: %s", stamps)
	}
	for _, tc := range []struct{ data, want string }{
		{"2026-12-07T04:00:00.1Z stdout F a\n2026-12-07T04:00:00.15Z stdout F b\n", "RFC 3339, in order"}, // containerd 1.6's RFC3339Nano
		{"2026-12-07 04:00:00.1Z stdout F a\n", "not the CRI's shape: 2026-12-07"},
		{"2026-12-07T04:00:01.000000000Z stdout F a\n2026-12-07T04:00:00.000000000Z stdout F b\n", "out of order: 2026-12-07T04:00:00.000000000Z after 2026-12-07T04:00:01Z"},
		{"2026-12-07T04:00:01.000000000Z stdout F a\n2026-12-07T04:00:00.000000000Z stderr F b\n", "RFC 3339, in order"}, // streams apart
		{"2026-12-07T04:00:00.000000000Z stdout F a", "last line without a newline"},
	} {
		if _, _, got := parseCRILog([]byte(tc.data)); got != tc.want {
			t.Errorf("%q: timestamps %q, want %q", tc.data, got, tc.want)
		}
	}
}
