package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed lets flags follow positional arguments (`podkeeper logs web -f`), as kubectl
// users type them: urfave/cli stops parsing flags at the first positional argument, so the
// arguments of the leaf command are reordered flags-first before parsing.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	cmds := app.Commands
	globals := app.Flags
	i := 1
	// Skip global flags before the command.
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		if takesValue(globals, args[i]) {
			i++
		}
		i++
	}
	var leaf *cli.Command
	for i < len(args) {
		c := findCommand(cmds, args[i])
		if c == nil {
			break
		}
		leaf = c
		cmds = c.Subcommands
		i++
		if len(cmds) == 0 {
			break
		}
	}
	if leaf == nil || i >= len(args) {
		return args
	}
	var flags, pos []string
	rest := args[i:]
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		switch {
		case a == "--":
			pos = append(pos, rest[j:]...)
			j = len(rest)
		case strings.HasPrefix(a, "-") && a != "-":
			flags = append(flags, a)
			if takesValue(leaf.Flags, a) && j+1 < len(rest) {
				j++
				flags = append(flags, rest[j])
			}
		default:
			pos = append(pos, a)
		}
	}
	out := append(append([]string(nil), args[:i]...), flags...)
	return append(out, pos...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		for _, n := range c.Names() {
			if n == name {
				return c
			}
		}
	}
	return nil
}

// takesValue reports whether a flag token like "-c" or "--tail" needs the next argument.
func takesValue(flags []cli.Flag, tok string) bool {
	if strings.Contains(tok, "=") {
		return false
	}
	name := strings.TrimLeft(tok, "-")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				// Asked of the flag, not of its type: the run command's flags are altsrc
				// wrappers (a *cli.BoolFlag type check took --always-pause for a flag with a
				// value, and the flag after it lost its own).
				if tv, ok := f.(interface{ TakesValue() bool }); ok {
					return tv.TakesValue()
				}
				return true
			}
		}
	}
	return false
}
