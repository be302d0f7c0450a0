// Package ci holds what tests share about running under CI.
package ci

import (
	"fmt"
	"os"
	"testing"
)

// Missing reports that something a test needs is not on this machine. Under CI (CI set) that
// fails the test: CI must run every real-component test, never skip one. Elsewhere it skips.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI=%s: a test that cannot run fails)", msg, os.Getenv("CI"))
	}
	t.Skip(msg)
}
