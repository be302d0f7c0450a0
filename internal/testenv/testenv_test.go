package testenv

import (
	"strings"
	"testing"
)

func TestRaceReports(t *testing.T) {
	report := func(n string) string {
		return "WARNING: DATA RACE\nWrite at 0x00c by goroutine " + n + ":\n  main.f()\n"
	}
	sep := "==================\n"
	for _, tc := range []struct {
		name, out string
		want      []string
	}{
		{"none", "time=... level=INFO msg=started\n", nil},
		{"one", "log line\n" + sep + report("7") + sep + "more log\n", []string{report("7")}},
		{"two", sep + report("7") + sep + "x\n" + sep + report("9") + sep, []string{report("7"), report("9")}},
		{"cut off", "log\n" + sep + report("3"), []string{report("3")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RaceReports([]byte(tc.out))
			if want := strings.Join(tc.want, "\n"); got != want {
				t.Errorf("RaceReports = %q, want %q", got, want)
			}
		})
	}
}
