package watcher

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkeeper/podkeeper/manifests"
)

func testPod(name, uid, path string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "default", UID: types.UID(uid),
		Annotations: map[string]string{manifests.AnnotationManifestPath: path},
	}}
}

func TestIsManifestName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"a.yaml", true},
		{"a.yml", true},
		{"a.json", true},
		{"kube-apiserver.yaml", true},
		{".a.yaml", false},
		{".a.yaml.swp", false},
		{"a.yaml.bak", false},
		{"a.yaml~", false},
		{"a.YAML", false},
		{"a.txt", false},
		{"yaml", false},
		{"README", false},
	}
	for _, tt := range tests {
		if got := IsManifestName(tt.name); got != tt.want {
			t.Errorf("IsManifestName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestAssemble(t *testing.T) {
	bad := errors.New("bad")
	tests := []struct {
		name      string
		results   []fileResult
		wantPods  string // name@path, in order
		wantErrs  string // path[:kept], in order
		errSubstr string // in the first error, if any
		states    string // path=state of the non-ignored files, in order
	}{
		{"empty", nil, "", "", "", ""},
		{"sorted by name across files",
			[]fileResult{
				{path: "/d/b.yaml", pods: []*corev1.Pod{testPod("a", "1", "/d/b.yaml")}},
				{path: "/d/a.yaml", pods: []*corev1.Pod{testPod("z", "2", "/d/a.yaml"), testPod("m", "3", "/d/a.yaml")}},
			},
			"a@/d/b.yaml m@/d/a.yaml z@/d/a.yaml", "", "", "/d/a.yaml=ok /d/b.yaml=ok"},
		{"first path wins a duplicate, loser keeps its other pods",
			[]fileResult{
				{path: "/d/b.yaml", pods: []*corev1.Pod{testPod("x", "1", "/d/b.yaml"), testPod("y", "2", "/d/b.yaml")}},
				{path: "/d/a.yaml", pods: []*corev1.Pod{testPod("x", "3", "/d/a.yaml")}},
			},
			"x@/d/a.yaml y@/d/b.yaml", "/d/b.yaml", "pod default/x is already defined in /d/a.yaml", "/d/a.yaml=ok /d/b.yaml=conflict"},
		{"kept last good and never good",
			[]fileResult{
				{path: "/d/a.yaml", pods: []*corev1.Pod{testPod("a", "1", "/d/a.yaml")}, err: bad, kept: true},
				{path: "/d/c.yaml", err: bad},
			},
			"a@/d/a.yaml", "/d/a.yaml:kept /d/c.yaml", "bad", "/d/a.yaml=error /d/c.yaml=error"},
		{"kept pods still win duplicates",
			[]fileResult{
				{path: "/d/a.yaml", pods: []*corev1.Pod{testPod("a", "1", "/d/a.yaml")}, err: bad, kept: true},
				{path: "/d/b.yaml", pods: []*corev1.Pod{testPod("a", "2", "/d/b.yaml")}},
			},
			"a@/d/a.yaml", "/d/a.yaml:kept /d/b.yaml", "bad", "/d/a.yaml=error /d/b.yaml=conflict"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := assemble(tt.results, map[string]string{"/d/z": "not a .yaml, .yml or .json file", "/d/.x": "dotfile"})
			var pods, errs []string
			for _, p := range snap.Pods {
				pods = append(pods, p.Name+"@"+p.Annotations[manifests.AnnotationManifestPath])
			}
			for _, e := range snap.Errors {
				s := e.Path
				if e.KeptLastGood {
					s += ":kept"
				}
				errs = append(errs, s)
			}
			if got := strings.Join(pods, " "); got != tt.wantPods {
				t.Errorf("pods = %q, want %q", got, tt.wantPods)
			}
			if got := strings.Join(errs, " "); got != tt.wantErrs {
				t.Errorf("errors = %q, want %q", got, tt.wantErrs)
			}
			if tt.errSubstr != "" && !strings.Contains(snap.Errors[0].Err.Error(), tt.errSubstr) {
				t.Errorf("error %q does not contain %q", snap.Errors[0].Err, tt.errSubstr)
			}
			var states []string
			for _, f := range snap.Files {
				if f.State != StateIgnored {
					states = append(states, f.Path+"="+string(f.State))
				}
			}
			if got := strings.Join(states, " "); got != tt.states {
				t.Errorf("file states = %q, want %q", got, tt.states)
			}
			for _, p := range snap.Pods {
				kept := tt.results[0].kept && p.Annotations[manifests.AnnotationManifestPath] == tt.results[0].path
				if msg := p.Annotations[manifests.AnnotationManifestError]; (msg != "") != kept {
					t.Errorf("pod %s manifest-error annotation %q, kept=%v", p.Name, msg, kept)
				}
			}
			if strings.Join(snap.Ignored, " ") != "/d/.x /d/z" {
				t.Errorf("Ignored = %v, want sorted", snap.Ignored)
			}
			for i, p := range snap.Pods {
				for _, r := range tt.results {
					for _, q := range r.pods {
						if p == q {
							t.Errorf("pod %d is not a copy", i)
						}
					}
				}
			}
		})
	}
}

func TestSameState(t *testing.T) {
	base := Snapshot{
		Pods:   []*corev1.Pod{testPod("a", "1", "/d/a.yaml")},
		Errors: []FileError{{Path: "/d/b.yaml", Err: errors.New("bad")}},
	}
	tests := []struct {
		name  string
		other Snapshot
		want  bool
	}{
		{"identical copy", Snapshot{
			Pods:    []*corev1.Pod{testPod("a", "1", "/d/a.yaml")},
			Errors:  []FileError{{Path: "/d/b.yaml", Err: errors.New("bad")}},
			Ignored: []string{"/d/x.bak"}, // Ignored is not compared
		}, true},
		{"uid changed", Snapshot{Pods: []*corev1.Pod{testPod("a", "2", "/d/a.yaml")}, Errors: base.Errors}, false},
		{"path changed", Snapshot{Pods: []*corev1.Pod{testPod("a", "1", "/d/c.yaml")}, Errors: base.Errors}, false},
		{"pod added", Snapshot{Pods: append([]*corev1.Pod{testPod("0", "0", "/d/0.yaml")}, base.Pods...), Errors: base.Errors}, false},
		{"error text changed", Snapshot{Pods: base.Pods, Errors: []FileError{{Path: "/d/b.yaml", Err: errors.New("worse")}}}, false},
		{"error now kept", Snapshot{Pods: base.Pods, Errors: []FileError{{Path: "/d/b.yaml", Err: errors.New("bad"), KeptLastGood: true}}}, false},
		{"error gone", Snapshot{Pods: base.Pods}, false},
	}
	for _, tt := range tests {
		if got := sameState(base, tt.other); got != tt.want {
			t.Errorf("%s: sameState = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestFileErrorMessage(t *testing.T) {
	fe := &manifests.FileError{Path: "/d/a.yaml", Problems: []manifests.Problem{{Doc: 0, Message: "kind is required"}}}
	tests := []struct {
		err  FileError
		want string
	}{
		{FileError{Path: "/d/a.yaml", Err: fe}, "/d/a.yaml: doc 0: kind is required"},
		{FileError{Path: "/d/a.yaml", Err: fe, KeptLastGood: true}, "/d/a.yaml: doc 0: kind is required (keeping the last good pods)"},
		{FileError{Path: "/d/b.yaml", Err: errors.New("permission denied")}, "/d/b.yaml: permission denied"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	var target *manifests.FileError
	if !errors.As(tests[0].err, &target) {
		t.Error("FileError does not unwrap to the decoder's error")
	}
}
