package podrunner

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// withRestartAll gives container name the container policy policy and a RestartAllContainers rule
// on exit code 42.
func withRestartAll(p *corev1.Pod, name string, policy corev1.ContainerRestartPolicy) *corev1.Pod {
	p = withPolicy(p, name, policy)
	rule := corev1.ContainerRestartRule{Action: corev1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			if cs[i].Name == name {
				cs[i].RestartPolicyRules = append(cs[i].RestartPolicyRules, rule)
			}
		}
	}
	return p
}

// The in-place pod restart (RestartAllContainers) as data: which exit triggers it, what is
// stopped and in which order, then everything runs again from the first init container with
// its restart count one up, whatever the policies say, and without backoff.
func TestPlanPodRestartAll(t *testing.T) {
	always, never := corev1.RestartPolicyAlways, corev1.RestartPolicyNever
	now := at(100)
	allWaiting := func(names ...string) map[string]string {
		m := map[string]string{}
		for _, n := range names {
			m[n] = ReasonRestartingAllContainers
		}
		return m
	}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		recs     []ContainerRecord
		gate     RestartGate
		want     planSummary
		wantKill []string
		cause    string
	}{
		{
			name: "an app container exits with its rule's code: the others stop, apps before init containers (sidecar), in spec order",
			pod:  withPolicy(withRestartAll(testPod(never, []string{"init", "side"}, "a", "b", "c"), "b", corev1.ContainerRestartPolicyNever), "side", corev1.ContainerRestartPolicyAlways),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateRunning, at(0)),
				exitedRec("i0", "init", KindInit, 0, 0, at(1), at(2)),
				runningRec("s0", "side", KindInit, 0, at(3)),
				runningRec("a0", "a", KindApp, 0, at(4)),
				exitedRec("b0", "b", KindApp, 0, 42, at(4), at(50)),
				runningRec("c0", "c", KindApp, 0, at(4)),
			},
			want:     planSummary{Phase: corev1.PodRunning, Waiting: allWaiting("init", "side", "a", "b", "c")},
			wantKill: []string{"a0", "c0", "s0"},
			cause:    "b/42",
		},
		{
			name: "after the stops: the init containers run again from the first, one restart more",
			pod:  withPolicy(withRestartAll(testPod(never, []string{"init", "side"}, "a", "b"), "b", corev1.ContainerRestartPolicyNever), "side", corev1.ContainerRestartPolicyAlways),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateRunning, at(0)),
				exitedRec("i0", "init", KindInit, 0, 0, at(1), at(2)),
				exitedRec("s0", "side", KindInit, 0, 137, at(3), at(52)),
				exitedRec("a0", "a", KindApp, 0, 137, at(4), at(51)),
				exitedRec("b0", "b", KindApp, 0, 42, at(4), at(50)),
			},
			want: planSummary{Phase: corev1.PodPending, Start: []string{"init/init/1"},
				Waiting: map[string]string{"a": ReasonPodInitializing, "b": ReasonPodInitializing}},
		},
		{
			name: "init containers done again: every app container starts again, even under restartPolicy Never and an exit 0",
			pod:  withRestartAll(testPod(never, []string{"init"}, "a", "b"), "b", corev1.ContainerRestartPolicyNever),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateRunning, at(0)),
				exitedRec("i0", "init", KindInit, 0, 0, at(1), at(2)),
				exitedRec("i1", "init", KindInit, 1, 0, at(60), at(61)),
				exitedRec("a0", "a", KindApp, 0, 0, at(4), at(30)),
				exitedRec("b0", "b", KindApp, 0, 42, at(4), at(50)),
			},
			gate: gateAt(map[string]time.Time{"b0": at(500)}), // no backoff holds the restart
			want: planSummary{Phase: corev1.PodRunning, Start: []string{"a/app/1", "b/app/1"}},
		},
		{
			name: "the new run goes on normally: a container of it that exits follows its own policy",
			pod:  withRestartAll(testPod(never, nil, "a", "b"), "b", corev1.ContainerRestartPolicyNever),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateRunning, at(0)),
				exitedRec("a0", "a", KindApp, 0, 137, at(4), at(51)),
				exitedRec("a1", "a", KindApp, 1, 1, at(52), at(70)),
				exitedRec("b0", "b", KindApp, 0, 42, at(4), at(50)),
				runningRec("b1", "b", KindApp, 1, at(52)),
			},
			want: planSummary{Phase: corev1.PodRunning},
		},
		{
			name: "an exit the rule does not name: no restart of the pod (the container's policy Never)",
			pod:  withRestartAll(testPod(always, nil, "a", "b"), "b", corev1.ContainerRestartPolicyNever),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateRunning, at(0)),
				runningRec("a0", "a", KindApp, 0, at(4)),
				exitedRec("b0", "b", KindApp, 0, 1, at(4), at(50)),
			},
			want: planSummary{Phase: corev1.PodRunning},
		},
		{
			name: "an init container's exit restarts the pod too: nothing else ran, it runs again at once",
			pod:  withRestartAll(testPod(never, []string{"init"}, "a"), "init", corev1.ContainerRestartPolicyNever),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateRunning, at(0)),
				exitedRec("i0", "init", KindInit, 0, 42, at(1), at(2)),
			},
			gate: gateAt(map[string]time.Time{"i0": at(500)}),
			want: planSummary{Phase: corev1.PodPending, Start: []string{"init/init/1"},
				Waiting: map[string]string{"a": ReasonPodInitializing}},
		},
		{
			name: "a trigger from an earlier sandbox stops nothing in the new one (it restarts as its rule says)",
			pod:  withRestartAll(testPod(always, nil, "a", "b"), "b", corev1.ContainerRestartPolicyNever),
			recs: []ContainerRecord{
				sbRec("sb1", 1, StateRunning, at(60)),
				runningRec("a1", "a", KindApp, 1, at(61)),
				exitedRec("b0", "b", KindApp, 0, 42, at(4), at(50)),
			},
			want: planSummary{Phase: corev1.PodRunning, Start: []string{"b/app/1"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanPod(tc.pod, NewPodView(tc.recs), tc.gate, now)
			got := summarize(p)
			if tc.want.Waiting == nil {
				tc.want.Waiting = map[string]string{}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("plan mismatch\n got: %+v\nwant: %+v", got, tc.want)
			}
			var kill []string
			for _, r := range p.ResetKill {
				kill = append(kill, r.ID)
			}
			if !reflect.DeepEqual(kill, tc.wantKill) {
				t.Errorf("stops %v, want %v", kill, tc.wantKill)
			}
			cause := ""
			if p.Reset != nil {
				cause = fmt.Sprintf("%s/%d", p.Reset.Container, p.Reset.ExitCode)
			}
			if cause != tc.cause {
				t.Errorf("cause %q, want %q", cause, tc.cause)
			}
		})
	}
}
