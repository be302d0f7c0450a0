package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// The exec command line parses as kubectl's: -it combined, flags after the pod name, and
// everything after -- is the command, even when it looks like flags.
func TestExecArgs(t *testing.T) {
	tests := []struct {
		in        string
		stdin     bool
		tty       bool
		container string
		args      []string
	}{
		{"podkeeper exec -it web -- sh -c exit", true, true, "", []string{"web", "--", "sh", "-c", "exit"}},
		{"podkeeper exec web -c box -- ls -l", false, false, "box", []string{"web", "--", "ls", "-l"}},
		{"podkeeper exec -i web -c box -t -- cat", true, true, "box", []string{"web", "--", "cat"}},
		{"podkeeper exec web -- -c", false, false, "", []string{"web", "--", "-c"}},
	}
	for _, tc := range tests {
		cmd := execCommand()
		var got struct {
			stdin, tty bool
			container  string
			args       []string
		}
		cmd.Action = func(c *cli.Context) error {
			got.stdin, got.tty, got.container, got.args = c.Bool("stdin"), c.Bool("tty"), c.String("container"), c.Args().Slice()
			return nil
		}
		app := &cli.App{Name: "podkeeper", Flags: []cli.Flag{&cli.StringFlag{Name: "api-socket"}}, Commands: []*cli.Command{cmd}}
		if err := app.Run(interspersed(app, strings.Fields(tc.in))); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if got.stdin != tc.stdin || got.tty != tc.tty || got.container != tc.container || !reflect.DeepEqual(got.args, tc.args) {
			t.Errorf("%s: got stdin=%v tty=%v container=%q args=%q", tc.in, got.stdin, got.tty, got.container, got.args)
		}
	}
}
