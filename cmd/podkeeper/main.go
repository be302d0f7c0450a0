// Command podkeeper runs static pods from a manifest directory on containerd (`podkeeper run`),
// and inspects them (`get`, `describe`, `logs`, `image`, `validate`). Wiring only: flags ->
// config -> construct -> run.
package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	app := &cli.App{
		Name:                 "podkeeper",
		Usage:                "run Kubernetes static pods from a directory, on containerd, without an API server",
		Version:              version,
		EnableBashCompletion: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "api-socket", Value: defaultAPISocket, EnvVars: []string{"PODKEEPER_API_SOCKET"}, Usage: "unix socket of the agent's local API"},
		},
		Commands: []*cli.Command{
			runCommand(),
			getCommand(),
			describeCommand(),
			logsCommand(),
			execCommand(),
			imageCommand(),
			validateCommand(),
			completionCommand(),
			topCommand(),
			{
				Name:  "version",
				Usage: "print the version",
				Action: func(c *cli.Context) error {
					fmt.Fprintln(c.App.Writer, "podkeeper", version)
					return nil
				},
			},
		},
	}
	args := os.Args
	if n := len(args); n == 0 || args[n-1] != "--generate-bash-completion" {
		args = interspersed(app, args) // completion needs its flag last, where the shell put it
	}
	if err := app.Run(args); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

const defaultAPISocket = "/run/podkeeper/podkeeper.sock"
