package main

import (
	"testing"

	"github.com/podkeeper/podkeeper/podrunner"
)

// observeNode reads every signal of this machine, each with 0 <= available <= capacity.
func TestObserveNode(t *testing.T) {
	dir := t.TempDir()
	obs, err := observeNode(dir, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []podrunner.Signal{podrunner.SignalMemoryAvailable, podrunner.SignalNodeFsAvailable, podrunner.SignalNodeFsInodesFree, podrunner.SignalImageFsAvailable, podrunner.SignalPIDAvailable} {
		o, ok := obs[s]
		if !ok {
			t.Errorf("%s not observed", s)
			continue
		}
		if o[1] <= 0 || o[0] < 0 || o[0] > o[1] {
			t.Errorf("%s: available %d of %d", s, o[0], o[1])
		}
	}
	if _, err := observeNode("/nonexistent/dir", dir); err == nil {
		t.Error("no error for a missing nodefs dir")
	}
}
