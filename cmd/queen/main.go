// Command queen is the Queen message broker daemon: it serves the Queen HTTP API and
// keeps all state in PostgreSQL. Configuration comes from the environment (see
// docs/configuration.md); the flags select what to do, except the upstream broker's
// --port, --host and --dev, which set PORT, HOST and LOG_LEVEL=debug over it.
//
//	queen [serve]        run the broker (what the systemd unit starts)
//	queen schema         print the SQL schema applied at every start, as a psql script that
//	                     also records its version (also -print-schema)
//	queen -version       print version and build information
//	queen -check-config  validate the environment and print warnings; exit 78 if invalid
//	                     or if it holds unknown QUEEN_* variables (the daemon warns about those)
//	queen -print-config  print the effective configuration, secrets redacted
//	queen -h, --help     print the manual (NAME, SYNOPSIS, ENVIRONMENT, SIGNALS, FILES …);
//	                     -man prints it in roff, as the packages install it (queen(8))
//
// Exit status: 0 success, 1 runtime failure, 2 usage error, 78 configuration error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/queenmq/queen/internal/buildinfo"
	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/daemon"
	"github.com/queenmq/queen/internal/dashboard"
	"github.com/queenmq/queen/internal/schema"
	"github.com/queenmq/queen/internal/spool"
)

// Exit statuses. exitConfig is EX_CONFIG from sysexits.h: the unit file's
// RestartPreventExitStatus=78 keeps systemd from restarting a misconfigured broker.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitConfig  = 78
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// action is what one invocation does.
type action int

const (
	actionServe action = iota
	actionVersion
	actionCheckConfig
	actionPrintConfig
	actionPrintSchema
	actionConfigDocs
	actionEnvFile
	actionManPage
)

// realMain runs one invocation with injected arguments, environment and output, and
// returns the exit status.
func realMain(args, environ []string, stdout, stderr io.Writer) int {
	act, overrides, code := parseArgs(args, stdout, stderr)
	if code >= 0 {
		return code
	}
	// The flags that set a variable come first: the first occurrence of a name wins.
	environ = append(overrides, environ...)
	switch act {
	case actionVersion:
		fmt.Fprintln(stdout, buildinfo.String())
		return exitOK
	case actionConfigDocs:
		fmt.Fprint(stdout, config.Markdown())
		return exitOK
	case actionEnvFile:
		fmt.Fprint(stdout, config.EnvFile())
		return exitOK
	case actionPrintSchema:
		fmt.Fprint(stdout, schema.Script())
		return exitOK
	}

	cfg, err := config.Load(environ)
	if err != nil {
		fmt.Fprintln(stderr, err)
		for _, u := range config.FindUnknownVariables(environ) {
			fmt.Fprintln(stderr, "warning: config:", u)
		}
		return exitConfig
	}
	for _, o := range overrides {
		name, _, _ := strings.Cut(o, "=")
		cfg.SetByFlag(name)
	}
	switch act {
	case actionCheckConfig:
		return checkConfig(cfg, stdout, stderr)
	case actionPrintConfig:
		cfg.Print(stdout)
		for _, w := range cfg.Warnings() {
			fmt.Fprintln(stderr, "warning:", w)
		}
		for _, u := range cfg.UnknownVariables() {
			fmt.Fprintln(stderr, "warning: config:", u)
		}
		return exitOK
	}
	return runDaemon(cfg, stdout, stderr)
}

// checkConfig reports on a configuration that loaded. Unknown QUEEN_* variables do not
// stop the daemon, which only warns about them, but they fail the check with the
// status of a configuration error, so that CI and package scripts can be strict.
func checkConfig(cfg *config.Config, stdout, stderr io.Writer) int {
	problems := hostProblems(cfg)
	authWarnings, err := daemon.AuthCheck(cfg)
	if err != nil {
		problems = append(problems, err.Error())
	}
	unknown := cfg.UnknownVariables()
	if len(unknown) == 0 && len(problems) == 0 {
		fmt.Fprintln(stdout, "configuration OK")
	}
	for _, w := range append(cfg.Warnings(), authWarnings...) {
		fmt.Fprintln(stdout, "warning:", w)
	}
	for _, p := range problems {
		fmt.Fprintln(stderr, "config:", p)
	}
	if len(problems) > 0 {
		for _, u := range unknown {
			fmt.Fprintln(stderr, "config:", u)
		}
		return exitConfig
	}
	if len(unknown) == 0 {
		return exitOK
	}
	for _, u := range unknown {
		fmt.Fprintln(stderr, "config:", u)
	}
	fmt.Fprintf(stderr, "queen: every value is valid and the daemon would start, but it would warn about "+
		"the %d unknown QUEEN_* or OTEL_* variable(s) above and ignore them; fix or remove them\n", len(unknown))
	return exitConfig
}

// hostProblems are what a valid configuration names on this host that the daemon
// would still refuse at start: a WEBAPP_ROOT the dashboard cannot be served from (no
// such directory, or no index.html in it), read as the daemon reads it, and a
// FILE_BUFFER_DIR that is, or would have to be created under, something other than a
// directory.
func hostProblems(cfg *config.Config) []string {
	var out []string
	if err := spool.CheckDir(cfg.FileBufferDir); err != nil {
		out = append(out, fmt.Sprintf("FILE_BUFFER_DIR=%q: %v", cfg.FileBufferDir, err))
	}
	if cfg.DashboardEnabled && cfg.WebappRoot != "" {
		if _, err := dashboard.New(dashboard.Options{Dir: cfg.WebappRoot}); err != nil {
			out = append(out, fmt.Sprintf("WEBAPP_ROOT=%q: %v", cfg.WebappRoot, err))
		}
	}
	return out
}

// runDaemon runs the broker until SIGINT or SIGTERM, then lets it drain. A repeat of
// the signal within repeatGrace is ignored (Ctrl-C in a terminal often reaches the
// broker twice: from the terminal and forwarded by a wrapper script such as make run);
// a later one exits at once without draining. SIGHUP, whose default action would kill
// the process, asks the broker to reload (internal/daemon/reload.go).
func runDaemon(cfg *config.Config, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	hups := make(chan os.Signal, 1) // a HUP that arrives during a reload is kept, more are merged
	signal.Notify(hups, syscall.SIGHUP)
	defer signal.Stop(hups)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		cancel(fmt.Errorf("received %v", sig))
		first := time.Now()
		for sig := range sigs {
			if time.Since(first) < repeatGrace {
				continue
			}
			fmt.Fprintf(stderr, "queen: second %v: exiting without draining\n", sig)
			os.Exit(exitFailure)
		}
	}()

	if err := serve(ctx, cfg, stdout, hups); err != nil {
		fmt.Fprintln(stderr, "queen:", err)
		if isConfigError(err) {
			return exitConfig
		}
		return exitFailure
	}
	return exitOK
}

// repeatGrace is how long after the first stop signal a repeat is taken as the same
// request rather than an operator insisting.
const repeatGrace = 2 * time.Second

// parseArgs picks the action and the variables that the upstream broker's flags set
// (--port, --host, --dev, as NAME=value). It returns a status >= 0 when the invocation
// is already over (help, or a usage error it has reported), and -1 to go on. -h and
// --help print the manual to stdout; a usage error prints a short usage to stderr.
func parseArgs(args []string, stdout, stderr io.Writer) (action, []string, int) {
	fs, chosen := newFlagSet(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, manPage(fs).Text())
			return 0, nil, exitOK
		}
		usage(stderr)
		return 0, nil, exitUsage
	}
	var overrides []string
	fs.Visit(func(f *flag.Flag) {
		if name := flagVariable(f.Name); name != "" {
			v := f.Value.String()
			if f.Name == "dev" {
				if v != "true" {
					return
				}
				v = "debug"
			}
			overrides = append(overrides, name+"="+v)
		}
	})
	act, code := pickAction(fs, chosen, stdout, stderr)
	return act, overrides, code
}

// flagVariable is the variable that a flag of the upstream broker sets, "" for the
// other flags. --dev sets LOG_LEVEL=debug.
func flagVariable(flagName string) string {
	switch flagName {
	case "port":
		return "PORT"
	case "host":
		return "HOST"
	case "dev":
		return "LOG_LEVEL"
	}
	return ""
}

// pickAction is the action of a parsed command line.
func pickAction(fs *flag.FlagSet, chosen map[action]*bool, stdout, stderr io.Writer) (action, int) {
	var acts []action
	for a, set := range chosen {
		if *set {
			acts = append(acts, a)
		}
	}
	switch rest := fs.Args(); {
	case len(rest) == 0:
	case len(rest) == 1 && rest[0] == "serve":
		acts = append(acts, actionServe)
	case len(rest) == 1 && rest[0] == "schema":
		acts = append(acts, actionPrintSchema)
	default:
		fmt.Fprintf(stderr, "queen: unexpected arguments %q\n", rest)
		usage(stderr)
		return 0, exitUsage
	}
	switch len(acts) {
	case 0:
		return actionServe, -1
	case 1:
		if acts[0] == actionManPage {
			fmt.Fprint(stdout, manPage(fs).Roff())
			return 0, exitOK
		}
		return acts[0], -1
	}
	fmt.Fprintln(stderr, "queen: give one command or flag at a time")
	usage(stderr)
	return 0, exitUsage
}

// newFlagSet is queen's command line: the flags, and which action each selects.
func newFlagSet(stderr io.Writer) (*flag.FlagSet, map[action]*bool) {
	fs := flag.NewFlagSet("queen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	addVariableFlags(fs)
	return fs, map[action]*bool{
		actionVersion:     fs.Bool("version", false, "print version and build information"),
		actionCheckConfig: fs.Bool("check-config", false, "validate the configuration"),
		actionPrintConfig: fs.Bool("print-config", false, "print the effective configuration"),
		actionPrintSchema: fs.Bool("print-schema", false, "print the SQL schema"),
		actionConfigDocs:  fs.Bool("config-docs", false, "print docs/configuration.md"),
		actionEnvFile:     fs.Bool("env-file", false, "print etc/queen.env"),
		actionManPage:     fs.Bool("man", false, "print the queen(8) manual page in roff"),
	}
}

// addVariableFlags defines the upstream broker's flags on fs; parseArgs turns each one
// given into a variable (flagVariable).
func addVariableFlags(fs *flag.FlagSet) {
	fs.String("port", "", "HTTP port: sets `PORT`, over the environment")
	fs.String("host", "", "HTTP bind address: sets `HOST`, over the environment")
	fs.Bool("dev", false, "debug logging: sets `LOG_LEVEL=debug`, over the environment")
}

// usage prints the short usage that follows a usage error.
func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: queen [serve | schema]
       queen -version | -check-config | -print-config | -print-schema
Run 'queen --help' for the manual.
`)
}
