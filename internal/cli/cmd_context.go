package cli

import (
	"context"
	"flag"
	"fmt"
)

// contextView is a context as listed (-o json/yaml): the token is never printed.
type contextView struct {
	Name     string `json:"name"`
	Server   string `json:"server"`
	HasToken bool   `json:"hasToken"`
	Current  bool   `json:"current"`
}

// contextCommand is `queenctl context`.
func contextCommand() *command {
	return &command{
		name: "context", aliases: []string{"contexts", "ctx"}, summary: "manage named brokers in the config file",
		help: "Contexts live in ~/.config/queenctl/config.yaml (--config, QUEENCTL_CONFIG):\n" +
			"a name, a server URL and an optional token. The current context is used when\n" +
			"neither flags nor QUEEN_SERVER/QUEEN_TOKEN say otherwise.",
		subs: []*command{
			contextListCommand(),
			contextCurrentCommand(),
			contextUseCommand(),
			contextSetCommand(),
			contextDeleteCommand(),
		},
	}
}

// contextListCommand is `queenctl context list`.
func contextListCommand() *command {
	return &command{
		name: "list", aliases: []string{"ls"}, summary: "list the contexts (tokens are not shown)",
		setup: func(*flag.FlagSet) runFunc {
			return func(_ context.Context, a *app, _ []string) error {
				f, err := a.ctxFile()
				if err != nil {
					return err
				}
				views := make([]contextView, len(f.Contexts))
				for i, c := range f.Contexts {
					views[i] = contextView{c.Name, c.Server, c.Token != "", c.Name == f.CurrentContext}
				}
				return a.show(views, func(t *tw) {
					rows := make([][]string, len(views))
					for i, v := range views {
						cur := ""
						if v.Current {
							cur = "*"
						}
						rows[i] = []string{cur, v.Name, orDash(v.Server), yesNo(v.HasToken)}
					}
					t.table([]string{"CURRENT", "NAME", "SERVER", "TOKEN"}, rows,
						fmt.Sprintf("No contexts in %s; add one with 'queenctl context set NAME --server URL'.", displayPath(f.path)))
				})
			}
		},
	}
}

// contextCurrentCommand is `queenctl context current`.
func contextCurrentCommand() *command {
	return &command{
		name: "current", summary: "print the current context's name (exit 3 when none)",
		setup: func(*flag.FlagSet) runFunc {
			return func(_ context.Context, a *app, _ []string) error {
				f, err := a.ctxFile()
				if err != nil {
					return err
				}
				if f.CurrentContext == "" {
					return &codeError{code: ExitNotFound, msg: "no current context in " + displayPath(f.path)}
				}
				return a.show(map[string]string{"current-context": f.CurrentContext}, func(t *tw) { t.line("%s", f.CurrentContext) })
			}
		},
	}
}

// contextUseCommand is `queenctl context use`.
func contextUseCommand() *command {
	return &command{
		name: "use", args: "NAME", minArgs: 1, maxArgs: 1, summary: "make a context the current one",
		setup: func(*flag.FlagSet) runFunc {
			return func(_ context.Context, a *app, args []string) error {
				f, err := a.ctxFile()
				if err != nil {
					return err
				}
				if f.find(args[0]) == nil {
					return &codeError{code: ExitNotFound, msg: fmt.Sprintf("no context %q in %s", args[0], displayPath(f.path))}
				}
				f.CurrentContext = args[0]
				if err := f.save(); err != nil {
					return err
				}
				return a.show(map[string]string{"current-context": args[0]}, func(t *tw) { t.line("Now using context %s.", args[0]) })
			}
		},
	}
}

// contextSetCommand is `queenctl context set`.
func contextSetCommand() *command {
	return &command{
		name: "set", args: "NAME", minArgs: 1, maxArgs: 1, summary: "add or update a context from --server and --token",
		help: "Stores the global --server and --token flags under NAME (only those given\n" +
			"change an existing context). The file is written with mode 0600.",
		setup: func(fs *flag.FlagSet) runFunc {
			use := fs.Bool("use", false, "also make it the current context")
			return func(_ context.Context, a *app, args []string) error {
				f, err := a.ctxFile()
				if err != nil {
					return err
				}
				if a.g.server == "" && f.find(args[0]) == nil {
					return usagef("a new context needs --server")
				}
				server := a.g.server
				if server != "" {
					server = normalizeServer(server)
				}
				f.set(ctxEntry{Name: args[0], Server: server, Token: a.g.token})
				if *use || len(f.Contexts) == 1 {
					f.CurrentContext = args[0]
				}
				if err := f.save(); err != nil {
					return err
				}
				c := f.find(args[0])
				v := contextView{c.Name, c.Server, c.Token != "", f.CurrentContext == c.Name}
				return a.show(v, func(t *tw) { t.line("Context %s: %s (saved in %s).", c.Name, c.Server, f.path) })
			}
		},
	}
}

// contextDeleteCommand is `queenctl context delete`.
func contextDeleteCommand() *command {
	return &command{
		name: "delete", aliases: []string{"rm"}, args: "NAME", minArgs: 1, maxArgs: 1, summary: "remove a context",
		setup: func(*flag.FlagSet) runFunc {
			return func(_ context.Context, a *app, args []string) error {
				f, err := a.ctxFile()
				if err != nil {
					return err
				}
				if !f.remove(args[0]) {
					return &codeError{code: ExitNotFound, msg: fmt.Sprintf("no context %q in %s", args[0], displayPath(f.path))}
				}
				if err := f.save(); err != nil {
					return err
				}
				return a.show(map[string]string{"deleted": args[0]}, func(t *tw) { t.line("Deleted context %s.", args[0]) })
			}
		},
	}
}
