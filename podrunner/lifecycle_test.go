package podrunner

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// sidecarPod is testPod with the named init containers turned into native sidecars.
func sidecarPod(policy corev1.RestartPolicy, inits []string, sidecars map[string]bool, apps ...string) *corev1.Pod {
	p := testPod(policy, inits, apps...)
	always := corev1.ContainerRestartPolicyAlways
	for i := range p.Spec.InitContainers {
		if sidecars[p.Spec.InitContainers[i].Name] {
			p.Spec.InitContainers[i].RestartPolicy = &always
		}
	}
	return p
}

func TestPlanPodSidecars(t *testing.T) {
	always, never := corev1.RestartPolicyAlways, corev1.RestartPolicyNever
	now := at(100)
	side := map[string]bool{"proxy": true, "log": true}
	tests := []struct {
		name string
		pod  *corev1.Pod
		recs []ContainerRecord
		gate RestartGate
		// notStarted lists running containers whose startup probe has not passed (nil probes:
		// every running one has started)
		notStarted []string
		want       planSummary
	}{
		{
			name: "sidecar first in the init list starts alone",
			pod:  sidecarPod(always, []string{"proxy", "init1"}, side, "main"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0))},
			want: planSummary{Start: []string{"proxy/init/0"}, Phase: corev1.PodPending,
				Waiting: map[string]string{"main": ReasonPodInitializing}},
		},
		{
			name: "sidecar started: the next init container starts, sidecar keeps running",
			pod:  sidecarPod(always, []string{"proxy", "init1"}, side, "main"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), runningRec("p0", "proxy", KindInit, 0, at(1))},
			want: planSummary{Start: []string{"init1/init/0"}, Phase: corev1.PodPending,
				Waiting: map[string]string{"main": ReasonPodInitializing}},
		},
		{
			// Found by the conformance scenario sidecar-startup-fails: podkeeper started the app.
			name:       "sidecar running, its startup probe not passed yet: the next init waits",
			pod:        sidecarPod(always, []string{"proxy", "init1"}, side, "main"),
			recs:       []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), runningRec("p0", "proxy", KindInit, 0, at(1))},
			notStarted: []string{"proxy"},
			want:       planSummary{Phase: corev1.PodPending, Waiting: map[string]string{"main": ReasonPodInitializing}},
		},
		{
			name: "sidecar killed by its startup probe before the next init ran: restarted, the next init waits",
			pod:  sidecarPod(always, []string{"proxy", "init1"}, side, "main"),
			recs: []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)), exitedRec("p0", "proxy", KindInit, 0, 137, at(1), at(5))},
			want: planSummary{Start: []string{"proxy/init/1"}, Phase: corev1.PodPending, Waiting: map[string]string{"main": ReasonPodInitializing}},
		},
		{
			name: "past the sidecar (the apps ran): a restarted sidecar not started yet holds nothing",
			pod:  sidecarPod(always, []string{"proxy", "init1"}, side, "main"),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateRunning, at(0)),
				runningRec("p1", "proxy", KindInit, 1, at(50)),
				exitedRec("i0", "init1", KindInit, 0, 0, at(2), at(3)),
				runningRec("m0", "main", KindApp, 0, at(4)),
			},
			notStarted: []string{"proxy"},
			want:       planSummary{Phase: corev1.PodRunning},
		},
		{
			name: "init sequence done, sidecar running: app containers start",
			pod:  sidecarPod(always, []string{"proxy", "init1"}, side, "main"),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateRunning, at(0)),
				runningRec("p0", "proxy", KindInit, 0, at(1)),
				exitedRec("i0", "init1", KindInit, 0, 0, at(2), at(3)),
			},
			want: planSummary{Start: []string{"main/app/0"}, Phase: corev1.PodPending},
		},
		{
			name: "sidecar exited under restartPolicy Never: restarted anyway, apps unaffected",
			pod:  sidecarPod(never, []string{"proxy"}, side, "main"),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateRunning, at(0)),
				exitedRec("p0", "proxy", KindInit, 0, 0, at(1), at(50)),
				runningRec("m0", "main", KindApp, 0, at(2)),
			},
			want: planSummary{Start: []string{"proxy/init/1"}, Phase: corev1.PodRunning},
		},
		{
			// As the kubelet's: the sidecar exited before the next init container ran, so the
			// sequence waits for it to run (and start) again.
			name: "sidecar in backoff before the next init ran: CrashLoopBackOff, the next init waits",
			pod:  sidecarPod(always, []string{"proxy", "init1"}, side, "main"),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateRunning, at(0)),
				exitedRec("p1", "proxy", KindInit, 1, 1, at(80), at(90)),
			},
			gate: gateAt(map[string]time.Time{"p1": at(120)}),
			want: planSummary{Phase: corev1.PodPending, WakeAt: at(120),
				Waiting: map[string]string{"proxy": ReasonCrashLoopBackOff, "main": ReasonPodInitializing}},
		},
		{
			name: "sidecar that could not run: the next init waits, the sidecar backs off",
			pod:  sidecarPod(always, []string{"proxy", "init1"}, side, "main"),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateRunning, at(0)),
				func() ContainerRecord {
					r := exitedRec("p0", "proxy", KindInit, 0, 128, at(80), at(80))
					r.Reason = ReasonStartError
					return r
				}(),
			},
			gate: gateAt(map[string]time.Time{"p0": at(110)}),
			want: planSummary{Phase: corev1.PodPending, WakeAt: at(110),
				Waiting: map[string]string{"proxy": ReasonCrashLoopBackOff, "main": ReasonPodInitializing}},
		},
		{
			name: "app done under Never with sidecars running: Succeeded, sidecars stop in reverse order first",
			pod:  sidecarPod(never, []string{"proxy", "log"}, side, "main"),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateRunning, at(0)),
				runningRec("p0", "proxy", KindInit, 0, at(1)),
				runningRec("l0", "log", KindInit, 0, at(2)),
				exitedRec("m0", "main", KindApp, 0, 0, at(3), at(50)),
			},
			want: planSummary{Phase: corev1.PodSucceeded},
		},
		{
			name: "sidecars stopped after completion: the sandbox goes, no restart",
			pod:  sidecarPod(never, []string{"proxy"}, side, "main"),
			recs: []ContainerRecord{
				sbRec("sb0", 0, StateRunning, at(0)),
				exitedRec("p0", "proxy", KindInit, 0, 143, at(1), at(60)),
				exitedRec("m0", "main", KindApp, 0, 1, at(3), at(50)),
			},
			want: planSummary{StopSandbox: true, Phase: corev1.PodFailed},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var probes ProbeStatus
			if tc.notStarted != nil {
				probes = func(c *corev1.Container, r ContainerRecord) (bool, bool) {
					return !slices.Contains(tc.notStarted, c.Name), true
				}
			}
			plan := PlanPodProbed(tc.pod, NewPodView(tc.recs), tc.gate, probes, now)
			got := summarize(plan)
			if tc.want.Waiting == nil {
				tc.want.Waiting = map[string]string{}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("plan mismatch\n got: %+v\nwant: %+v", got, tc.want)
			}
			if strings.Contains(tc.name, "reverse order") && !reflect.DeepEqual(plan.StopSidecars, []string{"l0", "p0"}) {
				t.Errorf("StopSidecars = %v, want [l0 p0]", plan.StopSidecars)
			}
		})
	}
}

func TestStopOrder(t *testing.T) {
	pod := sidecarPod(corev1.RestartPolicyAlways, []string{"a", "init", "b"}, map[string]bool{"a": true, "b": true}, "main", "web")
	v := NewPodView([]ContainerRecord{
		sbRec("sb0", 0, StateRunning, at(0)),
		runningRec("a0", "a", KindInit, 0, at(1)),
		exitedRec("i0", "init", KindInit, 0, 0, at(1), at(2)),
		runningRec("b0", "b", KindInit, 0, at(2)),
		runningRec("m0", "main", KindApp, 0, at(3)),
		runningRec("w0", "web", KindApp, 0, at(3)),
	})
	apps, beside, sidecars := stopOrder(pod, v)
	ids := func(rs []ContainerRecord) (out []string) {
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	if got := ids(apps); !reflect.DeepEqual(got, []string{"m0", "w0"}) {
		t.Errorf("apps = %v, want [m0 w0]", got)
	}
	if len(beside) != 0 {
		t.Errorf("beside = %v, want none", ids(beside))
	}
	if got := ids(sidecars); !reflect.DeepEqual(got, []string{"b0", "a0"}) {
		t.Errorf("sidecars = %v, want [b0 a0] (reverse spec order)", got)
	}
	// Removed while a plain init container runs after a sidecar: the kubelet's sidecars wait
	// for the app containers only, so the init container stops beside them, not before them
	// (make conformance's term-sidecar-init-running: its SIGTERM came 1.3 s late).
	v = NewPodView([]ContainerRecord{
		sbRec("sb0", 0, StateRunning, at(0)),
		runningRec("a0", "a", KindInit, 0, at(1)),
		runningRec("i0", "init", KindInit, 0, at(2)),
	})
	apps, beside, sidecars = stopOrder(pod, v)
	if len(apps) != 0 || !reflect.DeepEqual(ids(beside), []string{"i0"}) || !reflect.DeepEqual(ids(sidecars), []string{"a0"}) {
		t.Errorf("init running: apps %v, beside %v, sidecars %v; want none, [i0], [a0]", ids(apps), ids(beside), ids(sidecars))
	}
}

func TestPodPhaseSidecarDoesNotDecide(t *testing.T) {
	pod := sidecarPod(corev1.RestartPolicyOnFailure, []string{"proxy"}, map[string]bool{"proxy": true}, "main")
	for _, tc := range []struct {
		name string
		recs []ContainerRecord
		want corev1.PodPhase
	}{
		{"sidecar not started", []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0))}, corev1.PodPending},
		{"sidecar running, app running", []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)),
			runningRec("p0", "proxy", KindInit, 0, at(1)), runningRec("m0", "main", KindApp, 0, at(2))}, corev1.PodRunning},
		{"sidecar running, app succeeded", []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)),
			runningRec("p0", "proxy", KindInit, 0, at(1)), exitedRec("m0", "main", KindApp, 0, 0, at(2), at(3))}, corev1.PodSucceeded},
		{"sidecar failed, app running", []ContainerRecord{sbRec("sb0", 0, StateRunning, at(0)),
			exitedRec("p0", "proxy", KindInit, 0, 1, at(1), at(4)), runningRec("m0", "main", KindApp, 0, at(2))}, corev1.PodRunning},
	} {
		if got := PodPhase(pod, NewPodView(tc.recs)); got != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestGraceLeft(t *testing.T) {
	s := time.Second
	for _, tc := range []struct{ grace, hook, turn, want time.Duration }{
		{30 * s, 5 * s, 0, 25 * s},
		{30 * s, 29 * s, 0, 2 * s},
		{30 * s, 31 * s, 0, 2 * s},
		{3 * s, 0, 0, 3 * s},
		// Whole seconds come off, as the kubelet counts them: 1.7 s of hook takes 1 s.
		{4 * s, 1700 * time.Millisecond, 0, 3 * s},
		{5 * s, 900 * time.Millisecond, 1900 * time.Millisecond, 4 * s},
		{6 * s, 1 * s, 2500 * time.Millisecond, 3 * s},
		// Every stop gets 2 s after the signal, a grace of 0 or 1 s too.
		{0, 0, 0, 2 * s},
		{1 * s, 0, 0, 2 * s},
	} {
		if got := graceLeft(tc.grace, tc.hook, tc.turn); got != tc.want {
			t.Errorf("graceLeft(%s, %s, %s) = %s, want %s", tc.grace, tc.hook, tc.turn, got, tc.want)
		}
	}
}

func TestTerminationGrace(t *testing.T) {
	for _, tc := range []struct{ spec, want time.Duration }{
		{0, time.Second}, {time.Second, time.Second}, {30 * time.Second, 30 * time.Second},
	} {
		if got := terminationGrace(tc.spec); got != tc.want {
			t.Errorf("terminationGrace(%s) = %s, want %s", tc.spec, got, tc.want)
		}
	}
}

func TestHookURL(t *testing.T) {
	c := &corev1.Container{Name: "web", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	pod := testPod(corev1.RestartPolicyAlways, nil, "web")
	withIP := pod.DeepCopy()
	withIP.Status.PodIP = "10.88.0.7"
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		h       corev1.HTTPGetAction
		want    string
		wantErr bool
	}{
		{"no pod IP: loopback", pod, corev1.HTTPGetAction{Path: "/quit", Port: intstr.FromInt32(80)}, "http://127.0.0.1:80/quit", false},
		{"pod IP", withIP, corev1.HTTPGetAction{Path: "quit", Port: intstr.FromInt32(80)}, "http://10.88.0.7:80/quit", false},
		{"host wins, named port, https", withIP, corev1.HTTPGetAction{Host: "example.test", Path: "/", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTPS}, "https://example.test:8080/", false},
		{"unknown named port", pod, corev1.HTTPGetAction{Port: intstr.FromString("nope")}, "", true},
		{"port out of range", pod, corev1.HTTPGetAction{Port: intstr.FromInt32(70000)}, "", true},
	} {
		got, err := hookURL(tc.pod, c, &tc.h)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s: hookURL = %q, %v; want %q (error %v)", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestHookRunner(t *testing.T) {
	rt := newFakeRuntime()
	pod := testPod(corev1.RestartPolicyAlways, nil, "main")
	rt.Seed(runningRec("c0", "main", KindApp, 0, at(0)))
	c := &pod.Spec.Containers[0]
	var hits []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.URL.Path+" "+r.Header.Get("X-Hook"))
		mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError) // the kubelet ignores the status code
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	hr := hookRunner{rt: rt}
	ctx := context.Background()

	if _, err := hr.run(ctx, pod, c, "c0", "PreStop", &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: "/stop", Port: intstr.FromInt(port), HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Hook", Value: "yes"}}}}); err != nil {
		t.Fatalf("httpGet hook: %v", err)
	}
	if len(hits) != 1 || hits[0] != "/stop yes" {
		t.Errorf("server saw %v, want one GET /stop with the header", hits)
	}
	srv.Close()
	if msg, err := hr.run(ctx, pod, c, "c0", "PreStop", &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/stop", Port: intstr.FromInt(port)}}); err == nil || !strings.HasPrefix(msg, "HTTP lifecycle hook (/stop) for Container \"main\"") {
		t.Errorf("httpGet to a closed server: msg %q err %v; want a failure in the kubelet's words", msg, err)
	}

	rt.SetExec(func(_ context.Context, _ string, req ExecRequest) (int, error) {
		_, _ = req.Stdout.Write([]byte("boom"))
		return 3, nil
	})
	msg, err := hr.run(ctx, pod, c, "c0", "PostStart", &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}})
	if err == nil || !strings.Contains(msg, "Exec lifecycle hook ([false])") || !strings.Contains(msg, "boom") {
		t.Errorf("failing exec hook: msg %q err %v", msg, err)
	}
	// The pod as the kubelet's format.Pod names it (make conformance's poststart-fails: the
	// waiting reason PostStartHookError carries this message).
	if want := fmt.Sprintf("in Pod %q failed", pod.Name+"_"+pod.Namespace+"("+string(pod.UID)+")"); !strings.Contains(msg, want) {
		t.Errorf("failing exec hook: msg %q, want it to contain %q", msg, want)
	}

	sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	began := time.Now()
	if msg, err := hr.run(sctx, pod, c, "c0", "PreStop", &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 60}}); err == nil || !strings.HasPrefix(msg, "Sleep lifecycle hook (60)") {
		t.Errorf("sleep cut short by the grace period: msg %q err %v, want the kubelet's failure", msg, err)
	}
	if _, err := hr.run(ctx, pod, c, "c0", "PreStop", &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 0}}); err != nil {
		t.Errorf("sleep 0: %v", err)
	}
	if time.Since(began) > 30*time.Second {
		t.Errorf("sleep hook ignored its context")
	}
}

// TestManagerPreStopBeforeStopAndSidecarsLast drives a whole pod on the fake runtime: at removal
// the preStop exec runs before the app's StopContainer, and the sidecar stops after the app.
func TestManagerPreStopBeforeStopAndSidecarsLast(t *testing.T) {
	e := newEnv(t, slowBackoff)
	pod := withGrace(mgrPod("uid-ps", "ps", corev1.RestartPolicyAlways, "main"), 5)
	always := corev1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "busybox:1", RestartPolicy: &always}}
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"stop"}}}}
	var order []string
	var mu sync.Mutex
	e.rt.SetExec(func(_ context.Context, id string, req ExecRequest) (int, error) {
		mu.Lock()
		order = append(order, "exec:"+req.Cmd[0])
		mu.Unlock()
		return 0, nil
	})
	e.rt.SetStopHook(func(_ context.Context, id string) {
		mu.Lock()
		order = append(order, "stop:"+id)
		mu.Unlock()
	})
	e.run(t)
	e.m.Update([]*corev1.Pod{pod})
	side := e.waitRunning(t, "uid-ps", "proxy", 0)
	app := e.waitRunning(t, "uid-ps", "main", 0)
	if s := e.starts("uid-ps", "proxy"); len(s) != 1 || s[0].Seq > e.starts("uid-ps", "main")[0].Seq {
		t.Fatalf("sidecar must start before the app: %v", e.rt.Calls("StartContainer"))
	}
	e.m.Update(nil)
	waitFor(t, "pod removed", func() bool { return e.status("uid-ps") == nil })
	mu.Lock()
	defer mu.Unlock()
	want := []string{"exec:stop", "stop:" + app.ID, "stop:" + side.ID}
	if len(order) < 3 || !reflect.DeepEqual(order[:3], want) {
		t.Errorf("termination order %v, want %v first", order, want)
	}
}

// A failing preStop is recorded as FailedPreStopHook and the container still stops; a preStop
// that overruns the grace period leaves the kubelet's 2 s minimum for the stop signal.
func TestManagerPreStopFailureAndOverrun(t *testing.T) {
	e := newEnv(t, slowBackoff)
	failing := withGrace(mgrPod("uid-f", "f", corev1.RestartPolicyAlways, "main"), 5)
	failing.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"fail"}}}}
	slow := withGrace(mgrPod("uid-s", "s", corev1.RestartPolicyAlways, "main"), 1)
	slow.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"hang"}}}}
	e.rt.SetExec(func(ctx context.Context, _ string, req ExecRequest) (int, error) {
		if req.Cmd[0] == "hang" {
			<-ctx.Done()
			return -1, ctx.Err()
		}
		return 1, nil
	})
	e.run(t)
	e.m.Update([]*corev1.Pod{failing, slow})
	fr := e.waitRunning(t, "uid-f", "main", 0)
	sr := e.waitRunning(t, "uid-s", "main", 0)
	e.m.Update(nil)
	waitFor(t, "pods removed", func() bool { return e.status("uid-f") == nil && e.status("uid-s") == nil })
	grace := map[string]time.Duration{}
	for _, c := range e.rt.Calls("StopContainer") {
		grace[c.ID] = c.Grace
	}
	if g := grace[fr.ID]; g < 4*time.Second || g > 5*time.Second {
		t.Errorf("failing preStop: stop grace %s, want what is left of 5s", g)
	}
	if g := grace[sr.ID]; g != 2*time.Second {
		t.Errorf("overrunning preStop: stop grace %s, want the 2s minimum", g)
	}
	found := false
	for _, ev := range e.m.Events("uid-f") {
		if ev.Reason == ReasonFailedPreStopHook && strings.Contains(ev.Message, "Exec lifecycle hook ([fail])") {
			found = true
		}
	}
	if !found {
		t.Errorf("no FailedPreStopHook event: %+v", e.m.Events("uid-f"))
	}
}

// refreshingRuntime is the fake runtime plus VolumeRefresher, counting refreshes.
type refreshingRuntime struct {
	*fakeRuntime
	mu    sync.Mutex
	pods  []string
	sawIP string
}

func (r *refreshingRuntime) RefreshVolumes(pod *corev1.Pod, lookup ConfigLookup) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pods = append(r.pods, string(pod.UID))
	r.sawIP = pod.Status.HostIP
	return false, nil
}

type noLookup struct{}

func (noLookup) ConfigMap(string, string) (*corev1.ConfigMap, bool) { return nil, false }
func (noLookup) Secret(string, string) (*corev1.Secret, bool)       { return nil, false }

// The worker re-applies a pod's configMap/secret volumes on its syncs, with the downward API's
// status fields filled.
func TestWorkerRefreshesVolumes(t *testing.T) {
	e := newEnv(t, slowBackoff)
	rr := &refreshingRuntime{fakeRuntime: e.rt}
	e.m.rt = rr
	e.m.cfg.Lookup = noLookup{}
	pod := mgrPod("uid-v", "v", corev1.RestartPolicyAlways, "main")
	pod.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "x"}}}}}
	e.run(t)
	e.m.Update([]*corev1.Pod{pod})
	e.waitRunning(t, "uid-v", "main", 0)
	waitFor(t, "a volume refresh", func() bool {
		rr.mu.Lock()
		defer rr.mu.Unlock()
		return len(rr.pods) > 0 && rr.pods[0] == "uid-v" && rr.sawIP == "10.0.0.5"
	})
}

// As the kubelet: a sidecar's preStop runs when the pod starts terminating, beside the app's,
// while its stop signal waits for the app containers to be gone.
func TestManagerSidecarPreStopRunsAtOnce(t *testing.T) {
	e := newEnv(t, slowBackoff)
	pod := withGrace(mgrPod("uid-sp", "sp", corev1.RestartPolicyAlways, "main"), 20)
	always := corev1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers = []corev1.Container{{Name: "side", Image: "busybox:1", RestartPolicy: &always,
		Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"side-hook"}}}}}}
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"app-hook"}}}}
	sideHookRan := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var order []string
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	e.rt.SetExec(func(ctx context.Context, _ string, req ExecRequest) (int, error) {
		switch req.Cmd[0] {
		case "side-hook":
			note("side-hook")
			once.Do(func() { close(sideHookRan) })
		case "app-hook":
			select { // only finishes if the sidecar's hook runs meanwhile
			case <-sideHookRan:
				note("app-hook")
			case <-ctx.Done():
				note("app-hook-timed-out")
			}
		}
		return 0, nil
	})
	e.run(t)
	e.m.Update([]*corev1.Pod{pod})
	side := e.waitRunning(t, "uid-sp", "side", 0)
	app := e.waitRunning(t, "uid-sp", "main", 0)
	e.rt.SetStopHook(func(_ context.Context, id string) { note("stop:" + id) })
	e.m.Update(nil)
	waitFor(t, "pod removed", func() bool { return e.status("uid-sp") == nil })
	mu.Lock()
	defer mu.Unlock()
	if len(order) < 4 || !reflect.DeepEqual(order[:4], []string{"side-hook", "app-hook", "stop:" + app.ID, "stop:" + side.ID}) {
		t.Errorf("order %v, want both hooks first, then the app's stop, then the sidecar's", order)
	}
}

func TestShowStartFailures(t *testing.T) {
	runErr := Waiting{Reason: ReasonRunContainerError, Message: "runc create failed: Cwd must be an absolute path"}
	hookErr := Waiting{Reason: ReasonPostStartHookError, Message: "Exec lifecycle hook ... failed"}
	waiting := map[string]Waiting{
		"a": {Reason: ReasonCrashLoopBackOff, Message: "back-off 10s restarting failed container=a"},
		"b": {Reason: "ImagePullBackOff"},
		"d": {Reason: ReasonCrashLoopBackOff},
	}
	showStartFailures(waiting, map[string]Waiting{"a": runErr, "b": runErr, "c": runErr, "d": hookErr})
	want := map[string]Waiting{"a": runErr, "b": {Reason: "ImagePullBackOff"}, "d": hookErr}
	if !reflect.DeepEqual(waiting, want) {
		t.Errorf("waiting = %+v, want %+v", waiting, want)
	}
}
