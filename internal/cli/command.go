package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/queenmq/queen/internal/editdistance"
)

// runFunc runs a leaf command with its positional arguments.
type runFunc func(ctx context.Context, a *app, args []string) error

// command is a node of the command tree: a group (with subs) or a leaf (with setup).
type command struct {
	name    string
	aliases []string
	// args is the positional usage, e.g. "QUEUE [PAYLOAD...]".
	args string
	// summary is the one-line description; help the optional longer text.
	summary, help string
	// minArgs and maxArgs bound the positional arguments; maxArgs < 0 is unbounded.
	minArgs, maxArgs int
	// setup registers the leaf's flags on fs and returns its run function.
	setup func(fs *flag.FlagSet) runFunc
	subs  []*command
}

// find returns the sub-command named or aliased name, or nil.
func (c *command) find(name string) *command {
	for _, s := range c.subs {
		if s.name == name || slices.Contains(s.aliases, name) {
			return s
		}
	}
	return nil
}

// dispatch walks the command tree along args, parses the flags of each level (the
// globals are accepted at every level, and anywhere among a leaf's arguments) and
// runs the leaf.
func (a *app) dispatch(ctx context.Context, args []string) int {
	cmd, path := rootCommand(), []string{}
	for {
		a.path = strings.Join(path, " ")
		fs := flag.NewFlagSet("queenctl "+a.path, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Usage = func() {}
		a.g.register(fs)
		var run runFunc
		if cmd.setup != nil {
			run = cmd.setup(fs)
		}
		if len(cmd.subs) == 0 {
			pos, err := parseInterspersed(fs, args)
			if err != nil {
				return a.flagError(cmd, path, err)
			}
			if len(pos) < cmd.minArgs || (cmd.maxArgs >= 0 && len(pos) > cmd.maxArgs) {
				return a.report(ctx, usagef("%s", argCountMessage(cmd, len(pos))))
			}
			return a.run(ctx, run, pos)
		}
		if err := fs.Parse(args); err != nil {
			return a.flagError(cmd, path, err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			writeHelp(a.stderr, cmd, path)
			return ExitUsage
		}
		if len(path) == 0 && rest[0] == "help" {
			return a.help(rest[1:])
		}
		sub := cmd.find(rest[0])
		if sub == nil {
			return a.report(ctx, usagef("unknown command %q%s", rest[0], suggest(cmd, rest[0])))
		}
		cmd, path, args = sub, append(path, sub.name), rest[1:]
	}
}

// flagError reports a flag parsing error, or prints the help for -h/--help.
func (a *app) flagError(cmd *command, path []string, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		writeHelp(a.stdout, cmd, path)
		return ExitOK
	}
	return a.report(context.Background(), usagef("%v", err))
}

// help prints the help of the command at path ("queenctl help queue get").
func (a *app) help(path []string) int {
	cmd, at := rootCommand(), []string{}
	for _, name := range path {
		sub := cmd.find(name)
		if sub == nil {
			a.path = "help"
			return a.report(context.Background(), usagef("unknown command %q%s", name, suggest(cmd, name)))
		}
		cmd, at = sub, append(at, sub.name)
	}
	writeHelp(a.stdout, cmd, at)
	return ExitOK
}

// parseInterspersed parses flags anywhere among the positional arguments, which it
// returns in order. Everything after "--" is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// argCountMessage explains a wrong number of positional arguments.
func argCountMessage(cmd *command, got int) string {
	want := cmd.args
	if want == "" {
		return fmt.Sprintf("takes no arguments, got %d", got)
	}
	return fmt.Sprintf("wrong number of arguments (%d): want %s", got, want)
}

// suggest returns ` (did you mean "x"?)` for a mistyped sub-command, or "".
func suggest(cmd *command, name string) string {
	best, bestD := "", 3
	for _, s := range cmd.subs {
		for _, n := range append([]string{s.name}, s.aliases...) {
			if d := editdistance.Between(name, n); d < bestD || (strings.HasPrefix(n, name) && best == "") {
				best, bestD = n, min(d, bestD)
			}
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}
