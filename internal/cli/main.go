package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/buildinfo"
	"github.com/queenmq/queen/internal/client"
)

// Main runs one queenctl invocation: args without the program name, the process
// environment as NAME=value strings, and the three standard streams. It returns the
// exit status (the Exit constants). ctx ends the command early: cmd/queenctl cancels
// it on SIGINT and SIGTERM.
func Main(ctx context.Context, args, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 1 && args[0] == ManFlag {
		writeManPage(stdout)
		return ExitOK
	}
	a := &app{
		stdin:  stdin,
		stdout: stdout,
		stderr: stderr,
		env:    envMap(environ),
		g:      defaultGlobals(),
	}
	return a.dispatch(ctx, args)
}

// app is the state of one invocation.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	env            map[string]string
	g              globals

	// path is the command being run ("queue get"), for messages.
	path string
	// file is the config file, loaded on first use.
	file *ctxFile
	// target and c are set up on first use by [app.client].
	target *target
	c      *client.Client
	hc     *http.Client
}

// globals are the flags every command accepts.
type globals struct {
	server, token, context, config string
	output                         string
	noColor                        bool
	progress                       bool
	timeout                        time.Duration
}

// defaultGlobals are the globals before any flag is parsed.
func defaultGlobals() globals {
	return globals{output: formatTable, timeout: 30 * time.Second}
}

// register adds the global flags to fs, bound to g. The current values are the
// defaults, so that a flag given before the subcommand survives its parsing.
func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.server, "server", g.server, "broker `URL` (env QUEEN_SERVER; default "+DefaultServer+")")
	fs.StringVar(&g.token, "token", g.token, "bearer `TOKEN` (env QUEEN_TOKEN)")
	fs.StringVar(&g.context, "context", g.context, "`NAME` of the config file's context to use (env QUEEN_CONTEXT)")
	fs.StringVar(&g.config, "config", g.config, "config `FILE` (env QUEENCTL_CONFIG; default ~/.config/queenctl/config.yaml)")
	fs.StringVar(&g.output, "output", g.output, "output `FORMAT`: table, json or yaml")
	fs.Var(fs.Lookup("output").Value, "o", "")
	fs.BoolVar(&g.noColor, "no-color", g.noColor, "never colour the output (env NO_COLOR)")
	fs.BoolVar(&g.progress, "progress", g.progress, "show progress on stderr even when it is not a terminal")
	fs.DurationVar(&g.timeout, "timeout", g.timeout, "timeout of each request (0: none; long polls have their own)")
}

// isGlobal reports whether name is one of the global flags.
func isGlobal(name string) bool {
	switch name {
	case "server", "token", "context", "config", "output", "o", "no-color", "progress", "timeout":
		return true
	}
	return false
}

// client returns the broker client, resolving the target on first use.
func (a *app) client() (*client.Client, error) {
	if a.c != nil {
		return a.c, nil
	}
	t, err := a.resolve()
	if err != nil {
		return nil, err
	}
	a.c, a.hc = newClient(t, a.g.timeout)
	return a.c, nil
}

// resolve loads the config file and resolves the target once.
func (a *app) resolve() (*target, error) {
	if a.target != nil {
		return a.target, nil
	}
	f, err := a.ctxFile()
	if err != nil {
		return nil, err
	}
	if a.target, err = resolveTarget(&a.g, a.env, f); err != nil {
		return nil, err
	}
	return a.target, nil
}

// ctxFile loads the config file once.
func (a *app) ctxFile() (*ctxFile, error) {
	if a.file == nil {
		f, err := loadCtxFile(configPath(a.g.config, a.env))
		if err != nil {
			return nil, err
		}
		a.file = f
	}
	return a.file, nil
}

// run executes a leaf command and turns its error into the exit status and the
// error line on stderr.
func (a *app) run(ctx context.Context, run runFunc, args []string) int {
	if err := a.checkGlobals(); err != nil {
		return a.report(ctx, err)
	}
	err := run(ctx, a, args)
	if a.hc != nil {
		a.hc.CloseIdleConnections()
	}
	return a.report(ctx, err)
}

// report prints err (if any) as "queenctl <command>: <what failed>: <cause>" and
// returns the exit status.
func (a *app) report(ctx context.Context, err error) int {
	code := exitCode(ctx, err)
	if err == nil {
		return code
	}
	msg := describe(err, a.target)
	if code == ExitInterrupted {
		msg = "interrupted"
	}
	cmd := strings.TrimSpace("queenctl " + a.path)
	fmt.Fprintf(a.stderr, "%s: %s\n", cmd, msg)
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", cmd)
	}
	return code
}

// checkGlobals validates the global flag values.
func (a *app) checkGlobals() error {
	switch a.g.output {
	case formatTable, formatJSON, formatYAML:
	default:
		return usagef("--output %q: want table, json or yaml", a.g.output)
	}
	if a.g.timeout < 0 {
		return usagef("--timeout %s: must not be negative", a.g.timeout)
	}
	return nil
}

// envMap turns NAME=value strings into a map (the last one wins).
func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// userAgent is the User-Agent of every request.
func userAgent() string { return "queenctl/" + buildinfo.Version }
