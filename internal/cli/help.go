package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// writeHelp prints the help of cmd, found at path, to w.
func writeHelp(w io.Writer, cmd *command, path []string) {
	full := strings.TrimSpace("queenctl " + strings.Join(path, " "))
	if len(path) == 0 {
		fmt.Fprintf(w, "queenctl - the operator CLI of the Queen message broker\n\n")
	} else {
		fmt.Fprintf(w, "%s - %s\n\n", full, cmd.summary)
	}
	fmt.Fprintf(w, "Usage:\n")
	switch {
	case len(cmd.subs) > 0:
		fmt.Fprintf(w, "  %s COMMAND [flags]\n", full)
	case cmd.args != "":
		fmt.Fprintf(w, "  %s %s [flags]\n", full, cmd.args)
	default:
		fmt.Fprintf(w, "  %s [flags]\n", full)
	}
	if cmd.help != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(cmd.help, "\n"))
	}
	if len(cmd.subs) > 0 {
		fmt.Fprintf(w, "\nCommands:\n")
		width := 0
		for _, s := range cmd.subs {
			width = max(width, len(s.name))
		}
		for _, s := range cmd.subs {
			fmt.Fprintf(w, "  %-*s  %s\n", width, s.name, s.summary)
		}
	}
	if cmd.setup != nil {
		fs := flag.NewFlagSet(full, flag.ContinueOnError)
		cmd.setup(fs)
		if lines := flagLines(fs, func(string) bool { return true }); len(lines) > 0 {
			fmt.Fprintf(w, "\nFlags:\n%s", strings.Join(lines, ""))
		}
	}
	gfs := flag.NewFlagSet(full, flag.ContinueOnError)
	g := defaultGlobals()
	g.register(gfs)
	fmt.Fprintf(w, "\nGlobal flags:\n%s", strings.Join(flagLines(gfs, isGlobal), ""))
	if len(path) == 0 {
		fmt.Fprint(w, rootFooter)
	} else if len(cmd.subs) > 0 {
		fmt.Fprintf(w, "\nRun '%s COMMAND --help' for the flags of a command.\n", full)
	}
}

// flagLines formats the flags of fs that keep selects, one line each, with their
// one-letter aliases (flags registered with the same Value and no usage).
func flagLines(fs *flag.FlagSet, keep func(name string) bool) []string {
	type entry struct{ names, usage string }
	var entries []entry
	width := 0
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage == "" || !keep(f.Name) {
			return
		}
		short := "    "
		fs.VisitAll(func(o *flag.Flag) {
			if o.Usage == "" && o.Value == f.Value {
				short = "-" + o.Name + ", "
			}
		})
		names := short + "--" + f.Name
		typ, usage := flag.UnquoteUsage(f)
		if typ != "" {
			names += " " + strings.ToUpper(typ)
		}
		if d := f.DefValue; d != "" && d != "false" && d != "0" && d != "0s" && d != "[]" {
			usage += fmt.Sprintf(" (default %s)", d)
		}
		entries = append(entries, entry{names, usage})
		width = max(width, len(names))
	})
	lines := make([]string, len(entries))
	for i, e := range entries {
		lines[i] = fmt.Sprintf("  %-*s  %s\n", width, e.names, e.usage)
	}
	return lines
}

// rootFooter ends the top-level help: where settings come from and the exit codes.
const rootFooter = `
Connection settings, each taken from the first that sets it:
  --server/--token, the context named by --context or QUEEN_CONTEXT,
  QUEEN_SERVER/QUEEN_TOKEN, the config file's current context, then
  ` + DefaultServer + ` without a token.

Exit status:
  0    success
  1    the broker refused the request or the operation did not take effect
  2    usage error (command line or config file); nothing was sent
  3    not found (queue, message, consumer group, partition, lease, stream query)
  4    not authorized (HTTP 401 or 403)
  5    broker unreachable or unavailable (HTTP 503, 504): try again later
  130  interrupted (tail ends with 0)

Run 'queenctl COMMAND --help' for the flags of a command; docs in
/usr/share/doc/queen/queenctl.md.
`
