package e2e

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/manifests"
	"github.com/podkeeper/podkeeper/podrunner/api"
	"github.com/podkeeper/podkeeper/watcher"
)

// The Manifests issue's "what must be shown", against one shared agent.
func TestManifests(t *testing.T) {
	a := startAgent(t, "pk-e2e-manifests")
	for _, p := range []string{"in-place", "temp-rename", "delete-create", "truncate-write"} {
		t.Run("EditorWrite/"+p, func(t *testing.T) { t.Parallel(); editorWrite(t, a, p) })
	}
	t.Run("BadEditKeepsPod", func(t *testing.T) { t.Parallel(); badEditKeepsPod(t, a) })
	t.Run("DuplicateNeverDisturbsWinner", func(t *testing.T) { t.Parallel(); duplicateWinner(t, a) })
	t.Run("ConfigMapEnv", func(t *testing.T) { t.Parallel(); configMapEnv(t, a) })
	t.Run("HostileFiles", func(t *testing.T) { t.Parallel(); hostileFiles(t, a) })
}

// manifestFiles reads GET /manifests through the CLI.
func (a *agent) manifestFiles() ([]api.ManifestFile, error) {
	out, err := a.cli("get", "manifests", "-o", "json")
	if err != nil {
		return nil, err
	}
	var l []api.ManifestFile
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		return nil, fmt.Errorf("decode get manifests -o json: %v: %s", err, out)
	}
	return l, nil
}

func (a *agent) manifestFile(name string) (api.ManifestFile, bool) {
	l, err := a.manifestFiles()
	if err != nil {
		return api.ManifestFile{}, false
	}
	for _, f := range l {
		if filepath.Base(f.Path) == name {
			return f, true
		}
	}
	return api.ManifestFile{}, false
}

// startedUIDs lists the UIDs of every instance of pod name that started a container, from the
// agent's events.
func (a *agent) startedUIDs(name string) []string {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := api.NewClient(a.sock).Events(ctx, "")
	if err != nil {
		a.t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range l.Items {
		if e.InvolvedObject.Name == name && e.Reason == "Started" {
			seen[string(e.InvolvedObject.UID)] = true
		}
	}
	var out []string
	for u := range seen {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// expectedUID is the UID the agent gives the pods of a file with this content.
func (a *agent) expectedUID(file, content string) string {
	a.t.Helper()
	objs, err := manifests.Decode(filepath.Join(a.manifests, file), []byte(content), node)
	if err != nil || len(objs.Pods) != 1 {
		a.t.Fatalf("decode %s: %v", file, err)
	}
	return string(objs.Pods[0].UID)
}

// writeSlowly writes content to f in two chunks 60 ms apart (less than the debounce), the
// first chunk being a valid manifest on its own: a watcher acting on the half-written file
// would start a third instance.
func writeSlowly(t *testing.T, f *os.File, first, rest string) {
	t.Helper()
	if _, err := f.WriteString(first); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	if _, err := f.WriteString(rest); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// editorWrite: one save in each editor pattern is exactly one replacement.
func editorWrite(t *testing.T, shared *agent, pattern string) {
	a := sub(t, shared)
	name := "ed-" + pattern
	file := name + ".yaml"
	path := filepath.Join(a.manifests, file)
	v1 := podYAML(name, "Always", 1, "", shContainer("c", "sleep 3600", ""))
	// v2 = a valid manifest (first) + one more env var (rest).
	first := podYAML(name, "Always", 1, "", shContainer("c", "sleep 3600", "    env:\n    - name: A\n      value: a\n"))
	rest := "    - name: B\n      value: b\n"
	v2 := first + rest
	a.write(file, v1)
	old := a.waitPod(30*time.Second, name+"-e2e", "Running", running)

	switch pattern {
	case "in-place": // overwrite from offset 0 without truncating (v2 is longer than v1)
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		writeSlowly(t, f, first, rest)
	case "temp-rename": // write a temp file, then rename it over the manifest
		tmp := filepath.Join(a.manifests, "."+file+".swp")
		f, err := os.Create(tmp)
		if err != nil {
			t.Fatal(err)
		}
		writeSlowly(t, f, first, rest)
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	case "delete-create":
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		time.Sleep(60 * time.Millisecond)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		writeSlowly(t, f, first, rest)
	case "truncate-write":
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(60 * time.Millisecond)
		writeSlowly(t, f, first, rest)
	}
	want := a.expectedUID(file, v2)
	p := a.waitPod(30*time.Second, name+"-e2e", "replaced", func(p *corev1.Pod) bool { return running(p) && string(p.UID) == want })
	a.waitGone(30*time.Second, name+"-e2e", string(old.UID))
	time.Sleep(time.Second) // a late extra change would show up by now
	if got := a.startedUIDs(name + "-e2e"); strings.Join(got, ",") != strings.Join(sortedPair(string(old.UID), want), ",") {
		t.Fatalf("instances started: %v, want exactly the old %s and the new %s", got, old.UID, want)
	}
	if cs := status(p, "c"); cs.RestartCount != 0 {
		t.Fatalf("new instance restart count %d", cs.RestartCount)
	}
	// The agent read the file twice (the first version and the save), never a half-written or
	// missing file in between.
	if n, removed := a.logCount(`msg="manifest loaded"`, " path="+path+" "), a.logCount(`msg="manifest removed"`, " path="+path); n != 2 || removed != 0 {
		t.Fatalf("the agent loaded %s %d times and saw it removed %d times, want 2 and 0", file, n, removed)
	}
}

// logCount counts the agent log lines containing every one of subs.
func (a *agent) logCount(subs ...string) int {
	n := 0
lines:
	for _, l := range strings.Split(a.agentLog(), "\n") {
		for _, s := range subs {
			if !strings.Contains(l, s) {
				continue lines
			}
		}
		n++
	}
	return n
}

func sortedPair(a, b string) []string {
	s := []string{a, b}
	sort.Strings(s)
	return s
}

func hasCondition(p *corev1.Pod, typ corev1.PodConditionType, status corev1.ConditionStatus, msg string) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == typ && c.Status == status && strings.Contains(c.Message, msg) {
			return true
		}
	}
	return false
}

// badEditKeepsPod: an invalid edit keeps the running pod (same container, same restart count)
// and shows the error everywhere; fixing it replaces the pod once; deleting it terminates it.
func badEditKeepsPod(t *testing.T, shared *agent) {
	a := sub(t, shared)
	good := podYAML("keeper", "Always", 1, "", shContainer("c", "sleep 3600", ""))
	a.write("keeper.yaml", good)
	old := a.waitPod(30*time.Second, "keeper-e2e", "Running", running)
	before := status(old, "c")

	a.write("keeper.yaml", strings.Replace(good, "imagePullPolicy", "imagePullPolcy", 1))
	p := a.waitPod(20*time.Second, "keeper-e2e", "shows the manifest error", func(p *corev1.Pod) bool {
		return hasCondition(p, "podkeeper.io/ManifestValid", corev1.ConditionFalse, "imagePullPolcy")
	})
	if p.UID != old.UID || status(p, "c").ContainerID != before.ContainerID || status(p, "c").RestartCount != before.RestartCount || !running(p) {
		t.Fatalf("bad edit disturbed the pod: uid %s->%s container %s->%s restarts %d->%d",
			old.UID, p.UID, before.ContainerID, status(p, "c").ContainerID, before.RestartCount, status(p, "c").RestartCount)
	}
	if f, ok := a.manifestFile("keeper.yaml"); !ok || f.State != watcher.StateError || !f.KeptLastGood ||
		!strings.Contains(strings.Join(f.Messages, " "), "spec.containers[0].imagePullPolcy") {
		t.Fatalf("get manifests: %+v", f)
	}
	out, err := a.cli("get", "pods")
	if err != nil || !strings.Contains(out, "keeper.yaml") || !strings.Contains(out, "keeping the last good pods") {
		t.Fatalf("get pods does not show the error: %v\n%s", err, out)
	}
	desc, err := a.cli("describe", "pod", "keeper")
	if err != nil || !strings.Contains(desc, "ManifestInvalid") {
		t.Fatalf("no ManifestInvalid event: %v\n%s", err, desc)
	}
	if !strings.Contains(a.agentLog(), "manifest rejected") {
		t.Fatal("the agent log does not show the rejection")
	}

	fixed := strings.Replace(good, "sleep 3600", "sleep 3601", 1)
	a.write("keeper.yaml", fixed)
	want := a.expectedUID("keeper.yaml", fixed)
	n := a.waitPod(30*time.Second, "keeper-e2e", "replaced by the fix", func(p *corev1.Pod) bool { return running(p) && string(p.UID) == want })
	if hasCondition(n, "podkeeper.io/ManifestValid", corev1.ConditionFalse, "") {
		t.Fatal("the error did not clear")
	}
	a.waitGone(30*time.Second, "keeper-e2e", string(old.UID))
	if got := a.startedUIDs("keeper-e2e"); len(got) != 2 {
		t.Fatalf("instances started: %v, want the old and the fixed one", got)
	}
	if f, ok := a.manifestFile("keeper.yaml"); !ok || f.State != watcher.StateOK {
		t.Fatalf("get manifests after the fix: %+v", f)
	}

	a.write("keeper.yaml", "garbage: [")
	a.eventually(10*time.Second, "error shown again", func() (bool, string) {
		f, _ := a.manifestFile("keeper.yaml")
		return f.State == watcher.StateError, string(f.State)
	})
	a.remove("keeper.yaml")
	a.waitGone(30*time.Second, "keeper-e2e", "")
}

func (a *agent) agentLog() string {
	b, _ := os.ReadFile(filepath.Join(a.dir, "agent.log"))
	return string(b)
}

// duplicateWinner: a second file declaring the same pod is a conflict and never disturbs the
// first by file name.
func duplicateWinner(t *testing.T, shared *agent) {
	a := sub(t, shared)
	a.write("dup-a.yaml", podYAML("dup", "Always", 1, "", shContainer("c", "sleep 3600", "")))
	win := a.waitPod(30*time.Second, "dup-e2e", "Running", running)
	id := status(win, "c").ContainerID
	a.write("dup-b.yaml", podYAML("dup", "Always", 1, "", shContainer("c", "sleep 3602", "")))
	a.eventually(10*time.Second, "conflict listed", func() (bool, string) {
		f, _ := a.manifestFile("dup-b.yaml")
		return f.State == watcher.StateConflict && strings.Contains(strings.Join(f.Messages, " "), "dup-a.yaml, which wins"), fmt.Sprint(f)
	})
	a.write("dup-b.yaml", podYAML("dup", "Always", 1, "", shContainer("c", "sleep 3603", "")))
	time.Sleep(6 * time.Second) // more than a resync period (5 s) and the debounce
	pods, err := a.pods()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range pods {
		if pods[i].Name == "dup-e2e" {
			n++
			if pods[i].UID != win.UID || status(&pods[i], "c").ContainerID != id || status(&pods[i], "c").RestartCount != 0 {
				t.Fatalf("the winner was disturbed: %s %s", pods[i].UID, status(&pods[i], "c").ContainerID)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d dup-e2e pods, want 1", n)
	}
	if got := a.startedUIDs("dup-e2e"); len(got) != 1 {
		t.Fatalf("instances started: %v", got)
	}
}

// configMapEnv: env from a ConfigMap and a Secret reaches the process; editing the ConfigMap
// replaces the pod; a missing ConfigMap is CreateContainerConfigError with the kubelet's message.
func configMapEnv(t *testing.T, shared *agent) {
	a := sub(t, shared)
	cfg := func(mode string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: env-cfg\ndata:\n  MODE: " + mode + "\n  LEVEL: \"3\"\n---\n" +
			"apiVersion: v1\nkind: Secret\nmetadata:\n  name: env-sec\nstringData:\n  password: hunter2\n"
	}
	a.write("env-cfg.yaml", cfg("fast"))
	env := "    envFrom:\n    - configMapRef: {name: env-cfg}\n      prefix: CFG_\n" +
		"    env:\n    - name: MODE\n      valueFrom:\n        configMapKeyRef: {name: env-cfg, key: MODE}\n" +
		"    - name: PASSWORD\n      valueFrom:\n        secretKeyRef: {name: env-sec, key: password}\n"
	a.write("env-pod.yaml", podYAML("envpod", "Always", 1, "", shContainer("c", `echo "mode=$MODE level=$CFG_LEVEL pw=$PASSWORD"; sleep 3600`, env)))
	old := a.waitPod(30*time.Second, "envpod-e2e", "Running", running)
	a.eventually(20*time.Second, "env in the output", func() (bool, string) {
		out, err := a.cli("logs", "envpod")
		return err == nil && strings.Contains(out, "mode=fast level=3 pw=hunter2"), out
	})

	a.write("env-cfg.yaml", cfg("slow"))
	a.waitPod(30*time.Second, "envpod-e2e", "replaced", func(p *corev1.Pod) bool { return running(p) && p.UID != old.UID })
	a.eventually(20*time.Second, "new env in the output", func() (bool, string) {
		out, err := a.cli("logs", "envpod")
		return err == nil && strings.Contains(out, "mode=slow level=3"), out
	})

	missing := "    env:\n    - name: X\n      valueFrom:\n        configMapKeyRef: {name: env-missing, key: x}\n"
	a.write("env-missing.yaml", podYAML("envmissing", "Always", 1, "", shContainer("c", "sleep 3600", missing)))
	a.waitPod(30*time.Second, "envmissing-e2e", "CreateContainerConfigError", func(p *corev1.Pod) bool {
		w := status(p, "c").State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError" && w.Message == `configmap "env-missing" not found`
	})
}

// hostileFiles: 50 bad files beside 5 good pods: all 5 run, all 50 are listed with an error.
func hostileFiles(t *testing.T, shared *agent) {
	a := sub(t, shared)
	dir := a.manifests
	for i := 0; i < 5; i++ {
		a.write(fmt.Sprintf("g-good-%d.yaml", i), podYAML(fmt.Sprintf("good-%d", i), "Always", 1, "", shContainer("c", "sleep 3600", "")))
	}
	bad := map[string]string{} // file -> content ("" for special files made below)
	for i := 0; i < 10; i++ {
		b := make([]byte, 512)
		_, _ = rand.Read(b)
		bad[fmt.Sprintf("h-garbage-%d.yaml", i)] = "\x00" + string(b) // a NUL: never valid YAML
	}
	bad["h-huge.yaml"] = "" // 11 MiB, written below
	for i, k := range []string{
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n",
		"apiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n",
		"apiVersion: v2\nkind: Pod\nmetadata: {name: p}\n",
		"kind: Pod\nmetadata: {name: p}\n",
		"apiVersion: v1\nmetadata: {name: p}\n",
		"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Service, metadata: {name: s}}\n",
		"apiVersion: v1\nkind: PodList\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n",
	} {
		bad[fmt.Sprintf("h-kind-%d.yaml", i)] = k
	}
	for i := 0; i < 8; i++ {
		bad[fmt.Sprintf("h-unknown-%d.yaml", i)] = podYAML(fmt.Sprintf("unknown-%d", i), "Always", 1, fmt.Sprintf("  bogusField%d: 1\n", i), shContainer("c", "sleep 1", ""))
	}
	for i := 0; i < 8; i++ {
		bad[fmt.Sprintf("h-dup-%d.yaml", i)] = podYAML(fmt.Sprintf("good-%d", i%5), "Always", 1, "", shContainer("c", "sleep 7", ""))
	}
	bad["h-loop-a.yaml"], bad["h-loop-b.yaml"], bad["h-fifo.yaml"], bad["h-dangling.yaml"] = "", "", "", ""
	for i, v := range []string{
		"apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name}\nspec: {containers: [{name: c, image: busybox}]}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: nocontainers}\nspec: {}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: port}\nspec: {containers: [{name: c, image: busybox, ports: [{containerPort: 70000}]}]}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: noimage}\nspec: {containers: [{name: c}]}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: policy}\nspec: {restartPolicy: Sometimes, containers: [{name: c, image: busybox}]}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: mount}\nspec: {containers: [{name: c, image: busybox, volumeMounts: [{name: nope, mountPath: /x}]}]}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: probe}\nspec: {containers: [{name: c, image: busybox, livenessProbe: {successThreshold: 2, exec: {command: [x]}}}]}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: env}\nspec: {containers: [{name: c, image: busybox, env: [{name: \"1X\", value: y}]}]}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: res}\nspec: {containers: [{name: c, image: busybox, resources: {requests: {cpu: \"2\"}, limits: {cpu: \"1\"}}}]}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {\"bad key\": x}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: yaml\n",
	} {
		bad[fmt.Sprintf("h-invalid-%d.yaml", i)] = v
	}
	if len(bad) != 50 {
		t.Fatalf("%d hostile files, want 50", len(bad))
	}
	for name, content := range bad {
		if content != "" {
			a.write(name, content)
		}
	}
	huge, err := os.Create(filepath.Join(dir, "h-huge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := huge.WriteString(podYAML("huge", "Always", 1, "", shContainer("c", "sleep 1", "")) + "# " + strings.Repeat("x", 11<<20) + "\n"); err != nil {
		t.Fatal(err)
	}
	huge.Close()
	for _, l := range [][2]string{{"h-loop-b.yaml", "h-loop-a.yaml"}, {"h-loop-a.yaml", "h-loop-b.yaml"}, {filepath.Join(a.dir, "nowhere.yaml"), "h-dangling.yaml"}} {
		if err := os.Symlink(l[0], filepath.Join(dir, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	// Root reads any mode-0000 file, so "unreadable" is a FIFO (which a naive reader would
	// block on forever) and a dangling symlink.
	if err := syscall.Mkfifo(filepath.Join(dir, "h-fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Editor and package-manager leftovers are ignored, not errors.
	for _, n := range []string{"g-good-0.yaml.bak", ".g-good-1.yaml.swp", "g-good-2.yaml~", "g-good-3.yaml.dpkg-old"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("garbage"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	for i := 0; i < 5; i++ {
		a.waitPod(60*time.Second, fmt.Sprintf("good-%d-e2e", i), "Running", running)
	}
	a.eventually(30*time.Second, "all 50 hostile files listed as bad", func() (bool, string) {
		files, err := a.manifestFiles()
		if err != nil {
			return false, err.Error()
		}
		var missing []string
		states := map[string]api.ManifestFile{}
		for _, f := range files {
			states[filepath.Base(f.Path)] = f
		}
		for name := range bad {
			f, ok := states[name]
			if !ok || (f.State != watcher.StateError && f.State != watcher.StateConflict) || len(f.Messages) == 0 {
				missing = append(missing, fmt.Sprintf("%s=%s", name, f.State))
			}
		}
		for i := 0; i < 5; i++ {
			if f := states[fmt.Sprintf("g-good-%d.yaml", i)]; f.State != watcher.StateOK {
				missing = append(missing, fmt.Sprintf("g-good-%d.yaml=%s", i, f.State))
			}
		}
		for _, n := range []string{"g-good-0.yaml.bak", ".g-good-1.yaml.swp", "g-good-2.yaml~", "g-good-3.yaml.dpkg-old"} {
			if states[n].State != watcher.StateIgnored {
				missing = append(missing, n+"="+string(states[n].State))
			}
		}
		sort.Strings(missing)
		return len(missing) == 0, strings.Join(missing, " ")
	})
	f, _ := a.manifestFile("h-huge.yaml")
	if !strings.Contains(strings.Join(f.Messages, " "), "size limit") {
		t.Errorf("h-huge.yaml: %+v", f)
	}
	table, err := a.cli("get", "manifests")
	if err != nil || !strings.Contains(table, "h-fifo.yaml") || !strings.Contains(table, "conflict") {
		t.Fatalf("get manifests table: %v\n%s", err, table)
	}
	for i := 0; i < 5; i++ {
		if got := a.startedUIDs(fmt.Sprintf("good-%d-e2e", i)); len(got) != 1 {
			t.Errorf("good-%d started %d instances", i, len(got))
		}
	}
}

// A manifest broken while the agent was down: the agent, restarted, decodes the copy of the last
// good content it kept (<root-dir>/last-good), so the pod keeps its spec and its worker: same
// container, a crash is restarted, the error is shown. Without that copy (deleted), the pod it finds
// running under that name is held untouched. Fixing the file replaces it once.
func TestManifestsBrokenWhileAgentDown(t *testing.T) {
	a := startAgent(t, "pk-e2e-manifests-restart")
	good := podYAML("survivor", "Always", 1, "", shContainer("c", "sleep 3600", ""))
	a.write("survivor.yaml", good)
	old := a.waitPod(30*time.Second, "survivor-e2e", "Running", running)
	pid := a.runningPID(string(old.UID), "c")

	a.kill9()
	broken := strings.Replace(good, "imagePullPolicy", "imagePullPolcy", 1)
	a.write("survivor.yaml", broken)
	a.start()
	a.eventually(20*time.Second, "error listed, last good kept", func() (bool, string) {
		f, _ := a.manifestFile("survivor.yaml")
		return f.State == watcher.StateError && f.KeptLastGood, fmt.Sprint(f)
	})
	kept := a.waitPod(20*time.Second, "survivor-e2e", "kept on its last good spec", func(p *corev1.Pod) bool {
		return running(p) && hasCondition(p, "podkeeper.io/ManifestValid", corev1.ConditionFalse, "imagePullPolcy")
	})
	if kept.UID != old.UID {
		t.Fatalf("kept pod has UID %s, want %s", kept.UID, old.UID)
	}
	if got := a.pidOf(string(old.UID), "c"); got != pid {
		t.Fatalf("the running pod was not adopted: pid %d -> %d", pid, got)
	}
	// It is managed: a crash is restarted.
	if err := syscall.Kill(int(pid), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.waitPod(30*time.Second, "survivor-e2e", "restarted after a crash", func(p *corev1.Pod) bool {
		return running(p) && status(p, "c").RestartCount == 1
	})
	pid = a.runningPID(string(old.UID), "c")

	// Without the copy the agent knows no good content: the pod is held, untouched.
	a.kill9()
	if err := os.RemoveAll(filepath.Join(a.root, "last-good")); err != nil {
		t.Fatal(err)
	}
	a.start()
	a.eventually(20*time.Second, "agent says it keeps the pod", func() (bool, string) {
		return a.logCount("keeping a running pod whose manifest is rejected", "survivor-e2e") > 0, ""
	})
	held := a.waitPod(20*time.Second, "survivor-e2e", "listed as held", func(p *corev1.Pod) bool {
		return hasCondition(p, "podkeeper.io/ManifestValid", corev1.ConditionFalse, "kept untouched")
	})
	if held.UID != old.UID || held.Status.Phase != corev1.PodRunning {
		t.Fatalf("held pod listed as %s %s", held.UID, held.Status.Phase)
	}
	time.Sleep(2 * time.Second)
	if got := a.pidOf(string(old.UID), "c"); got != pid {
		t.Fatalf("the running pod was not kept: pid %d -> %d", pid, got)
	}

	fixed := strings.Replace(good, "sleep 3600", "sleep 3601", 1)
	a.write("survivor.yaml", fixed)
	want := a.expectedUID("survivor.yaml", fixed)
	a.waitPod(30*time.Second, "survivor-e2e", "replaced by the fix", func(p *corev1.Pod) bool { return running(p) && string(p.UID) == want })
	a.eventually(30*time.Second, "old instance removed", func() (bool, string) {
		return len(a.records(string(old.UID))) == 0, ""
	})
}
