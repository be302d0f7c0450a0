package runtime

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestContainerArgs(t *testing.T) {
	ep, cmd := []string{"/entry"}, []string{"--default"}
	cases := []struct {
		name          string
		command, args []string
		want          []string
	}{
		{"neither: entrypoint + cmd", nil, nil, []string{"/entry", "--default"}},
		{"args only: entrypoint + args", nil, []string{"-x"}, []string{"/entry", "-x"}},
		{"command only: image ignored", []string{"sh"}, nil, []string{"sh"}},
		{"command and args", []string{"sh"}, []string{"-c", "true"}, []string{"sh", "-c", "true"}},
	}
	for _, tc := range cases {
		if got := ContainerArgs(ep, cmd, tc.command, tc.args); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestMergeEnv(t *testing.T) {
	got := MergeEnv([]string{"PATH=/bin", "A=image"}, []corev1.EnvVar{{Name: "A", Value: "pod"}, {Name: "B", Value: "new"}})
	want := []string{"PATH=/bin", "A=pod", "B=new"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestExpandEnv(t *testing.T) {
	vars := map[string]string{"A": "x", "B": "y"}
	cases := map[string]string{
		"$(A)":        "x",
		"a$(A)b$(B)c": "axbyc",
		"$$(A)":       "$(A)",
		"$(MISSING)":  "$(MISSING)",
		"$(A":         "$(A",
		"$A":          "$A",
		"plain":       "plain",
		"$":           "$",
	}
	for in, want := range cases {
		if got := ExpandEnv(in, vars); got != want {
			t.Errorf("ExpandEnv(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResolveEnvExpandsEarlierVariablesOnly(t *testing.T) {
	env := ResolveEnv([]corev1.EnvVar{
		{Name: "A", Value: "1"},
		{Name: "B", Value: "$(A)-$(C)"},
		{Name: "C", Value: "3"},
	}, nil)
	if env[1].Value != "1-$(C)" {
		t.Fatalf("B = %q, want 1-$(C)", env[1].Value)
	}
}

func TestContainerIDsDoNotCollide(t *testing.T) {
	uid := "0123456789abcdef0123456789abcdef"
	seen := map[string]bool{}
	for _, id := range []string{
		containerID(uid, "sandbox", 0), sandboxIDFor(uid, 0), containerID(uid, "a", 0), containerID(uid, "a", 1),
	} {
		if seen[id] {
			t.Fatalf("duplicate container ID %s", id)
		}
		seen[id] = true
	}
}
