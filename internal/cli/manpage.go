package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/queenmq/queen/internal/buildinfo"
	"github.com/queenmq/queen/internal/manpage"
)

// ManFlag, as queenctl's only argument, prints the queenctl(1) manual page in roff
// instead of running a command: a build helper (the packages install the page),
// left out of the help on purpose.
const ManFlag = "-man"

// writeManPage writes queenctl(1), built from the command tree: every command with
// its usage, help and flags, then the global flags.
func writeManPage(w io.Writer) {
	fmt.Fprint(w, manPage().Roff())
}

// manPage is queenctl(1) as data.
func manPage() *manpage.Page {
	var commands []manpage.Item
	for _, n := range walk(rootCommand()) {
		c := n.cmd
		if len(n.path) == 0 || len(c.subs) > 0 {
			continue
		}
		tag := "queenctl " + strings.Join(n.path, " ")
		if c.args != "" {
			tag += " " + c.args
		}
		text := []string{sentence(c.summary)}
		if len(c.aliases) > 0 {
			text[0] += " Also: " + strings.Join(c.aliases, ", ") + "."
		}
		if c.help != "" {
			text = append(text, helpParagraphs(c.help)...)
		}
		if c.setup != nil {
			fs := flag.NewFlagSet(tag, flag.ContinueOnError)
			c.setup(fs)
			if lines := flagLines(fs, func(string) bool { return true }); len(lines) > 0 {
				text = append(text, "Flags:", literalLines(lines))
			}
		}
		commands = append(commands, manpage.Item{Tag: tag, Text: text})
	}
	gfs := flag.NewFlagSet("queenctl", flag.ContinueOnError)
	g := defaultGlobals()
	g.register(gfs)
	var globals []manpage.Item
	gfs.VisitAll(func(f *flag.Flag) {
		if f.Usage == "" || !isGlobal(f.Name) {
			return
		}
		tag := "--" + f.Name
		gfs.VisitAll(func(o *flag.Flag) {
			if o.Usage == "" && o.Value == f.Value {
				tag = "-" + o.Name + ", " + tag
			}
		})
		typ, usage := flag.UnquoteUsage(f)
		if typ != "" {
			tag += " " + strings.ToUpper(typ)
		}
		globals = append(globals, manpage.Item{Tag: tag, Text: []string{sentence(usage)}})
	})
	date := buildinfo.Date
	if d, _, ok := strings.Cut(date, "T"); ok {
		date = d
	}
	return &manpage.Page{
		Name: "queenctl", Section: "1", Manual: "User Commands",
		Source: "queen " + buildinfo.Version, Date: date,
		Summary:  "the operator CLI of the Queen message broker",
		Synopsis: []string{"queenctl COMMAND [ARGS] [flags]", "queenctl help [COMMAND]", "queenctl COMMAND --help"},
		Sections: []manpage.Section{
			{Title: "Description", Text: []string{
				"queenctl manages a queen broker over its HTTP API: queues, push, pop and ack, tail, consumer " +
					"groups, the dead-letter queue, messages, traces, streams, maintenance mode and metrics. Flags " +
					"may come anywhere among a command's arguments; the global flags are accepted by every command.",
			}},
			{Title: "Commands", Items: commands},
			{Title: "Global flags", Items: globals},
			{Title: "Connection settings and exit status", Text: []string{literal(rootFooter)}},
			{Title: "Environment", Items: []manpage.Item{
				{Tag: "QUEEN_SERVER, QUEEN_TOKEN", Text: []string{"The broker URL and bearer token, below --server and --token."}},
				{Tag: "QUEEN_CONTEXT", Text: []string{"The context of the config file to use, below --context."}},
				{Tag: "QUEENCTL_CONFIG", Text: []string{"The config file, below --config."}},
				{Tag: "NO_COLOR", Text: []string{"Set: never colour the output (as --no-color)."}},
			}},
			{Title: "Files", Items: []manpage.Item{
				{Tag: "~/.config/queenctl/config.yaml", Text: []string{"Contexts: named brokers and tokens (queenctl context)."}},
				{Tag: "/usr/share/bash-completion/completions/queenctl", Text: []string{
					"Shell completion, as `queenctl completion bash|zsh|fish` prints it; the packages install the " +
						"zsh and fish ones where those shells look too."}},
			}},
			{Title: "See also", Text: []string{"queen(8), queen-proxy(8), /usr/share/doc/queen/queenctl.md"}},
		},
	}
}

// sentence capitalises s and ends it with a full stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// helpParagraphs splits a command's help into page paragraphs: indented lines
// (examples) stay as written, the rest is text.
func helpParagraphs(help string) []string {
	var out []string
	var text, lit []string
	flush := func() {
		if len(text) > 0 {
			out = append(out, strings.Join(text, " "))
			text = nil
		}
		if len(lit) > 0 {
			out = append(out, strings.Join(lit, "\n"))
			lit = nil
		}
	}
	for _, l := range strings.Split(strings.TrimRight(help, "\n"), "\n") {
		switch {
		case strings.TrimSpace(l) == "":
			flush()
		case strings.HasPrefix(l, " "):
			if len(text) > 0 {
				flush()
			}
			lit = append(lit, " "+strings.TrimLeft(l, " "))
		default:
			if len(lit) > 0 {
				flush()
			}
			text = append(text, l)
		}
	}
	flush()
	return out
}

// literalLines turns help lines ("  --x  text\n") into one literal paragraph.
func literalLines(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = " " + strings.TrimPrefix(strings.TrimRight(l, "\n"), "  ")
	}
	return strings.Join(out, "\n")
}

// literal indents every line of text by one space, so the page keeps it as written.
func literal(text string) string {
	lines := strings.Split(strings.Trim(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = " " + l
	}
	return strings.Join(lines, "\n")
}
