package podrunner

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestRecursiveReadOnly(t *testing.T) {
	mode := func(m corev1.RecursiveReadOnlyMode) *corev1.RecursiveReadOnlyMode { return &m }
	cases := []struct {
		name      string
		vm        corev1.VolumeMount
		supported bool
		want      bool
		wantErr   bool
	}{
		{"unset", corev1.VolumeMount{ReadOnly: true}, true, false, false},
		{"Disabled", corev1.VolumeMount{ReadOnly: true, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyDisabled)}, true, false, false},
		{"IfPossible, supported", corev1.VolumeMount{ReadOnly: true, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyIfPossible)}, true, true, false},
		{"IfPossible, unsupported", corev1.VolumeMount{ReadOnly: true, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyIfPossible)}, false, false, false},
		{"Enabled, supported", corev1.VolumeMount{ReadOnly: true, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyEnabled)}, true, true, false},
		{"Enabled, unsupported: an error", corev1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyEnabled)}, false, false, true},
		{"never on a writable mount", corev1.VolumeMount{RecursiveReadOnly: mode(corev1.RecursiveReadOnlyEnabled)}, true, false, false},
	}
	for _, tc := range cases {
		got, err := RecursiveReadOnly(tc.vm, tc.supported)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("%s: got %v, %v; want %v, error %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

// A container status's volumeMounts mirror the spec's mounts, as the kubelet's do: a read-only
// mount says whether it is recursively read-only, a writable one leaves it out.
func TestVolumeMountStatuses(t *testing.T) {
	mode := func(m corev1.RecursiveReadOnlyMode) *corev1.RecursiveReadOnlyMode { return &m }
	c := &corev1.Container{VolumeMounts: []corev1.VolumeMount{
		{Name: "data", MountPath: "/data"},
		{Name: "cfg", MountPath: "/etc/cfg", ReadOnly: true},
		{Name: "tree", MountPath: "/tree", ReadOnly: true, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyIfPossible)},
		{Name: "must", MountPath: "/must", ReadOnly: true, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyEnabled)},
	}}
	for _, supported := range []bool{true, false} {
		treeMode := corev1.RecursiveReadOnlyDisabled
		mustMode := corev1.RecursiveReadOnlyDisabled // unsupported: the container cannot start; the kubelet reports Disabled
		if supported {
			treeMode, mustMode = corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyEnabled
		}
		want := []corev1.VolumeMountStatus{
			{Name: "data", MountPath: "/data"},
			{Name: "cfg", MountPath: "/etc/cfg", ReadOnly: true, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyDisabled)},
			{Name: "tree", MountPath: "/tree", ReadOnly: true, RecursiveReadOnly: mode(treeMode)},
			{Name: "must", MountPath: "/must", ReadOnly: true, RecursiveReadOnly: mode(mustMode)},
		}
		if got := volumeMountStatuses(c, supported); !reflect.DeepEqual(got, want) {
			t.Errorf("supported=%v: got %+v, want %+v", supported, got, want)
		}
	}
	if got := volumeMountStatuses(&corev1.Container{}, true); got != nil {
		t.Errorf("no mounts: got %+v, want none", got)
	}
}
