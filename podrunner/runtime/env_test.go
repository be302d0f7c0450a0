package runtime

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkeeper/podkeeper/manifests"
)

func TestContainerEnv(t *testing.T) {
	yes := true
	cms := []*corev1.ConfigMap{{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"},
		Data:       map[string]string{"MODE": "fast", "LEVEL": "3", "bad-key!": "x", "1DIGIT": "y", "a=b": "z"},
		BinaryData: map[string][]byte{"bin": []byte("raw")},
	}, {
		ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "kube-system"},
		Data:       map[string]string{"MODE": "elsewhere"},
	}}
	secrets := []*corev1.Secret{{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"},
		Data:       map[string][]byte{"password": []byte("hunter2"), "MODE": []byte("secret")},
	}}
	lookup := manifests.NewConfigSet(cms, secrets)
	cmKey := func(name, key string, optional bool) *corev1.EnvVarSource {
		s := &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}
		if optional {
			s.ConfigMapKeyRef.Optional = &yes
		}
		return s
	}
	secKey := func(name, key string, optional bool) *corev1.EnvVarSource {
		s := &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}
		if optional {
			s.SecretKeyRef.Optional = &yes
		}
		return s
	}
	cmFrom := func(name, prefix string, optional bool) corev1.EnvFromSource {
		s := corev1.EnvFromSource{Prefix: prefix, ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
		if optional {
			s.ConfigMapRef.Optional = &yes
		}
		return s
	}
	secFrom := func(name string, optional bool) corev1.EnvFromSource {
		s := corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
		if optional {
			s.SecretRef.Optional = &yes
		}
		return s
	}
	tests := []struct {
		name        string
		c           corev1.Container
		lookup      *manifests.ConfigSet
		want        []string // NAME=value in order
		wantSkipped int
		wantErr     string
	}{
		{name: "configMapKeyRef and secretKeyRef", c: corev1.Container{Env: []corev1.EnvVar{
			{Name: "M", ValueFrom: cmKey("cfg", "MODE", false)},
			{Name: "B", ValueFrom: cmKey("cfg", "bin", false)},
			{Name: "P", ValueFrom: secKey("creds", "password", false)},
		}}, want: []string{"M=fast", "B=raw", "P=hunter2"}},
		{name: "same namespace only", c: corev1.Container{Env: []corev1.EnvVar{{Name: "M", ValueFrom: cmKey("other", "MODE", false)}}},
			wantErr: `configmap "other" not found`},
		{name: "missing ConfigMap", c: corev1.Container{Env: []corev1.EnvVar{{Name: "M", ValueFrom: cmKey("nope", "MODE", false)}}},
			wantErr: `configmap "nope" not found`},
		{name: "missing key", c: corev1.Container{Env: []corev1.EnvVar{{Name: "M", ValueFrom: cmKey("cfg", "nokey", false)}}},
			wantErr: "couldn't find key nokey in ConfigMap default/cfg"},
		{name: "missing Secret", c: corev1.Container{Env: []corev1.EnvVar{{Name: "P", ValueFrom: secKey("nope", "password", false)}}},
			wantErr: `secret "nope" not found`},
		{name: "missing Secret key", c: corev1.Container{Env: []corev1.EnvVar{{Name: "P", ValueFrom: secKey("creds", "user", false)}}},
			wantErr: "couldn't find key user in Secret default/creds"},
		{name: "optional refs that are missing are skipped", c: corev1.Container{
			EnvFrom: []corev1.EnvFromSource{cmFrom("nope", "", true), secFrom("nope", true)},
			Env: []corev1.EnvVar{
				{Name: "A", ValueFrom: cmKey("nope", "x", true)}, {Name: "B", ValueFrom: cmKey("cfg", "nokey", true)},
				{Name: "C", ValueFrom: secKey("nope", "x", true)}, {Name: "D", ValueFrom: secKey("creds", "nokey", true)},
				{Name: "E", Value: "kept"},
			}}, want: []string{"E=kept"}},
		{name: "nil lookup finds nothing", c: corev1.Container{Env: []corev1.EnvVar{{Name: "M", ValueFrom: cmKey("cfg", "MODE", false)}}},
			lookup: manifests.NewConfigSet(nil, nil), wantErr: `configmap "cfg" not found`},
		{name: "envFrom with prefix, names with = skipped, later sources and env win, $(VAR) sees envFrom",
			c: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{cmFrom("cfg", "", false), secFrom("creds", false), cmFrom("cfg", "CFG_", false)},
				Env:     []corev1.EnvVar{{Name: "LEVEL", Value: "override"}, {Name: "MSG", Value: "mode=$(MODE) level=$(LEVEL) $(UNSET)"}},
			},
			// cfg keys sorted: 1DIGIT, LEVEL, MODE, a=b (no name can hold '=': skipped), bad-key!
			// (names are any printable ASCII but '=', as the kubelet 1.37's relaxed validation);
			// bin is binary data, which envFrom does not read
			want: []string{"1DIGIT=y", "LEVEL=override", "MODE=secret", "bad-key!=x", "password=hunter2",
				"CFG_1DIGIT=y", "CFG_LEVEL=3", "CFG_MODE=fast", "CFG_bad-key!=x", "MSG=mode=secret level=override $(UNSET)"},
			wantSkipped: 2},
		{name: "missing envFrom source", c: corev1.Container{EnvFrom: []corev1.EnvFromSource{secFrom("gone", false)}},
			wantErr: `secret "gone" not found`},
		{name: "other sources go to resolveSource", c: corev1.Container{Env: []corev1.EnvVar{
			{Name: "N", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		}}, want: []string{"N=resolved:N"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := lookup
			if tt.lookup != nil {
				l = tt.lookup
			}
			env, skipped, err := ContainerEnv(&tt.c, "default", l, func(e corev1.EnvVar) string { return "resolved:" + e.Name }, nil)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range env {
				got = append(got, e.Name+"="+e.Value)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("env = %q\nwant  %q", got, tt.want)
			}
			if len(skipped) != tt.wantSkipped {
				t.Errorf("skipped = %q, want %d", skipped, tt.wantSkipped)
			}
		})
	}
}
