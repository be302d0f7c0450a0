package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// testApp builds the command tree as main does.
func testApp() *cli.App {
	return &cli.App{
		Name: "podkeeper",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "api-socket", Value: defaultAPISocket},
		},
		Commands: []*cli.Command{
			runCommand(), getCommand(), describeCommand(), logsCommand(), imageCommand(), validateCommand(),
			{Name: "version"},
		},
	}
}

func TestInterspersed(t *testing.T) {
	app := testApp()
	tests := []struct {
		in, want string
	}{
		{"podkeeper logs web -f --tail 3 -c main", "podkeeper logs -f --tail 3 -c main web"},
		{"podkeeper logs web --tail=3 -p", "podkeeper logs --tail=3 -p web"},
		{"podkeeper logs -f web", "podkeeper logs -f web"},
		{"podkeeper logs web -c main -- -f", "podkeeper logs -c main web -- -f"},
		{"podkeeper logs web -- -f --tail 3", "podkeeper logs web -- -f --tail 3"},
		{"podkeeper --api-socket /tmp/s logs web -f", "podkeeper --api-socket /tmp/s logs -f web"},
		{"podkeeper get pods web -o wide", "podkeeper get pods -o wide web"},
		{"podkeeper get po -A", "podkeeper get po -A"},
		{"podkeeper describe pod web -n kube-system", "podkeeper describe pod -n kube-system web"},
		{"podkeeper logs web -", "podkeeper logs web -"},
		{"podkeeper version", "podkeeper version"},
		{"podkeeper nosuch web -f", "podkeeper nosuch web -f"},
		{"podkeeper", "podkeeper"},
		// run's flags are altsrc wrappers: a bool one takes no value.
		{"podkeeper run --always-pause --resync 1s --log-level debug", "podkeeper run --always-pause --resync 1s --log-level debug"},
	}
	for _, tc := range tests {
		got := interspersed(app, strings.Fields(tc.in))
		if want := strings.Fields(tc.want); !reflect.DeepEqual(got, want) {
			t.Errorf("interspersed(%q) = %q, want %q", tc.in, got, want)
		}
	}
}

// The reordered arguments parse as intended: flags set, the pod name the only argument.
func TestInterspersedParses(t *testing.T) {
	app := testApp()
	var got struct {
		pod, container string
		follow         bool
		tail           int64
		args           int
	}
	for _, c := range app.Commands {
		if c.Name == "logs" {
			c.Action = func(c *cli.Context) error {
				got.pod, got.container, got.follow, got.tail, got.args = c.Args().First(), c.String("container"), c.Bool("follow"), c.Int64("tail"), c.NArg()
				return nil
			}
		}
	}
	if err := app.Run(interspersed(app, strings.Fields("podkeeper logs web -f --tail 3 -c main"))); err != nil {
		t.Fatal(err)
	}
	if got.pod != "web" || got.container != "main" || !got.follow || got.tail != 3 || got.args != 1 {
		t.Fatalf("parsed %+v", got)
	}
}
