package podrunner

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseThresholds(t *testing.T) {
	got := DefaultHardThresholds()
	want := []string{"memory.available<100Mi", "nodefs.available<10%", "imagefs.available<15%", "nodefs.inodesFree<5%"}
	if len(got) != len(want) {
		t.Fatalf("defaults %v", got)
	}
	for i := range want {
		if got[i].String() != want[i] || got[i].Grace != 0 {
			t.Errorf("default %d = %s (grace %s), want %s hard", i, got[i], got[i].Grace, want[i])
		}
	}
	soft, err := ParseThresholds("memory.available<1.5Gi,pid.available<10%", "memory.available=1m30s,pid.available=30s")
	if err != nil {
		t.Fatal(err)
	}
	if soft[0].Grace != 90*time.Second || soft[0].Value(0) != 1536<<20 || soft[1].Value(32768) != 3276 {
		t.Errorf("soft = %+v", soft)
	}
	for _, tc := range []struct{ spec, grace string }{
		{"memory.available>100Mi", ""},
		{"memory.free<100Mi", ""},
		{"memory.available<lots", ""},
		{"nodefs.available<0%", ""},
		{"nodefs.available<101%", ""},
		{"memory.available<1Gi,memory.available<2Gi", ""},
		{"memory.available<1Gi", "memory.available=-1s"},
		{"memory.available<1Gi", "nodefs.available=1m"},
		{"memory.available<1Gi,nodefs.available<5%", "memory.available=1m"},
	} {
		if _, err := ParseThresholds(tc.spec, tc.grace); err == nil {
			t.Errorf("ParseThresholds(%q, %q) accepted", tc.spec, tc.grace)
		}
	}
}

func TestThresholdsMet(t *testing.T) {
	th := DefaultHardThresholds()
	met := ThresholdsMet(th, map[Signal][2]int64{
		SignalMemoryAvailable: {50 << 20, 4 << 30},   // below 100Mi
		SignalNodeFsAvailable: {20 << 30, 100 << 30}, // 20% > 10%
	})
	if len(met) != 1 || met[0].Signal != SignalMemoryAvailable {
		t.Fatalf("met = %v", met)
	}
}

func TestRankForEviction(t *testing.T) {
	p := func(name string, prio int32, ann string) *corev1.Pod {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
		pod.Spec.Priority = &prio
		if ann != "" {
			pod.Annotations = map[string]string{NeverEvictAnnotation: ann}
		}
		return pod
	}
	cands := []Candidate{
		{Pod: p("critical", 2000001000, ""), Usage: 900, Request: 0},
		{Pod: p("optout", 0, "true"), Usage: 800, Request: 0},
		{Pod: p("burstable-under", 0, ""), Usage: 100, Request: 200},
		{Pod: p("burstable-over", 0, ""), Usage: 300, Request: 100},
		{Pod: p("besteffort", 0, ""), Usage: 250, Request: 0},
		{Pod: p("high-prio-over", 1000, ""), Usage: 999, Request: 0},
		{Pod: p("optout-false", 0, "false"), Usage: 50, Request: 100},
	}
	var got []string
	for _, c := range RankForEviction(cands) {
		got = append(got, c.Pod.Name)
	}
	want := []string{"besteffort", "burstable-over", "high-prio-over", "optout-false", "burstable-under"} // under-request ones: more above (less below) the request first
	if len(got) != len(want) {
		t.Fatalf("rank = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("rank = %v, want %v", got, want)
		}
	}
}

// Disk pressure ranks by ephemeral-storage: over the request first, then priority, then usage;
// processes and inodes have no request, so priority, then usage.
func TestRankForEvictionBySignal(t *testing.T) {
	pod := func(name string, prio int32, storageReq string) *corev1.Pod {
		p := reqPod(name)
		p.Name = name
		p.Spec.Priority = &prio
		if storageReq != "" {
			p.Spec.Containers[0].Resources.Requests = rlist("ephemeral-storage", storageReq, "memory", "1Gi")
		}
		return p
	}
	pods := []*corev1.Pod{pod("big-under-request", 0, "1Gi"), pod("small-no-request", 0, ""), pod("big-no-request", 0, ""), pod("prio-big", 100, "")}
	usage := map[string]int64{"big-under-request": 500 << 20, "small-no-request": 1 << 20, "big-no-request": 300 << 20, "prio-big": 900 << 20}
	for _, tc := range []struct {
		sig  Signal
		want []string
	}{
		{SignalNodeFsAvailable, []string{"big-no-request", "small-no-request", "prio-big", "big-under-request"}},
		{SignalImageFsAvailable, []string{"big-no-request", "small-no-request", "prio-big", "big-under-request"}},
		{SignalPIDAvailable, []string{"big-under-request", "big-no-request", "small-no-request", "prio-big"}},
		{SignalNodeFsInodesFree, []string{"big-under-request", "big-no-request", "small-no-request", "prio-big"}},
	} {
		var cands []Candidate
		for _, p := range pods {
			cands = append(cands, Candidate{Pod: p, Usage: usage[p.Name], Request: RequestFor(p, tc.sig)})
		}
		var got []string
		for _, c := range RankForEviction(cands) {
			got = append(got, c.Pod.Name)
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: rank = %v, want %v", tc.sig, got, tc.want)
		}
	}
	if got := RequestFor(pods[0], SignalMemoryAvailable); got != 1<<30 {
		t.Errorf("memory request = %d", got)
	}
}
