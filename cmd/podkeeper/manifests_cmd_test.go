package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/podkeeper/podkeeper/podrunner/api"
	"github.com/podkeeper/podkeeper/watcher"
)

func runValidate(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	app := testApp()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	app.ExitErrHandler = func(*cli.Context, error) {} // no os.Exit in tests
	err := app.Run(append([]string{"podkeeper", "validate", "--node-name", "n1"}, args...))
	code := 0
	var ec cli.ExitCoder
	switch {
	case errors.As(err, &ec):
		code = ec.ExitCode()
	case err != nil:
		t.Fatalf("validate: %v", err)
	}
	return out.String(), errOut.String(), code
}

const goodPod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: busybox:1.36\n"

func TestValidateDirectoryAsTheAgent(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a-web.yaml":     goodPod,
		"b-dup.yaml":     goodPod,
		"c-bad.yaml":     strings.Replace(goodPod, "image:", "imagee:", 1),
		"d-cfg.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n",
		"a-web.yaml.bak": "junk",
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := runValidate(t, dir)
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	for _, want := range []string{"a-web.yaml: ok: Pod default/web-n1", "d-cfg.yaml: ok: ConfigMap default/settings", "a-web.yaml.bak: ignored: editor leftover (*.bak)"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{"b-dup.yaml: conflict:", "a-web.yaml, which wins", "c-bad.yaml: error:", "  doc 0: spec.containers[0].imagee: unknown field", "spec.containers[0].image: Required value"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}

	// One good file on its own passes.
	out, _, code = runValidate(t, filepath.Join(dir, "a-web.yaml"))
	if code != 0 || !strings.Contains(out, "ok: Pod default/web-n1") {
		t.Errorf("single good file: code %d out %q", code, out)
	}
	// A file given by path is judged alone (its duplicate elsewhere does not matter) and a bad
	// one fails.
	_, errOut, code = runValidate(t, filepath.Join(dir, "c-bad.yaml"))
	if code != 1 || !strings.Contains(errOut, "imagee") {
		t.Errorf("single bad file: code %d err %q", code, errOut)
	}
}

func TestValidateStrictPermissions(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(p, []byte(goodPod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runValidate(t, dir)
	if code != 0 || !strings.Contains(errOut, "warning:") || !strings.Contains(errOut, "writable by every user") {
		t.Errorf("lenient: code %d err %q", code, errOut)
	}
	_, errOut, code = runValidate(t, "--strict-permissions", dir)
	if code != 1 || !strings.Contains(errOut, "strict-permissions") {
		t.Errorf("strict: code %d err %q", code, errOut)
	}
}

func TestPrintManifestTable(t *testing.T) {
	files := []api.ManifestFile{
		{Path: "/m/a.yaml", State: watcher.StateOK, Declared: []string{"Pod default/a-n1", "ConfigMap default/c"}},
		{Path: "/m/b.yaml", State: watcher.StateError, KeptLastGood: true, Declared: []string{"Pod default/b-n1"},
			Messages: []string{"doc 0: spec.containers[0].imagee: unknown field \"spec.containers[0].imagee\"", "doc 1: kind Service is not supported"}},
		{Path: "/m/c.yaml.bak", State: watcher.StateIgnored, Messages: []string{"editor leftover (*.bak)"}},
	}
	var b bytes.Buffer
	printManifestTable(&b, files, false)
	got := b.String()
	for _, want := range []string{"FILE", "STATE", "DECLARED", "MESSAGE", "a.yaml", "Pod default/a-n1,ConfigMap default/c",
		"error (kept last good)", "unknown field", "(+1 more)", "c.yaml.bak", "ignored", "<none>"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	b.Reset()
	printManifestTable(&b, files, true)
	if !strings.Contains(b.String(), "kind Service is not supported") || strings.Contains(b.String(), "more)") {
		t.Errorf("wide table:\n%s", b.String())
	}
}
