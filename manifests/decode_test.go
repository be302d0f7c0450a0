package manifests

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

const node = "node1"

// pod is a small valid v1 Pod document named name.
func pod(name string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
		"\nspec:\n  containers:\n  - name: c\n    image: busybox:1.36\n"
}

func mustDecode(t *testing.T, path, data string) []*corev1.Pod {
	t.Helper()
	pods, err := DecodeFile(path, []byte(data), node)
	if err != nil {
		t.Fatalf("DecodeFile: %v", err)
	}
	return pods
}

func mustFail(t *testing.T, data string) *FileError {
	t.Helper()
	pods, err := DecodeFile("/etc/pods/x.yaml", []byte(data), node)
	if err == nil {
		t.Fatalf("DecodeFile succeeded with %d pods, want error", len(pods))
	}
	if pods != nil {
		t.Errorf("got %d pods with an error, want none", len(pods))
	}
	fe, ok := err.(*FileError)
	if !ok {
		t.Fatalf("error is %T, want *FileError", err)
	}
	return fe
}

func podNames(pods []*corev1.Pod) []string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	return names
}

func TestDecodeFileGood(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []string
	}{
		{"single doc", pod("a"), []string{"default/a-node1"}},
		{"multi doc", pod("a") + "---\n" + pod("b"), []string{"default/a-node1", "default/b-node1"}},
		{"leading separator and comments", "# header\n---\n" + pod("a") + "--- # trailing comment\n\n---\n", []string{"default/a-node1"}},
		{"empty file", "", nil},
		{"only comments", "# nothing here\n", nil},
		{"explicit namespace", strings.Replace(pod("a"), "  name: a", "  name: a\n  namespace: kube-system", 1), []string{"kube-system/a-node1"}},
		{"json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`, []string{"default/j-node1"}},
		{"json with BOM and whitespace", "\xef\xbb\xbf\n  {\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"j\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}\n", []string{"default/j-node1"}},
		{"yaml flow mapping", "{apiVersion: v1, kind: Pod, metadata: {name: f}, spec: {containers: [{name: c, image: busybox}]}}", []string{"default/f-node1"}},
		{"crlf line endings", strings.ReplaceAll(pod("a")+"---\n"+pod("b"), "\n", "\r\n"), []string{"default/a-node1", "default/b-node1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := podNames(mustDecode(t, "/etc/pods/x.yaml", tt.data))
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("pods = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDecodeFileProblems(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []string // Problem.String() of every problem, in order
	}{
		{"wrong kind in multi doc", pod("a") + "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n",
			[]string{"doc 1: kind Service is not supported (supported: v1 Pod, ConfigMap, Secret, PodList, List)"}},
		{"wrong apiVersion", strings.Replace(pod("a"), "apiVersion: v1", "apiVersion: apps/v1", 1),
			[]string{"doc 0: kind apps/v1 Pod is not supported (supported: v1 Pod, ConfigMap, Secret, PodList, List)"}},
		{"no kind", "apiVersion: v1\nmetadata:\n  name: a\n",
			[]string{"doc 0: kind: kind is required (supported: v1 Pod, ConfigMap, Secret, PodList, List)"}},
		{"no apiVersion", "kind: Pod\nmetadata:\n  name: a\n",
			[]string{"doc 0: apiVersion: apiVersion is required (supported: v1 Pod, ConfigMap, Secret, PodList, List)"}},
		{"not an object", "- a\n- b\n", []string{"doc 0: document is not an object"}},
		{"unknown field", pod("a") + "    imagePolicy: Always\n",
			[]string{`doc 0: spec.containers[0].imagePolicy: unknown field "spec.containers[0].imagePolicy"`}},
		{"duplicate field", strings.Replace(pod("a"), "kind: Pod", "kind: Pod\nkind: Pod", 1),
			[]string{"doc 0: invalid YAML: yaml: unmarshal errors:\n  line 3: key \"kind\" already set in map"}},
		{"wrong type", strings.Replace(pod("a"), "image: busybox:1.36", "image: [1]", 1),
			[]string{"doc 0: spec.containers.image: decoding Pod: json: cannot unmarshal array into Go struct field Container.spec.containers.image of type string"}},
		{"no containers", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n",
			[]string{"doc 0: spec.containers: Required value: at least one container is required"}},
		{"missing name and image", "apiVersion: v1\nkind: Pod\nmetadata: {}\nspec:\n  containers:\n  - {}\n",
			[]string{"doc 0: metadata.name: Required value", "doc 0: spec.containers[0].name: Required value", "doc 0: spec.containers[0].image: Required value"}},
		{"duplicate pod in file", pod("a") + "---\n" + pod("a"),
			[]string{"doc 1: metadata.name: pod default/a-node1 is already defined in doc 0"}},
		// A negative grace period is no problem: the kubelet accepts it in a static pod (make
		// conformance's edge-grace-negative), and it stops as 0 does.
		{"bad restart policy, negative grace", pod("a") + "  restartPolicy: Sometimes\n  terminationGracePeriodSeconds: -1\n",
			[]string{`doc 0: spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`}},
		{"bad ports", pod("a") + "    ports:\n    - containerPort: 0\n      hostPort: 70000\n      protocol: ICMP\n",
			[]string{"doc 0: spec.containers[0].ports[0].containerPort: Invalid value: 0: must be between 1 and 65535, inclusive",
				"doc 0: spec.containers[0].ports[0].hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
				`doc 0: spec.containers[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"`}},
		{"invalid yaml", "apiVersion: v1\nkind: Pod\n  bad: indent\n", nil}, // message from the YAML parser; checked below
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := mustFail(t, tt.data)
			if fe.Path != "/etc/pods/x.yaml" {
				t.Errorf("Path = %q", fe.Path)
			}
			var got []string
			for _, p := range fe.Problems {
				got = append(got, p.String())
			}
			if tt.want == nil {
				if len(got) != 1 || !strings.HasPrefix(got[0], "doc 0: invalid YAML") {
					t.Errorf("problems = %q, want one invalid YAML problem", got)
				}
				return
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestAllProblemsReportedAtOnce(t *testing.T) {
	data := `apiVersion: v1
kind: Pod
metadata:
  name: Bad_Name
  namespace: Not.A.Label
  color: blue
spec:
  restartPolicy: Sometimes
  initContainers:
  - name: dup
    image: busybox
  containers:
  - name: dup
    image: busybox
  - name: Upper
---
apiVersion: v1
kind: Service
---
` + pod("fine") + `---
apiVersion: v1
kind: Pod
metadata:
  name: ok
spec:
  containers:
  - name: c
`
	fe := mustFail(t, data)
	want := map[string]bool{ // doc + field of each expected problem
		"0 metadata.color":           false,
		"0 metadata.name":            false,
		"0 metadata.namespace":       false,
		"0 spec.restartPolicy":       false,
		"0 spec.containers[0].name":  false,
		"0 spec.containers[1].name":  false,
		"0 spec.containers[1].image": false,
		"1 ":                         false,
		"3 spec.containers[0].image": false,
	}
	for _, p := range fe.Problems {
		key := strconv.Itoa(p.Doc) + " " + p.Field
		if _, ok := want[key]; !ok {
			t.Errorf("unexpected problem %s", p)
			continue
		}
		want[key] = true
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("missing problem %q in %v", k, fe)
		}
	}
	msg := fe.Error()
	for _, s := range []string{"/etc/pods/x.yaml: doc 0: ", "; doc 1: kind Service is not supported (supported: v1 Pod, ConfigMap, Secret, PodList, List)", "; doc 3: spec.containers[0].image: Required value"} {
		if !strings.Contains(msg, s) {
			t.Errorf("Error() = %q, missing %q", msg, s)
		}
	}
}

func TestSizeLimit(t *testing.T) {
	data := pod("a") + "#" + strings.Repeat("x", MaxFileSize) + "\n"
	fe := mustFail(t, data)
	if len(fe.Problems) != 1 || fe.Problems[0].Doc != FileDoc || !strings.Contains(fe.Problems[0].Message, "size limit") {
		t.Errorf("problems = %v", fe.Problems)
	}
	if got := fe.Error(); !strings.HasPrefix(got, "/etc/pods/x.yaml: file exceeds the size limit") {
		t.Errorf("Error() = %q", got)
	}
}

func TestStaticNameTooLong(t *testing.T) {
	long := strings.Repeat("a", 250) // valid alone, too long with "-node1"
	fe := mustFail(t, pod(long))
	if len(fe.Problems) != 1 || fe.Problems[0].Field != "metadata.name" || !strings.Contains(fe.Problems[0].Message, "static pod name") {
		t.Errorf("problems = %v", fe.Problems)
	}
}

// TestGolden decodes testdata/*.yaml and compares the pods, as JSON, with
// testdata/*.golden.json. Run with -update to rewrite the golden files.
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			pods := mustDecode(t, "/etc/kubernetes/manifests/"+filepath.Base(in), string(data))
			got, err := json.MarshalIndent(pods, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := strings.TrimSuffix(in, ".yaml") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if string(got) != string(want) {
				t.Errorf("decoded pods differ from %s:\n%s", golden, got)
			}
		})
	}
}

func TestDefaultsAndIdentity(t *testing.T) {
	pods := mustDecode(t, "/etc/pods/web.yaml", pod("web")+"    ports:\n    - containerPort: 80\n")
	if len(pods) != 1 {
		t.Fatalf("got %d pods", len(pods))
	}
	p := pods[0]
	checks := []struct{ what, got, want string }{
		{"name", p.Name, "web-node1"},
		{"namespace", p.Namespace, "default"},
		{"nodeName", p.Spec.NodeName, node},
		{"restartPolicy", string(p.Spec.RestartPolicy), "Always"},
		{"dnsPolicy", string(p.Spec.DNSPolicy), "ClusterFirst"},
		{"schedulerName", p.Spec.SchedulerName, "default-scheduler"},
		{"imagePullPolicy", string(p.Spec.Containers[0].ImagePullPolicy), "IfNotPresent"},
		{"terminationMessagePath", p.Spec.Containers[0].TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", string(p.Spec.Containers[0].TerminationMessagePolicy), "File"},
		{"port protocol", string(p.Spec.Containers[0].Ports[0].Protocol), "TCP"},
		{"config.hash", p.Annotations[AnnotationConfigHash], string(p.UID)},
		{"config.source", p.Annotations[AnnotationConfigSource], "file"},
		{"manifest-path", p.Annotations[AnnotationManifestPath], "/etc/pods/web.yaml"},
		{"manifest-name", p.Annotations[AnnotationManifestName], "web"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
		}
	}
	if g := p.Spec.TerminationGracePeriodSeconds; g == nil || *g != 30 {
		t.Errorf("terminationGracePeriodSeconds = %v, want 30", g)
	}
	if len(p.UID) != 32 {
		t.Errorf("UID %q is not 32 hex chars", p.UID)
	}
	if _, ok := p.Annotations["kubernetes.io/config.seen"]; ok {
		t.Error("config.seen must not be set by the decoder")
	}
	want := corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	if len(p.Spec.Tolerations) != 1 || p.Spec.Tolerations[0] != want {
		t.Errorf("tolerations = %v, want [%v]", p.Spec.Tolerations, want)
	}

	// Explicit values are kept, and the toleration is not added twice.
	explicit := pod("web") + "    imagePullPolicy: Never\n  restartPolicy: Never\n  terminationGracePeriodSeconds: 0\n  dnsPolicy: Default\n" +
		"  tolerations:\n  - operator: Exists\n    effect: NoExecute\n"
	p = mustDecode(t, "/etc/pods/web.yaml", explicit)[0]
	if p.Spec.Containers[0].ImagePullPolicy != corev1.PullNever || p.Spec.RestartPolicy != corev1.RestartPolicyNever ||
		*p.Spec.TerminationGracePeriodSeconds != 0 || p.Spec.DNSPolicy != corev1.DNSDefault || len(p.Spec.Tolerations) != 1 {
		t.Errorf("explicit values overridden: %+v", p.Spec)
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	tests := []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"busybox", corev1.PullAlways},
		{"busybox:latest", corev1.PullAlways},
		{"busybox:1.36", corev1.PullIfNotPresent},
		{"localhost:5000/app", corev1.PullAlways},
		{"localhost:5000/app:v1", corev1.PullIfNotPresent},
		{"localhost:5000/app:latest", corev1.PullAlways},
		{"busybox@sha256:abc", corev1.PullIfNotPresent},
		{"busybox:latest@sha256:abc", corev1.PullIfNotPresent},
		{"", corev1.PullAlways},
	}
	for _, tt := range tests {
		if got := defaultPullPolicy(tt.image); got != tt.want {
			t.Errorf("defaultPullPolicy(%q) = %s, want %s", tt.image, got, tt.want)
		}
	}
}

func uidOf(t *testing.T, path, data, nodeName string) []string {
	t.Helper()
	pods, err := DecodeFile(path, []byte(data), nodeName)
	if err != nil {
		t.Fatalf("DecodeFile: %v", err)
	}
	var uids []string
	for _, p := range pods {
		uids = append(uids, string(p.UID))
	}
	return uids
}

func TestUIDStability(t *testing.T) {
	base := pod("a")
	same := []struct{ name, data string }{
		{"comments and blank lines", "# comment\n\n" + strings.Replace(base, "kind: Pod", "kind: Pod # inline", 1) + "\n\n"},
		{"key order", "kind: Pod\nspec:\n  containers:\n  - image: busybox:1.36\n    name: c\nmetadata:\n  name: a\napiVersion: v1\n"},
		{"indentation and flow style", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n    containers:\n    -   name: c\n        image: \"busybox:1.36\"\n"},
		{"as json", `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"busybox:1.36"}]}}`},
	}
	want := uidOf(t, "/p/a.yaml", base, node)[0]
	for _, s := range same {
		if got := uidOf(t, "/p/a.yaml", s.data, node)[0]; got != want {
			t.Errorf("%s: UID %s, want unchanged %s", s.name, got, want)
		}
	}

	different := []struct{ name, path, data, node string }{
		{"content", "/p/a.yaml", strings.Replace(base, "busybox:1.36", "busybox:1.37", 1), node},
		{"label added", "/p/a.yaml", strings.Replace(base, "  name: a", "  name: a\n  labels: {x: z}", 1), node},
		{"path", "/p/b.yaml", base, node},
		{"node", "/p/a.yaml", base, "node2"},
	}
	for _, d := range different {
		if got := uidOf(t, d.path, d.data, d.node)[0]; got == want {
			t.Errorf("%s change: UID unchanged", d.name)
		}
	}
}

func TestUIDMultiDocEditLeavesOthers(t *testing.T) {
	before := uidOf(t, "/p/m.yaml", pod("a")+"---\n"+pod("b"), node)
	after := uidOf(t, "/p/m.yaml", pod("a")+"---\n"+strings.Replace(pod("b"), "1.36", "1.37", 1), node)
	if before[0] != after[0] {
		t.Errorf("editing pod b changed pod a's UID")
	}
	if before[1] == after[1] {
		t.Errorf("editing pod b did not change its UID")
	}
	// Reordering or inserting documents does not change a pod's UID either.
	reordered := uidOf(t, "/p/m.yaml", "---\n"+pod("b")+"---\n"+pod("a"), node)
	if reordered[1] != before[0] || reordered[0] != before[1] {
		t.Errorf("reordering documents changed UIDs")
	}
}

func TestPodUIDIsUnambiguous(t *testing.T) {
	if PodUID("ab", "c", nil) == PodUID("a", "bc", nil) {
		t.Error("PodUID collides on concatenation")
	}
	if StaticPodName("etcd", "n1") != "etcd-n1" {
		t.Error("StaticPodName")
	}
}

func TestSplitDocuments(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", []string{""}},
		{"a: 1\n", []string{"a: 1\n"}},
		{"a: 1\n---\nb: 2\n", []string{"a: 1\n", "b: 2\n"}},
		{"---\na: 1\n", []string{"a: 1\n"}},
		{"# c\n---\na: 1\n", []string{"a: 1\n"}},
		{"a: 1\n---\n---\nb: 2", []string{"a: 1\n", "", "b: 2"}},
		{"a: 1\n--- {b: 2}\n", []string{"a: 1\n", " {b: 2}\n"}},
		{"a: |\n  ---x\n", []string{"a: |\n  ---x\n"}},
		{"a: 1\n----\n", []string{"a: 1\n----\n"}},
		{" {\"a\": 1}\n---\n", []string{" {\"a\": 1}\n---\n"}},
	}
	for _, tt := range tests {
		var got []string
		for _, d := range splitDocuments([]byte(tt.in)) {
			got = append(got, string(d))
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("splitDocuments(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzDecodeFile feeds the decoder arbitrary bytes: it must never panic, and it must return
// either well-formed objects or a *FileError with problems. The seed corpus is
// testdata/fuzz/FuzzDecodeFile (kinds, lists, hostile YAML) plus the testdata manifests.
func FuzzDecodeFile(f *testing.F) {
	f.Add([]byte(pod("a")), "node1")
	f.Add([]byte(pod("a")+"---\n"+pod("b")), "n")
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"x","ports":[{"containerPort":1}]}]}}`), "node1")
	f.Add([]byte("---\n--- x\n{\n- [\n"), "")
	f.Add([]byte("apiVersion: v1\nkind: Pod\nspec: {containers: [{}], initContainers: [{}]}\n"), "UPPER")
	for _, glob := range []string{"testdata/*.yaml", "testdata/cases/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, in := range files {
			if data, err := os.ReadFile(in); err == nil {
				f.Add(data, "node1")
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, nodeName string) {
		_ = SalvagePodNames(data, nodeName) // never panics either
		objs, err := Decode("/f.yaml", data, nodeName)
		if err != nil {
			if objs != nil {
				t.Fatal("objects returned with an error")
			}
			fe, ok := err.(*FileError)
			if !ok || len(fe.Problems) == 0 {
				t.Fatalf("error %T %v is not a *FileError with problems", err, err)
			}
			_ = fe.Error()
			return
		}
		for _, p := range objs.Pods {
			if p.UID == "" || p.Spec.NodeName != nodeName || len(p.Spec.Containers) == 0 || p.Annotations[AnnotationConfigHash] != string(p.UID) {
				t.Fatalf("bad pod %+v", p)
			}
		}
		for _, cm := range objs.ConfigMaps {
			if cm.Name == "" || cm.Namespace == "" {
				t.Fatalf("bad configmap %+v", cm)
			}
		}
		for _, s := range objs.Secrets {
			if s.Name == "" || s.StringData != nil {
				t.Fatalf("bad secret %+v", s)
			}
		}
		// Decoding is deterministic: the same input gives the same UIDs.
		again, err := Decode("/f.yaml", data, nodeName)
		if err != nil || len(again.Pods) != len(objs.Pods) {
			t.Fatalf("second decode differs: %v", err)
		}
		for i := range again.Pods {
			if again.Pods[i].UID != objs.Pods[i].UID {
				t.Fatal("UID is not deterministic")
			}
		}
	})
}
