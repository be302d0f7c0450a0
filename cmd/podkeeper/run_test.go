package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
	"sigs.k8s.io/yaml"
)

// runFlags parses args with the run command's flags and gives f the context.
func runFlags(t *testing.T, args []string, f func(*cli.Context) error) error {
	t.Helper()
	cmd := runCommand()
	cmd.Action = f
	cmd.Before = nil
	app := &cli.App{Name: "podkeeper", Commands: []*cli.Command{cmd}}
	return app.Run(append([]string{"podkeeper", "run"}, args...))
}

func TestContainerLogRotationFlags(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		size      int64
		files     int
		errPrefix string
	}{
		{nil, 10 << 20, 5, ""},
		{[]string{"--container-log-max-size", "1Mi", "--container-log-max-files", "2"}, 1 << 20, 2, ""},
		{[]string{"--container-log-max-size", "500k"}, 500000, 5, ""},
		{[]string{"--container-log-max-files", "1"}, 0, 0, "--container-log-max-files must be at least 2"},
		{[]string{"--container-log-max-size", "0"}, 0, 0, "--container-log-max-size must be positive"},
		{[]string{"--container-log-max-size", "ten"}, 0, 0, "--container-log-max-size: quantities must match"},
	} {
		var size int64
		var files int
		err := runFlags(t, tc.args, func(c *cli.Context) error {
			var err error
			size, files, err = containerLogRotation(c)
			return err
		})
		switch {
		case tc.errPrefix != "":
			if err == nil || !strings.HasPrefix(err.Error(), tc.errPrefix) {
				t.Errorf("%v: error %v, want %q...", tc.args, err, tc.errPrefix)
			}
		case err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case size != tc.size || files != tc.files:
			t.Errorf("%v: size %d, files %d; want %d, %d", tc.args, size, files, tc.size, tc.files)
		}
	}
}

// The config file `make install` ships names only flags of `podkeeper run` (the YAML source
// ignores a key no flag has, so a typo would pass silently), and its values parse.
func TestExampleConfig(t *testing.T) {
	const path = "../../examples/etc/podkeeper/config.yaml"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := yaml.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range runCommand().Flags {
		for _, n := range f.Names() {
			names[n] = true
		}
	}
	for k := range keys {
		if !names[k] {
			t.Errorf("%s: %q is not a flag of podkeeper run", path, k)
		}
	}
	cmd := runCommand()
	cmd.Action = func(c *cli.Context) error {
		size, files, err := containerLogRotation(c)
		if err != nil || size != 10<<20 || files != 5 || c.String("container-log-links-dir") != "/var/log/containers" {
			t.Errorf("log rotation %d x %d (%v), links %q", size, files, err, c.String("container-log-links-dir"))
		}
		if d := c.Duration("image-pull-progress-timeout"); d != 5*time.Minute {
			t.Errorf("image-pull-progress-timeout %s, want 5m", d)
		}
		return nil
	}
	app := &cli.App{Name: "podkeeper", Commands: []*cli.Command{cmd}}
	if err := app.Run([]string{"podkeeper", "run", "--config", path}); err != nil {
		t.Fatal(err)
	}
}

// --image-pull-progress-timeout: the default is containerd's CRI's 5m; 0 turns the watch off
// (runtime.Config's negative), never the Config's 0 (which means the default).
func TestPullProgressTimeoutFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 5 * time.Minute},
		{[]string{"--image-pull-progress-timeout", "30s"}, 30 * time.Second},
		{[]string{"--image-pull-progress-timeout", "0"}, -1},
	} {
		err := runFlags(t, tc.args, func(c *cli.Context) error {
			if got := pullProgressTimeout(c.Duration("image-pull-progress-timeout")); got != tc.want {
				t.Errorf("%v: %s, want %s", tc.args, got, tc.want)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
	}
}
