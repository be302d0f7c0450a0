package runtime

import (
	"strings"
	"testing"
)

func TestParseEnvFile(t *testing.T) {
	for _, tc := range []struct {
		name, file, key, want string
		found                 bool
		err                   string
	}{
		{name: "plain", file: "A='1'\nB='two words'\n", key: "B", want: "two words", found: true},
		{name: "comments and blanks", file: "# header\n\n  A='x' # trailing\n", key: "A", want: "x", found: true},
		{name: "multi-line value", file: "A='line1\nline2'\nB='b'\n", key: "A", want: "line1\nline2", found: true},
		{name: "after a multi-line value", file: "A='line1\nline2'\nB='b'\n", key: "B", want: "b", found: true},
		{name: "space after = is empty", file: "A= 'x'\n", key: "A", want: "", found: true},
		{name: "missing key", file: "A='1'\n", key: "B", found: false},
		{name: "double quotes refused", file: "A=\"1\"\n", key: "A", err: "line 1: value must be enclosed in single quotes"},
		{name: "no equals", file: "A='1'\nJUNK\n", key: "A", want: "1", found: true},
		{name: "no equals before key", file: "JUNK\nA='1'\n", key: "A", err: "line 1: missing '='"},
		{name: "space before =", file: "A ='1'\n", key: "A", err: "line 1: whitespace before '=' is not allowed"},
		{name: "unclosed quote", file: "A='1'\nB='2\nC\n", key: "B", err: "starting at line 2: unclosed single quote"},
		{name: "junk after quote", file: "A='1' x\n", key: "A", err: "line 1: unexpected content after closing quote"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found, err := parseEnvFile(strings.NewReader(tc.file), tc.key)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || found != tc.found {
				t.Errorf("= %q, %v, %v; want %q, %v", got, found, err, tc.want, tc.found)
			}
		})
	}
}

// A fileKeyRef's volume that was never set up (no container mounts it) fails in the kubelet's
// words (make conformance's edge-env-fileref), not as an env file that could not be parsed.
func TestEnvFileVolumeNotFound(t *testing.T) {
	_, _, err := envFileValue(t.TempDir(), "uid", "cfg", "a.env", "A")
	if err == nil || err.Error() != `cannot find the volume "cfg" referenced by FileKeyRef` {
		t.Fatalf("err %v, want the kubelet's words", err)
	}
}
