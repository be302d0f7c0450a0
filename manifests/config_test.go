package manifests

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestUIDGolden pins the UIDs of the good testdata files: a podkeeper upgrade that changes how
// a UID is computed would restart every pod (kubernetes#116080), so it must show up here.
func TestUIDGolden(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/*.yaml")
	cases, _ := filepath.Glob("testdata/cases/*.yaml")
	var lines []string
	for _, in := range append(inputs, cases...) {
		data, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := Decode("/etc/podkeeper/manifests/"+filepath.Base(in), data, node)
		if err != nil {
			continue
		}
		for _, p := range objs.Pods {
			lines = append(lines, fmt.Sprintf("%s %s/%s %s", filepath.Base(in), p.Namespace, p.Name, p.UID))
		}
	}
	sort.Strings(lines)
	got := strings.Join(lines, "\n") + "\n"
	golden := "testdata/uids.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if got != string(want) {
		t.Errorf("UIDs changed (every such pod would restart on upgrade):\n%s\nwant:\n%s", got, want)
	}
}

func consumer(t *testing.T, env string) *corev1.Pod {
	t.Helper()
	doc := pod("a") + env
	return mustDecode(t, "/p/a.yaml", doc)[0]
}

func cmOf(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: data}
}

func secOf(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestBindEnvConfig(t *testing.T) {
	keyRef := "    env:\n    - name: A\n      valueFrom:\n        configMapKeyRef: {name: cfg, key: a}\n"
	envFrom := "    envFrom:\n    - secretRef: {name: sec}\n"
	volume := "    volumeMounts:\n    - {name: v, mountPath: /v}\n  volumes:\n  - name: v\n    configMap: {name: cfg}\n"
	base := NewConfigSet([]*corev1.ConfigMap{cmOf("cfg", map[string]string{"a": "1", "b": "1"})}, []*corev1.Secret{secOf("sec", map[string]string{"x": "1"})})

	uid := func(env string, set *ConfigSet) string {
		p := consumer(t, env)
		before := p.UID
		BindEnvConfig(p, set)
		if p.Annotations[AnnotationConfigHash] != string(p.UID) {
			t.Errorf("config hash %s != UID %s", p.Annotations[AnnotationConfigHash], p.UID)
		}
		if EnvConfigRefs(p) == nil && p.UID != before {
			t.Errorf("a pod reading no config changed UID")
		}
		return string(p.UID)
	}
	tests := []struct {
		name    string
		env     string
		set     *ConfigSet
		changed bool
	}{
		{"no refs: unchanged by any config", "", NewConfigSet(nil, nil), false},
		{"volume only: updated in place, not replaced", volume, NewConfigSet([]*corev1.ConfigMap{cmOf("cfg", map[string]string{"a": "2"})}, nil), false},
		{"keyRef: the key's value changed", keyRef, NewConfigSet([]*corev1.ConfigMap{cmOf("cfg", map[string]string{"a": "2", "b": "1"})}, nil), true},
		{"keyRef: another key changed", keyRef, NewConfigSet([]*corev1.ConfigMap{cmOf("cfg", map[string]string{"a": "1", "b": "2"})}, base.secretList()), false},
		{"keyRef: the ConfigMap went away", keyRef, NewConfigSet(nil, nil), true},
		{"envFrom: any key changed", envFrom, NewConfigSet(base.configMapList(), []*corev1.Secret{secOf("sec", map[string]string{"x": "1", "y": "new"})}), true},
		{"envFrom: same content", envFrom, NewConfigSet(base.configMapList(), []*corev1.Secret{secOf("sec", map[string]string{"x": "1"})}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := uid(tt.env, base), uid(tt.env, tt.set)
			if (a != b) != tt.changed {
				t.Errorf("UID %s -> %s, want changed=%v", a, b, tt.changed)
			}
		})
	}
}

func (s *ConfigSet) configMapList() []*corev1.ConfigMap {
	var out []*corev1.ConfigMap
	for _, c := range s.configMaps {
		out = append(out, c)
	}
	return out
}

func (s *ConfigSet) secretList() []*corev1.Secret {
	var out []*corev1.Secret
	for _, c := range s.secrets {
		out = append(out, c)
	}
	return out
}

func TestSecretDefaults(t *testing.T) {
	objs, err := Decode("/p/s.yaml", []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  a: b2xk\n  keep: eA==\nstringData:\n  a: new\n"), node)
	if err != nil {
		t.Fatal(err)
	}
	s := objs.Secrets[0]
	if string(s.Data["a"]) != "new" || string(s.Data["keep"]) != "x" || s.StringData != nil || s.Type != corev1.SecretTypeOpaque || s.Namespace != "default" {
		t.Errorf("secret = %+v", s)
	}
	if s.Name != "s" {
		t.Errorf("a Secret's name is not node-suffixed: %q", s.Name)
	}
}

func TestSalvagePodNames(t *testing.T) {
	tests := []struct {
		name, data string
		want       string
	}{
		{"unknown field", pod("a") + "    imagee: x\n", "default/a-node1"},
		{"invalid values", "apiVersion: v1\nkind: Pod\nmetadata: {name: b, namespace: ops}\nspec: {restartPolicy: Sometimes}\n", "ops/b-node1"},
		{"multi doc, one unreadable", pod("a") + "---\n: : :\n---\n" + pod("c"), "default/a-node1 default/c-node1"},
		{"lists", "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: x}\n---\nkind: List\nitems:\n- {kind: Pod, metadata: {name: why}}\n- {kind: ConfigMap, metadata: {name: z}}\n", "default/x-node1 default/why-node1"},
		{"garbage", "\x00\x01{{{", ""},
		{"no name", "kind: Pod\nmetadata: {}\n", ""},
		{"not a pod", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n", ""},
	}
	for _, tt := range tests {
		if got := strings.Join(SalvagePodNames([]byte(tt.data), node), " "); got != tt.want {
			t.Errorf("%s: SalvagePodNames = %q, want %q", tt.name, got, tt.want)
		}
	}
}
