package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/internal/ociimage"
	"github.com/podkeeper/podkeeper/internal/testenv"
)

// Pod spec fields the kubelet acts on and podkeeper once ignored: readinessGates hold the pod's
// Ready condition (nobody sets the gates' conditions without an API server); hostUsers: false
// is refused as by a kubelet on a runtime without user namespaces, never run in the host's user
// namespace instead; an AppArmor profile is refused on this host (no AppArmor), as the kubelet
// refuses it, while Unconfined runs; a runtimeClassName is refused (no RuntimeClass objects),
// where the kubelet without an API server crashes.
func TestReadinessGatesHostUsersAppArmor(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "pk-e2e-podspec")
	a.write("gated.yaml", podYAML("gated", "Always", 1, "  readinessGates:\n  - conditionType: example.com/lb\n",
		shContainer("c", "exec sleep 3600", "")))
	a.write("userns.yaml", podYAML("userns", "Always", 1, "  hostUsers: false\n", shContainer("c", "exec sleep 3600", "")))
	a.write("rtclass.yaml", podYAML("rtclass", "Always", 1, "  runtimeClassName: gvisor\n", shContainer("c", "exec sleep 3600", "")))
	a.write("confined.yaml", podYAML("confined", "Always", 1, "", shContainer("c", "exec sleep 3600",
		"    securityContext:\n      appArmorProfile:\n        type: RuntimeDefault\n")))
	a.write("unconfined.yaml", podYAML("unconfined", "Always", 1, "  securityContext:\n    appArmorProfile:\n      type: Unconfined\n",
		shContainer("c", "exec sleep 3600", "")))

	p := a.waitPod(60*time.Second, "gated-e2e", "running, containers ready", func(p *corev1.Pod) bool {
		return running(p) && status(p, "c").Ready
	})
	for _, c := range p.Status.Conditions {
		switch c.Type {
		case corev1.PodReady:
			if c.Status != corev1.ConditionFalse || c.Reason != "ReadinessGatesNotReady" ||
				c.Message != `corresponding condition of pod readiness gate "example.com/lb" does not exist.` {
				t.Errorf("Ready = %s/%s/%q, want False/ReadinessGatesNotReady", c.Status, c.Reason, c.Message)
			}
		case corev1.ContainersReady:
			if c.Status != corev1.ConditionTrue {
				t.Errorf("ContainersReady = %s, want True", c.Status)
			}
		}
	}

	appArmorHost := false
	if b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled"); err == nil && strings.HasPrefix(string(b), "Y") {
		appArmorHost = true
	}
	wantMsg := "Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host"
	if appArmorHost {
		wantMsg = "Pod was rejected: Cannot enforce AppArmor: podkeeper does not apply AppArmor profiles"
	}
	a.waitPod(30*time.Second, "confined-e2e", "rejected for AppArmor", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "AppArmor" && strings.HasPrefix(p.Status.Message, wantMsg)
	})
	a.waitPod(60*time.Second, "unconfined-e2e", "running", running)
	a.waitEvent(10*time.Second, "AppArmor", "Cannot enforce AppArmor")

	a.waitEvent(30*time.Second, "FailedCreatePodSandBox", "can't set `spec.hostUsers: false`, runtime does not support user namespaces")
	u := a.waitPod(10*time.Second, "userns-e2e", "pending", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodPending })
	if recs := a.records(string(u.UID)); len(recs) != 0 {
		t.Errorf("a pod asking for a user namespace got containers: %+v", recs)
	}
	// runtimeClassName: no RuntimeClass objects without an API server; refused, not run with runc.
	a.waitEvent(30*time.Second, "FailedCreatePodSandBox", `runtimeclass.node.k8s.io "gvisor" not found`)
	r := a.waitPod(10*time.Second, "rtclass-e2e", "pending", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodPending })
	if recs := a.records(string(r.UID)); len(recs) != 0 {
		t.Errorf("a pod naming a RuntimeClass got containers: %+v", recs)
	}
}

// supplementalGroupsPolicy: Merge (the default) gives the process the groups the image's
// /etc/group lists its user in, for the image's user and for a runAsUser alike (as containerd's
// CRI); Strict gives none of them, only the primary group, fsGroup and supplementalGroups. The
// kubelet 1.37 on containerd 1.6 refuses Strict (the runtime cannot do it); podkeeper writes the
// process's groups itself, so it can.
func TestSupplementalGroupsPolicy(t *testing.T) {
	a := startAgent(t, "pk-e2e-groups")
	img := ociimage.Config{Name: "docker.io/library/groups:1", ExtraFiles: map[string][]byte{
		"/etc/passwd": []byte("root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000::/:/bin/sh\n"),
		"/etc/group":  []byte("root:x:0:\nwheel:x:10:root\nstaff:x:50:app\napp:x:1000:\n"),
	}}
	if err := ociimage.WriteBusyboxImageFile(filepath.Join(a.root, "images", "groups.tar"), img); err != nil {
		t.Fatal(err)
	}
	pod := func(name, sc string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n  securityContext:\n" + sc +
			"  containers:\n  - name: c\n    image: docker.io/library/groups:1\n    imagePullPolicy: Never\n" +
			"    command: [\"sh\", \"-c\", \"echo groups: $(id -G); sleep 3600\"]\n"
	}
	want := map[string][]string{
		"merge-uid":   {"1000", "3000", "50"},
		"strict-uid":  {"1000", "3000"},
		"merge-root":  {"0", "10"},
		"strict-root": {"0"},
	}
	a.write("merge-uid.yaml", pod("merge-uid", "    runAsUser: 1000\n    runAsGroup: 1000\n    supplementalGroups: [3000]\n"))
	a.write("strict-uid.yaml", pod("strict-uid", "    runAsUser: 1000\n    runAsGroup: 1000\n    supplementalGroups: [3000]\n    supplementalGroupsPolicy: Strict\n"))
	a.write("merge-root.yaml", pod("merge-root", "    supplementalGroupsPolicy: Merge\n"))
	a.write("strict-root.yaml", pod("strict-root", "    supplementalGroupsPolicy: Strict\n"))
	for name, groups := range want {
		a.eventually(60*time.Second, name+" reports its groups", func() (bool, string) {
			out, err := a.cli("logs", name+"-"+node)
			if err != nil {
				return false, out
			}
			_, list, ok := strings.Cut(strings.TrimSpace(out), "groups: ")
			if !ok {
				return false, out
			}
			got := strings.Fields(list)
			sort.Strings(got)
			return strings.Join(got, " ") == strings.Join(groups, " "), fmt.Sprintf("groups %v, want %v", got, groups)
		})
	}
}

// The kubelet's node checks at admission: a nodeSelector or required node affinity the node's
// labels (--node-labels) do not match, another OS, and a host port another pod holds refuse the
// pod (Failed, the kubelet's reasons); the refused pod starts once the port is free.
func TestNodeAdmission(t *testing.T) {
	testenv.HoldPortmapChains(t) // port-a maps a hostPort (held before the agent: released after its clean-up)
	a := startAgentAt(t, "pk-e2e-nodeadm", env.Address, "--node-labels", "role=gateway")
	sleeper := shContainer("c", "sleep 3600", "")
	a.write("sel-ok.yaml", podYAML("sel-ok", "Always", 1, "  nodeSelector:\n    role: gateway\n", sleeper))
	a.write("sel-no.yaml", podYAML("sel-no", "Always", 1, "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"+
		"        nodeSelectorTerms:\n        - matchExpressions:\n          - key: role\n            operator: In\n            values: [db]\n", sleeper))
	a.write("win.yaml", podYAML("win", "Always", 1, "  os:\n    name: windows\n", sleeper))
	port := "    ports:\n    - containerPort: 80\n      hostPort: 18080\n"
	a.write("port-a.yaml", podYAML("port-a", "Always", 1, "", shContainer("c", "sleep 3600", port)))
	a.waitPod(60*time.Second, "sel-ok-"+node, "sel-ok running", running)
	pa := a.waitPod(60*time.Second, "port-a-"+node, "port-a running", running)
	a.write("port-b.yaml", podYAML("port-b", "Always", 1, "", shContainer("c", "sleep 3600", port)))
	for name, want := range map[string]string{
		"sel-no": "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
		"win":    "Pod was rejected: Failed to admit pod as the OS field doesn't match node OS",
		"port-b": "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
	} {
		p := a.waitPod(30*time.Second, name+"-"+node, name+" rejected", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		if p.Status.Message != want {
			t.Errorf("%s: message %q, want %q", name, p.Status.Message, want)
		}
		if len(a.records(string(p.UID))) != 0 {
			t.Errorf("%s: containers made for a rejected pod", name)
		}
	}
	out, err := a.cli("describe", "node")
	if err != nil || !strings.Contains(out, "role=gateway") {
		t.Errorf("describe node shows no role=gateway label (%v):\n%s", err, out)
	}
	a.remove("port-a.yaml")
	a.waitGone(60*time.Second, "port-a-"+node, string(pa.UID))
	a.waitPod(60*time.Second, "port-b-"+node, "port-b running once the port is free", running)
}

// Sysctls as the kubelet admits them: a safe one is set in the pod; an unsafe one is refused
// (Failed, SysctlForbidden) unless --allowed-unsafe-sysctls allows it, and then it is set in the
// pod's own IPC namespace, not on the host.
func TestSysctlAdmission(t *testing.T) {
	a := startAgentAt(t, "pk-e2e-sysctl", env.Address, "--allowed-unsafe-sysctls", "kernel.shm*")
	sysctls := func(kv ...string) string {
		out := "  securityContext:\n    sysctls:\n"
		for i := 0; i < len(kv); i += 2 {
			out += fmt.Sprintf("    - name: %s\n      value: %q\n", kv[i], kv[i+1])
		}
		return out
	}
	a.write("safe.yaml", podYAML("safe", "Always", 1, sysctls("net.ipv4.ip_unprivileged_port_start", "80", "kernel.shmmni", "2048"),
		shContainer("c", "echo port=$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start) shmmni=$(cat /proc/sys/kernel/shmmni); sleep 3600", "")))
	a.write("unsafe.yaml", podYAML("unsafe", "Always", 1, sysctls("kernel.msgmax", "65536"), shContainer("c", "sleep 3600", "")))
	a.waitPod(60*time.Second, "safe-"+node, "safe running", running)
	a.eventually(20*time.Second, "the sysctls set in the pod", func() (bool, string) {
		out, err := a.cli("logs", "safe-"+node)
		return err == nil && strings.Contains(out, "port=80 shmmni=2048"), out
	})
	if b, err := os.ReadFile("/proc/sys/kernel/shmmni"); err != nil || strings.TrimSpace(string(b)) == "2048" {
		t.Errorf("the host's kernel.shmmni is %q (%v): the pod's value leaked to the host", b, err)
	}
	p := a.waitPod(30*time.Second, "unsafe-"+node, "unsafe rejected", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if want := `Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted`; p.Status.Reason != "SysctlForbidden" || p.Status.Message != want {
		t.Errorf("unsafe: %s %q, want SysctlForbidden %q", p.Status.Reason, p.Status.Message, want)
	}
	if len(a.records(string(p.UID))) != 0 {
		t.Errorf("containers made for a rejected pod")
	}
}

// A Localhost seccomp profile the node lacks: the container waits as the kubelet's
// CreateContainerError with containerd's CRI message, and starts (after its backoff) once the
// profile is there.
func TestSeccompLocalhostMissing(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "pk-e2e-seccomp")
	a.write("sc.yaml", podYAML("sc", "Always", 1, "", shContainer("c", "echo confined; sleep 3600",
		"    securityContext:\n      seccompProfile:\n        type: Localhost\n        localhostProfile: profiles/allow.json\n")))
	p := a.waitPod(60*time.Second, "sc-"+node, "CreateContainerError", func(p *corev1.Pod) bool {
		w := status(p, "c").State.Waiting
		return w != nil && w.Reason == "CreateContainerError"
	})
	file := filepath.Join(a.root, "seccomp", "profiles", "allow.json")
	if w := status(p, "c").State.Waiting; w.Message != fmt.Sprintf("failed to create containerd container: cannot load seccomp profile %q: open %s: no such file or directory", file, file) {
		t.Errorf("waiting message %q", w.Message)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(`{"defaultAction": "SCMP_ACT_ALLOW"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	a.waitPod(60*time.Second, "sc-"+node, "running once the profile is there", running)
}

// hostnameOverride (GA in the kubelet 1.37) is the containers' hostname, /etc/hostname and the
// name in /etc/hosts, over spec.hostname and the pod name.
func TestHostnameOverride(t *testing.T) {
	a := startAgent(t, "pk-e2e-hostname")
	a.write("h.yaml", podYAML("h", "Always", 1, "  hostname: web\n  hostnameOverride: edge-gw.example.com\n",
		shContainer("c", "echo name=$(hostname) file=$(cat /etc/hostname); grep -c edge-gw.example.com /etc/hosts; sleep 3600", "")))
	a.waitPod(60*time.Second, "h-"+node, "h running", running)
	a.eventually(20*time.Second, "the override is the hostname", func() (bool, string) {
		out, err := a.cli("logs", "h-"+node)
		return err == nil && strings.Contains(out, "name=edge-gw.example.com file=edge-gw.example.com\n1\n"), out
	})
}

// What a container sees inside is what containerd's CRI gives a kubelet's container (make
// conformance's inside-* scenarios compare them): HOSTNAME set, the runtime's open-file limit
// (not the containerd client's 1024), the image's /run (no tmpfs), its own cgroup at
// /sys/fs/cgroup with its memory limit, and a medium: Memory emptyDir sized by the pod's limit
// with the mode of a fresh tmpfs; a volume listed before the one it is nested in stays visible.
func TestContainerInsideAsTheCRI(t *testing.T) {
	t.Parallel()
	a := startAgent(t, "pk-e2e-inside")
	a.write("in.yaml", podYAML("in", "Always", 1, "  volumes:\n  - name: m\n    emptyDir:\n      medium: Memory\n  - name: outer\n    emptyDir: {}\n  - name: inner\n    emptyDir: {}\n",
		shContainer("c", "echo host=$HOSTNAME nofile=$(ulimit -Hn) run=$(grep -c ' /run ' /proc/self/mounts)"+
			" cglimit=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max)"+
			" m=$(stat -c %a /m) msize=$(df -k /m | tail -1 | awk '{print $2}') mounted=$(grep -o ' /data[^ ]*' /proc/self/mounts | tr -d ' ' | tr '\\n' ,); sleep 3600",
			"    resources:\n      limits:\n        memory: 32Mi\n    volumeMounts:\n    - name: m\n      mountPath: /m\n"+
				"    - name: inner\n      mountPath: /data/sub\n    - name: outer\n      mountPath: /data\n")))
	a.waitPod(60*time.Second, "in-"+node, "in running", running)
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	nofile := strconv.FormatUint(lim.Max, 10) // containerd, started by the test, has its hard limit
	if lim.Max == unix.RLIM_INFINITY {
		nofile = "unlimited"
	}
	want := fmt.Sprintf("host=in-%s nofile=%s run=0 cglimit=%d m=1777 msize=%d mounted=/data,/data/sub,\n", node, nofile, 32<<20, 32<<10)
	a.eventually(20*time.Second, "the container's inside", func() (bool, string) {
		out, err := a.cli("logs", "in-"+node)
		return err == nil && out == want, fmt.Sprintf("%q, want %q", out, want)
	})
}

// stdin: true keeps the container's stdin open (a `sh` waits instead of reading end-of-file and
// exiting, which made such pods crash loop), also across an agent kill -9 (its holder process is
// not the agent); tty: true gives the container a terminal (runc refused to create it before)
// whose CRLF line ends are not in the log; the holder goes with the pod.
func TestStdinAndTTY(t *testing.T) {
	a := startAgent(t, "pk-e2e-stdin")
	a.write("in.yaml", podYAML("in", "Always", 1, "", "  - name: c\n    image: busybox\n    imagePullPolicy: IfNotPresent\n    command: [\"sh\"]\n    stdin: true\n"))
	a.write("both.yaml", podYAML("both", "Always", 1, "", "  - name: c\n    image: busybox\n    imagePullPolicy: IfNotPresent\n    command: [\"sh\"]\n    stdin: true\n    tty: true\n"))
	a.write("tty.yaml", podYAML("tty", "Always", 1, "", shContainer("c", "tty; echo hi; sleep 3600", "    tty: true\n")))
	holders := func() []string {
		var out []string
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err == nil && strings.Contains(string(b), "podkeeper-stdin-holder") {
				out = append(out, e.Name())
			}
		}
		return out
	}
	pods := map[string]*corev1.Pod{}
	for _, n := range []string{"in", "both", "tty"} {
		pods[n] = a.waitPod(60*time.Second, n+"-"+node, n+" running", running)
	}
	a.eventually(20*time.Second, "tty's output", func() (bool, string) {
		out, err := a.cli("logs", "tty-"+node)
		return err == nil && strings.Contains(out, "/dev/pts/") && strings.Contains(out, "hi"), out
	})
	// The terminal ends lines with CRLF; the log has lines, as the CRI's (no CR before the LF).
	if out, err := a.cli("logs", "tty-"+node); err != nil || strings.Contains(out, "\r") || !strings.HasSuffix(out, "\nhi\n") {
		t.Errorf("tty's log %q (err %v), want its lines without the terminal's CR", out, err)
	}
	time.Sleep(3 * time.Second) // a shell that got end-of-file would have exited by now
	check := func(when string) {
		t.Helper()
		for _, n := range []string{"in", "both"} {
			p := a.waitPod(10*time.Second, n+"-"+node, n+" running", running)
			if cs := status(p, "c"); cs.RestartCount != 0 || cs.State.Running == nil {
				t.Errorf("%s: %s: restarts %d, state %+v: the shell's stdin closed", when, n, cs.RestartCount, cs.State)
			}
		}
	}
	check("after the start")
	if h := holders(); len(h) != 2 {
		t.Errorf("%d stdin holders, want 2 (in and both): %v", len(h), h)
	}
	a.kill9()
	time.Sleep(2 * time.Second)
	a.start()
	time.Sleep(3 * time.Second)
	check("after an agent kill -9")
	for _, n := range []string{"in", "both"} {
		a.remove(n + ".yaml")
		a.waitGone(60*time.Second, n+"-"+node, string(pods[n].UID))
	}
	a.eventually(10*time.Second, "the stdin holders gone with their pods", func() (bool, string) {
		h := holders()
		return len(h) == 0, fmt.Sprint(h)
	})
}

// env fileKeyRef: an init container writes KEY='value' lines into an emptyDir, the app container
// gets the values as variables (a multi-line one too); a key the file lacks waits in
// CreateContainerConfigError naming it, and an optional one is left out; a symlink out of the
// volume is not followed.
func TestEnvFileKeyRef(t *testing.T) {
	a := startAgent(t, "pk-e2e-envfile")
	vols := "  volumes:\n  - name: e\n    emptyDir: {}\n"
	writer := "  initContainers:\n" + shContainer("w", `mkdir -p /e/out; printf "GREETING='hello from init'\nMULTI='a\nb'\n" > /e/out/vars`,
		"    volumeMounts:\n    - name: e\n      mountPath: /e\n")
	ref := func(name, key string, optional bool) string {
		return fmt.Sprintf("    - name: %s\n      valueFrom:\n        fileKeyRef:\n          volumeName: e\n          path: out/vars\n          key: %s\n          optional: %v\n", name, key, optional)
	}
	a.write("ok.yaml", podYAML("ok", "Always", 1, vols+writer,
		shContainer("c", `echo "g=[$G] m=[$M] opt=[${OPT-unset}]"; sleep 3600`, "    env:\n"+ref("G", "GREETING", false)+ref("M", "MULTI", false)+ref("OPT", "ABSENT", true))))
	a.write("missing.yaml", podYAML("missing", "Always", 1, vols+writer,
		shContainer("c", "sleep 3600", "    env:\n"+ref("X", "ABSENT", false))))
	a.write("escape.yaml", podYAML("escape", "Always", 1, vols+"  initContainers:\n"+shContainer("w", "mkdir -p /e/out; ln -s /etc/hostname /e/out/vars",
		"    volumeMounts:\n    - name: e\n      mountPath: /e\n"), shContainer("c", "sleep 3600", "    env:\n"+ref("X", "GREETING", false))))
	a.waitPod(60*time.Second, "ok-"+node, "ok running", running)
	a.eventually(20*time.Second, "the values from the file", func() (bool, string) {
		out, err := a.cli("logs", "ok-"+node)
		return err == nil && strings.Contains(out, "g=[hello from init] m=[a\nb] opt=[unset]"), out
	})
	p := a.waitPod(60*time.Second, "missing-"+node, "CreateContainerConfigError", func(p *corev1.Pod) bool {
		w := status(p, "c").State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError"
	})
	if w := status(p, "c").State.Waiting; !strings.Contains(w.Message, `environment variable key "ABSENT" not found in file "out/vars"`) {
		t.Errorf("waiting message %q", w.Message)
	}
	p = a.waitPod(60*time.Second, "escape-"+node, "CreateContainerConfigError", func(p *corev1.Pod) bool {
		w := status(p, "c").State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError"
	})
	if w := status(p, "c").State.Waiting; !strings.Contains(w.Message, `failed to open environment variable file "out/vars"`) {
		t.Errorf("a symlink out of the volume: waiting message %q", w.Message)
	}
}
