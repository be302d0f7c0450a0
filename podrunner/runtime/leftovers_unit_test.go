package runtime

import (
	"errors"
	"testing"
)

func TestOwnContainerID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{containerID("3c7d8822-a301-b77b-360c-83e84e27995d", "web", 0), true},
		{containerID("3c7d8822-a301-b77b-360c-83e84e27995d", "sandbox", 12), true},
		{containerID("3c7d8822-a301-b77b-360c-83e84e27995d", "123", 1), true},
		{sandboxIDFor("3c7d8822-a301-b77b-360c-83e84e27995d", 3), true},
		{"3c7d8822a301b77b.web", false},             // no attempt
		{"pk-lost-1796448520775435657-lost", false}, // another client's
		{"3c7d8822a301b77b.Web.0", false},           // not a DNS label
		{"sha256:abc", false},
		{"", false},
	} {
		if got := ownContainerID.MatchString(tc.id); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.id, got, tc.want)
		}
	}
}

func TestInterruptedCreate(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want bool
	}{
		{"failed to start shim: mkdir /run/containerd/io.containerd.runtime.v2.task/podkeeper/x.c.0: file exists", true},
		{"failed to create shim task: OCI runtime create failed: runc create failed: container with given ID already exists: unknown", true},
		{"failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: \"nosuch\": executable file not found in $PATH: unknown", false},
		{"failed to start shim: start failed: io.containerd.runc.v2: getwd: no such file or directory: exit status 1", true},
		{"failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: chdir to cwd (\"/nosuch\") set in config.json failed: no such file or directory: unknown", false},
		{"mkdir /var/lib/podkeeper/x: file exists", false},
	} {
		if got := interruptedCreate(errors.New(tc.msg)); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.msg, got, tc.want)
		}
	}
}
