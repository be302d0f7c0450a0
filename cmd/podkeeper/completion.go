package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/podkeeper/podkeeper/manifests"
)

// Shell completion asks the podkeeper binary itself: urfave/cli answers
// `podkeeper <words...> --generate-bash-completion` with the commands or flags that fit, and
// pod-taking commands list the agent's pods.

const bashCompletion = `# podkeeper bash completion: source <(podkeeper completion bash)
_podkeeper_complete() {
  local cur opts
  COMPREPLY=()
  cur="${COMP_WORDS[COMP_CWORD]}"
  if [[ "$cur" == -* ]]; then
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
  return 0
}
complete -o bashdefault -o default -F _podkeeper_complete podkeeper
`

const zshCompletion = `#compdef podkeeper
# podkeeper zsh completion: source <(podkeeper completion zsh), or save as _podkeeper in $fpath
_podkeeper() {
  local -a opts
  local cur=${words[CURRENT]}
  if [[ "$cur" == -* ]]; then
    opts=(${(f)"$(${words[1,CURRENT-1]} $cur --generate-bash-completion 2>/dev/null)"})
  else
    opts=(${(f)"$(${words[1,CURRENT-1]} --generate-bash-completion 2>/dev/null)"})
  fi
  if (( ${#opts} )); then
    compadd -- $opts
  else
    _files
  fi
}
if [[ "$funcstack[1]" = "_podkeeper" ]]; then _podkeeper "$@"; else compdef _podkeeper podkeeper; fi
`

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: source <(podkeeper completion bash)",
		ArgsUsage: "bash|zsh",
		Action: func(c *cli.Context) error {
			switch c.Args().First() {
			case "bash":
				fmt.Fprint(c.App.Writer, bashCompletion)
			case "zsh":
				fmt.Fprint(c.App.Writer, zshCompletion)
			default:
				return fmt.Errorf("usage: podkeeper completion bash|zsh (got %q)", c.Args().First())
			}
			return nil
		},
		BashComplete: func(c *cli.Context) {
			fmt.Fprintln(c.App.Writer, "bash")
			fmt.Fprintln(c.App.Writer, "zsh")
		},
	}
}

// completePods lists the agent's pods by manifest name (silently nothing when it does not answer).
func completePods(c *cli.Context) {
	if n := len(os.Args); n > 2 && strings.HasPrefix(os.Args[n-2], "-") {
		cli.DefaultCompleteWithFlags(c.Command)(c) // completing a flag name
		return
	}
	if c.NArg() > 0 {
		return
	}
	list, err := client(c).Pods(c.Context)
	if err != nil {
		return
	}
	for _, p := range list.Items {
		if n := p.Annotations[manifests.AnnotationManifestName]; n != "" {
			fmt.Fprintln(c.App.Writer, n)
		}
		fmt.Fprintln(c.App.Writer, p.Name)
	}
}
