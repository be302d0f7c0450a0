package manifests

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCasesGolden decodes each testdata/cases/*.yaml and compares the outcome — the objects
// with their defaults and identity, or every problem with its doc and field path — with
// testdata/cases/*.golden.json. Run with -update to rewrite the golden files, then review them.
func TestCasesGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/cases/*.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			path := "/etc/podkeeper/manifests/" + filepath.Base(in)
			objs, err := Decode(path, data, node)
			var out any
			if err != nil {
				var fe *FileError
				if !errors.As(err, &fe) {
					t.Fatalf("error %T is not a *FileError: %v", err, err)
				}
				if objs != nil {
					t.Fatal("objects returned with an error")
				}
				var probs []string
				for _, p := range fe.Problems {
					probs = append(probs, p.String())
				}
				out = map[string]any{"problems": probs}
			} else {
				out = objs
			}
			got, err := json.MarshalIndent(out, "", "  ")
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
				t.Errorf("outcome differs from %s:\n%s", golden, got)
			}
		})
	}
}
