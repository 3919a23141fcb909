// Command queen is the Queen message broker daemon: it serves the Queen HTTP API and
// keeps all state in PostgreSQL. Configuration comes from the environment only (see
// docs/configuration.md); the flags select what to do, not how.
//
//	queen [serve]        run the broker (what the systemd unit starts)
//	queen schema         print the SQL schema applied at every start (also -print-schema)
//	queen -version       print version and build information
//	queen -check-config  validate the environment and print warnings; exit 78 if invalid
//	queen -print-config  print the effective configuration, secrets redacted
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
	"syscall"
	"time"

	"github.com/queenmq/queen/internal/buildinfo"
	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/schema"
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
)

// realMain runs one invocation with injected arguments, environment and output, and
// returns the exit status.
func realMain(args, environ []string, stdout, stderr io.Writer) int {
	act, code := parseArgs(args, stderr)
	if code >= 0 {
		return code
	}
	switch act {
	case actionVersion:
		fmt.Fprintln(stdout, buildinfo.String())
		return exitOK
	case actionConfigDocs:
		fmt.Fprint(stdout, config.Markdown())
		return exitOK
	case actionPrintSchema:
		fmt.Fprint(stdout, schema.SQL())
		return exitOK
	}

	cfg, err := config.Load(environ)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitConfig
	}
	switch act {
	case actionCheckConfig:
		fmt.Fprintln(stdout, "configuration OK")
		for _, w := range cfg.Warnings() {
			fmt.Fprintln(stdout, "warning:", w)
		}
		return exitOK
	case actionPrintConfig:
		cfg.Print(stdout)
		for _, w := range cfg.Warnings() {
			fmt.Fprintln(stderr, "warning:", w)
		}
		return exitOK
	}
	return runDaemon(cfg, stdout, stderr)
}

// runDaemon runs the broker until SIGINT or SIGTERM, then lets it drain. A repeat of
// the signal within repeatGrace is ignored (Ctrl-C in a terminal often reaches the
// broker twice: from the terminal and forwarded by a wrapper script such as make run);
// a later one exits at once without draining.
func runDaemon(cfg *config.Config, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
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

	if err := serve(ctx, cfg, stdout); err != nil {
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

// parseArgs picks the action. It returns a status >= 0 when the invocation is already
// over (help, or a usage error it has reported), and -1 to go on.
func parseArgs(args []string, stderr io.Writer) (action, int) {
	fs := flag.NewFlagSet("queen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { usage(stderr) }
	chosen := map[action]*bool{
		actionVersion:     fs.Bool("version", false, "print version and build information"),
		actionCheckConfig: fs.Bool("check-config", false, "validate the configuration"),
		actionPrintConfig: fs.Bool("print-config", false, "print the effective configuration"),
		actionPrintSchema: fs.Bool("print-schema", false, "print the SQL schema"),
		actionConfigDocs:  fs.Bool("config-docs", false, "print docs/configuration.md"),
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, exitOK
		}
		return 0, exitUsage
	}

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
		return acts[0], -1
	}
	fmt.Fprintln(stderr, "queen: give one command or flag at a time")
	usage(stderr)
	return 0, exitUsage
}

// usage prints the help text. -config-docs is for the docs test and `make verify`,
// and is left out on purpose.
func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: queen [flag] [serve | schema]

Runs the Queen message broker. All configuration comes from environment variables;
see docs/configuration.md.

Commands:
  serve           run the broker (the default)
  schema          print the SQL schema applied at every start, and exit

Flags:
  -version        print version and build information, and exit
  -check-config   validate the configuration and print warnings; exit 78 if invalid
  -print-config   print the effective configuration (secrets redacted); exit 78 if invalid
  -print-schema   same as the schema command

Exit status: 0 success, 1 runtime failure, 2 usage error, 78 configuration error.
`)
}
