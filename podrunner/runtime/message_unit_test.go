package runtime

import (
	"strings"
	"testing"
)

// A termination message is kept up to the kubelet's 4096 bytes (its tail), across two labels
// when one cannot hold it (containerd: key and value at most 4096 bytes together).
func TestMessageLabels(t *testing.T) {
	for _, n := range []int{0, 1, 4096 - len(LabelMessage), 4096 - len(LabelMessage) + 1, 4096, 5000} {
		msg := strings.Repeat("a", n/2) + strings.Repeat("b", n-n/2)
		labels := messageLabels(msg)
		for k, v := range labels {
			if len(k)+len(v) > 4096 {
				t.Errorf("%d bytes: label %s holds %d bytes with its key, over containerd's 4096", n, k, len(k)+len(v))
			}
		}
		want := msg
		if len(want) > 4096 {
			want = want[len(want)-4096:]
		}
		if got := messageFromLabels(labels); got != want {
			t.Errorf("%d bytes: read back %d bytes, want %d (the tail)", n, len(got), len(want))
		}
		if n == 0 && len(labels) != 0 {
			t.Errorf("an empty message sets labels: %v", labels)
		}
	}
}
