package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/podkeeper/podkeeper/podrunner"
	"github.com/podkeeper/podkeeper/podrunner/api"
)

// execCommand is `podkeeper exec [-i] [-t] POD [-c CONTAINER] -- COMMAND [ARGS...]`, as kubectl
// exec: -t gives the command a terminal (the local one goes raw; window size changes follow),
// -i passes stdin, and podkeeper exits with the command's exit code.
func execCommand() *cli.Command {
	return &cli.Command{
		Name:                   "exec",
		Usage:                  "run a command in a running container",
		ArgsUsage:              "POD [-c CONTAINER] -- COMMAND [ARGS...]",
		UseShortOptionHandling: true,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "stdin", Aliases: []string{"i"}, Usage: "pass stdin to the command"},
			&cli.BoolFlag{Name: "tty", Aliases: []string{"t"}, Usage: "give the command a terminal (stdin must be one)"},
			&cli.StringFlag{Name: "container", Aliases: []string{"c"}, Usage: "container name (default: the only one)"},
			namespaceFlags[0],
		},
		Action: runExec,
	}
}

func runExec(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) > 1 && args[1] == "--" {
		args = append(args[:1:1], args[2:]...)
	}
	if len(args) < 2 || args[0] == "--" {
		return errors.New("usage: podkeeper exec [-i] [-t] POD [-c CONTAINER] -- COMMAND [ARGS...]")
	}
	pod, cmd := args[0], args[1:]
	o := api.ExecOptions{Container: c.String("container"), Command: cmd, Stdout: c.App.Writer, Stderr: c.App.ErrWriter}
	if c.Bool("stdin") {
		o.Stdin = os.Stdin
	}
	fd := int(os.Stdin.Fd())
	if c.Bool("tty") {
		if !term.IsTerminal(fd) {
			fmt.Fprintln(c.App.ErrWriter, "Unable to use a TTY - input is not a terminal or the right kind of file")
		} else {
			o.TTY = true
			if w, h, err := term.GetSize(fd); err == nil {
				o.Size = podrunner.TermSize{Width: uint16(w), Height: uint16(h)}
			}
			resize := make(chan podrunner.TermSize, 1)
			winch := make(chan os.Signal, 1)
			signal.Notify(winch, syscall.SIGWINCH)
			defer signal.Stop(winch)
			go func() {
				for range winch {
					if w, h, err := term.GetSize(fd); err == nil {
						select {
						case resize <- podrunner.TermSize{Width: uint16(w), Height: uint16(h)}:
						default:
						}
					}
				}
			}()
			o.Resize = resize
			if o.Stdin != nil {
				old, err := term.MakeRaw(fd)
				if err != nil {
					return fmt.Errorf("exec: raw terminal: %w", err)
				}
				defer func() { _ = term.Restore(fd, old) }()
			}
		}
	}
	if o.TTY {
		o.Stderr = io.Discard
	}
	code, err := client(c).Exec(c.Context, c.String("namespace"), pod, o)
	if err != nil {
		return err
	}
	if code != 0 {
		return cli.Exit("", code)
	}
	return nil
}
