package podrunner

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// seqOf is the sequence number of the first call of op about pod uid (and container name, when
// given), 0 when there is none.
func (e *testEnv) seqOf(op, uid, name string) int {
	for _, c := range e.rt.CallsFor(op, uid) {
		if name == "" || c.Name == name {
			return c.Seq
		}
	}
	return 0
}

// A new pod's first container is created while its sandbox is still starting; its process
// starts only once the sandbox has, and no relist comes between the sandbox and the start.
func TestNewPodCreatesFirstContainerWhileSandboxStarts(t *testing.T) {
	e := newEnv(t, slowBackoff)
	hold := make(chan struct{})
	e.rt.sandboxHold = hold
	e.m.Update([]*corev1.Pod{mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main")})
	e.run(t)
	waitFor(t, "the container created while the sandbox starts", func() bool { return e.seqOf("CreateContainerEarly", "uid-a", "main") > 0 })
	if _, ok := e.rt.Running("uid-a", "main"); ok {
		t.Fatal("the container runs before its sandbox has started")
	}
	close(hold)
	e.waitRunning(t, "uid-a", "main", 0)
	sb, early, start := e.seqOf("CreateSandbox", "uid-a", ""), e.seqOf("CreateContainerEarly", "uid-a", "main"), e.seqOf("StartContainer", "uid-a", "main")
	if !(sb < early && early < start) {
		t.Fatalf("call order: CreateSandbox #%d, early create #%d, StartContainer #%d", sb, early, start)
	}
	for _, c := range e.rt.CallsFor("ListContainers", "uid-a") {
		if c.Seq > sb && c.Seq < start {
			t.Fatalf("a relist (#%d) between the sandbox (#%d) and the container's start (#%d)", c.Seq, sb, start)
		}
	}
	if n := len(e.starts("uid-a", "main")); n != 1 {
		t.Fatalf("%d starts, want 1", n)
	}
	// The image found on the node before the early create is not looked up a second time (its
	// policy pulls only a missing image).
	if look, ensure := e.rt.Calls("ImagePresent"), e.rt.Calls("EnsureImage"); len(look) != 1 || len(ensure) != 0 {
		t.Fatalf("image lookups %+v and ensures %+v, want one lookup", look, ensure)
	}
}

// When the sandbox fails after its namespaces existed, the container created against it is not
// charged a failure of its own: the pod shows the sandbox's failure and tries again.
func TestSandboxFailureIsNotTheEarlyContainersFailure(t *testing.T) {
	e := newEnv(t, slowBackoff)
	e.rt.sandboxErr = errors.New("CNI ADD failed")
	hold := make(chan struct{})
	e.rt.sandboxHold = hold
	e.m.Update([]*corev1.Pod{mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main")})
	e.run(t)
	waitFor(t, "the container created while the sandbox starts", func() bool { return e.seqOf("CreateContainerEarly", "uid-a", "main") > 0 })
	close(hold)
	waitFor(t, "the FailedCreatePodSandBox event", func() bool {
		for _, ev := range e.rec.Events("uid-a") {
			if ev.Reason == "FailedCreatePodSandBox" {
				return true
			}
		}
		return false
	})
	if n := len(e.starts("uid-a", "main")); n != 0 {
		t.Fatalf("%d container starts went through without a sandbox", n)
	}
	cs, ok := e.containerStatus("uid-a", "main")
	if !ok || cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" {
		t.Fatalf("container status %+v, want waiting ContainerCreating (the sandbox failed, not the container)", cs.State)
	}
	for _, ev := range e.rec.Events("uid-a") {
		if ev.Reason == ReasonFailed {
			t.Fatalf("a container failure event for the sandbox's failure: %+v", ev)
		}
	}
}

// What cannot be created before the network is up, or needs a pull, waits for the next step.
func TestEarlyCreateSkipsPodIPEnvAndMissingImages(t *testing.T) {
	cases := []struct {
		name  string
		setup func(*testEnv, *corev1.Pod)
		early []string // containers created while the sandbox started
	}{
		{"both early", func(*testEnv, *corev1.Pod) {}, []string{"one", "two"}},
		{"the pod IP in the second's env", func(_ *testEnv, p *corev1.Pod) {
			p.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
		}, []string{"one"}},
		{"the first's image not on the node", func(e *testEnv, p *corev1.Pod) {
			p.Spec.Containers[0].Image = "remote:1"
			e.rt.FailPull("remote:1", errors.New("not here")) // (the second is not created early either: order)
		}, nil},
		{"an init container first", func(e *testEnv, p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1"}}
			go func() { // the init container ends well once it runs
				for deadline := time.Now().Add(waitTimeout); time.Now().Before(deadline); {
					if r, ok := e.rt.Running("uid-a", "init"); ok {
						e.rt.Exit(t, r.ID, 0)
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			}()
		}, []string{"init"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, slowBackoff)
			pod := mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "one", "two")
			c.setup(e, pod)
			e.m.Update([]*corev1.Pod{pod})
			e.run(t)
			waitFor(t, "the sandbox", func() bool { return e.seqOf("CreateSandbox", "uid-a", "") > 0 })
			e.waitRunning(t, "uid-a", "two", 0) // (after "one", in every case)
			var got []string
			for _, call := range e.rt.CallsFor("CreateContainerEarly", "uid-a") {
				got = append(got, call.Name)
			}
			if len(got) != len(c.early) || (len(got) > 0 && got[len(got)-1] != c.early[len(c.early)-1]) {
				t.Fatalf("created early: %v, want %v", got, c.early)
			}
		})
	}
}

func TestNeedsPodIP(t *testing.T) {
	field := func(path string) corev1.EnvVar {
		return corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	for _, c := range []struct {
		env  []corev1.EnvVar
		want bool
	}{
		{nil, false},
		{[]corev1.EnvVar{{Name: "A", Value: "status.podIP"}}, false},
		{[]corev1.EnvVar{field("status.hostIP"), field("metadata.name")}, false},
		{[]corev1.EnvVar{field("metadata.name"), field("status.podIP")}, true},
		{[]corev1.EnvVar{field("status.podIPs")}, true},
	} {
		if got := NeedsPodIP(&corev1.Container{Env: c.env}); got != c.want {
			t.Errorf("NeedsPodIP(%+v) = %v, want %v", c.env, got, c.want)
		}
	}
}

// A pod whose sandbox died (here: one left created by an agent killed mid-start) gets the next
// sandbox attempt, and, as the kubelet does, the dead one is stopped (its IP and namespaces
// released) before the new one is made.
func TestDeadSandboxIsReleasedBeforeTheNextIsMade(t *testing.T) {
	e := newEnv(t, slowBackoff)
	e.rt.Seed(ContainerRecord{ID: "uid-a-sandbox-0", PodUID: "uid-a", PodName: "a-node1", PodNamespace: "default",
		Kind: KindSandbox, Attempt: 0, State: StateCreated, TaskPresent: true})
	e.m.Update([]*corev1.Pod{mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main")})
	e.run(t)
	e.waitRunning(t, "uid-a", "main", 0)
	var stopped, created int
	for _, c := range e.rt.CallsFor("StopContainer", "uid-a") {
		if c.ID == "uid-a-sandbox-0" && stopped == 0 {
			stopped = c.Seq
		}
	}
	cs := e.rt.CallsFor("CreateSandbox", "uid-a")
	if len(cs) != 1 || cs[0].Attempt != 1 {
		t.Fatalf("sandbox creations %+v, want one, attempt 1", cs)
	}
	created = cs[0].Seq
	if stopped == 0 || stopped > created {
		t.Fatalf("the dead sandbox stopped at call #%d, the new one created at #%d: want the stop first", stopped, created)
	}
}
