// Command queen is the Queen message broker daemon: it serves the Queen HTTP API and
// keeps all state in PostgreSQL. Configuration comes from the environment only (see
// docs/configuration.md); the flags select what to do, not how.
//
//	queen [serve]        run the broker (what the systemd unit starts)
//	queen schema         print the SQL schema applied at every start (also -print-schema)
//	queen -version       print version and build information
//	queen -check-config  validate the environment and print warnings; exit 78 if invalid
//	                     or if it holds unknown QUEEN_* variables (the daemon warns about those)
//	queen -print-config  print the effective configuration, secrets redacted
//	queen -h, --help     print the manual (NAME, SYNOPSIS, ENVIRONMENT, SIGNALS, FILES …)
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
	actionEnvFile
)

// realMain runs one invocation with injected arguments, environment and output, and
// returns the exit status.
func realMain(args, environ []string, stdout, stderr io.Writer) int {
	act, code := parseArgs(args, stdout, stderr)
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
	case actionEnvFile:
		fmt.Fprint(stdout, config.EnvFile())
		return exitOK
	case actionPrintSchema:
		fmt.Fprint(stdout, schema.SQL())
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
	unknown := cfg.UnknownVariables()
	if len(unknown) == 0 {
		fmt.Fprintln(stdout, "configuration OK")
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintln(stdout, "warning:", w)
	}
	if len(unknown) == 0 {
		return exitOK
	}
	for _, u := range unknown {
		fmt.Fprintln(stderr, "config:", u)
	}
	fmt.Fprintf(stderr, "queen: every value is valid and the daemon would start, but it would warn about "+
		"the %d unknown QUEEN_* variable(s) above and ignore them; fix or remove them\n", len(unknown))
	return exitConfig
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

// parseArgs picks the action. It returns a status >= 0 when the invocation is already
// over (help, or a usage error it has reported), and -1 to go on. -h and --help print
// the manual to stdout; a usage error prints a short usage to stderr.
func parseArgs(args []string, stdout, stderr io.Writer) (action, int) {
	fs := flag.NewFlagSet("queen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	chosen := map[action]*bool{
		actionVersion:     fs.Bool("version", false, "print version and build information"),
		actionCheckConfig: fs.Bool("check-config", false, "validate the configuration"),
		actionPrintConfig: fs.Bool("print-config", false, "print the effective configuration"),
		actionPrintSchema: fs.Bool("print-schema", false, "print the SQL schema"),
		actionConfigDocs:  fs.Bool("config-docs", false, "print docs/configuration.md"),
		actionEnvFile:     fs.Bool("env-file", false, "print etc/queen.env"),
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, manual)
			return 0, exitOK
		}
		usage(stderr)
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

// usage prints the short usage that follows a usage error.
func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: queen [serve | schema]
       queen -version | -check-config | -print-config | -print-schema
Run 'queen --help' for the manual.
`)
}

// manual is the man-style text of -h and --help. -config-docs and -env-file are build
// helpers (docs/configuration.md, etc/queen.env) and are left out on purpose.
const manual = `QUEEN(8)                     System Manager's Manual                     QUEEN(8)

NAME
       queen - the Queen message broker daemon (HTTP API, all state in PostgreSQL)

SYNOPSIS
       queen [serve]
       queen schema
       queen -version | -check-config | -print-config | -print-schema
       queen -h | --help

DESCRIPTION
       queen serves the Queen HTTP API v1 (port 6632 by default) and keeps every
       queue, partition, message, cursor and lease in one PostgreSQL database. Any
       number of queen processes may serve the same database.

       All configuration comes from environment variables (under systemd: the file
       /etc/queen/queen.env); the flags choose what to do, not how. At start-up
       queen logs its version and one "effective configuration" line with every
       setting, its value and its source (secrets redacted), waits for PostgreSQL,
       applies the schema (idempotent, under an advisory lock) and serves.

COMMANDS
       serve  Run the broker. The default; what queen.service starts.

       schema Print the SQL schema applied at every start, and exit.

OPTIONS
       -version
              Print version and build information, and exit.

       -check-config
              Validate the environment, print "configuration OK" and any warnings;
              exit 78 naming every bad variable otherwise. Unknown QUEEN_*
              variables fail the check too (status 78): the daemon would start,
              but warn about each one. Nothing is started.

       -print-config
              Print the effective configuration, sorted, as NAME=value  # source,
              secrets redacted, and warnings on stderr; exit 78 if invalid.

       -print-schema
              Same as the schema command.

       -h, --help
              Print this manual.

ENVIRONMENT
       Settings: every variable, its default and its meaning is in
       /usr/share/doc/queen/configuration.md; the main ones are PG_HOST, PG_PORT,
       PG_USER, PG_PASSWORD, PG_DB, HOST, PORT, LOG_LEVEL and
       QUEEN_SHUTDOWN_TIMEOUT. Booleans accept true/false, 1/0, yes/no, on/off;
       anything else is a configuration error. An unknown QUEEN_* variable (a
       typo?) is logged as a warning with a "did you mean" hint, and ignored.
       The variables Kubernetes sets for a Service named queen (QUEEN_PORT,
       QUEEN_SERVICE_HOST, QUEEN_PORT_6632_TCP_ADDR ...) are recognised and
       ignored without a word.

       Set by systemd, read by queen:
       LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES
              Socket activation (queen.socket): queen serves the passed sockets
              and ignores HOST and PORT. Without them it binds HOST:PORT itself.
       NOTIFY_SOCKET
              Type=notify: STATUS= while waiting for PostgreSQL (with
              EXTEND_TIMEOUT_USEC=), READY=1 once the schema is applied,
              STOPPING=1 when the drain begins.
       WATCHDOG_USEC, WATCHDOG_PID
              WatchdogSec=: a keep-alive every third of the interval, sent only
              while the HTTP accept loop, the handler chain and the broker answer.
              A PostgreSQL outage does not stop the keep-alives.
       CREDENTIALS_DIRECTORY
              LoadCredential=: PG_PASSWORD, JWT_SECRET and QUEEN_ENCRYPTION_KEY
              are read from files of those names first.

SIGNALS
       SIGTERM, SIGINT
              Drain: report "not ready", stop accepting, answer parked
              long-polls, finish in-flight requests within QUEEN_SHUTDOWN_TIMEOUT
              (20 s; keep it below the unit's TimeoutStopSec=30s), flush the
              spool, close the database pool, exit 0. The same signal again
              within 2 s is ignored; a later one exits at once with status 1.
       SIGHUP Reload (systemctl reload queen): re-read the env files named by
              QUEEN_ENV_FILES (the units set it), apply a changed LOG_LEVEL at
              once, and log every other changed setting as needing a restart,
              or why nothing was reloaded. The broker keeps serving throughout;
              an invalid file is reported and changes nothing.
       SIGABRT
              Sent by systemd when the watchdog expires: the Go runtime writes
              every goroutine's stack to the journal and exits with status 2;
              Restart=on-failure starts a new process.

FILES
       /etc/queen/queen.env
              Settings of queen.service and every replica (a conffile).
       /etc/queen/queen@N.env
              Extra settings of replica N (queen@N.service).
       /etc/queen/credentials/
              Root-only secrets for LoadCredential= drop-ins.
       /var/lib/queen/
              State: the spool (spool/, N/spool/ for replicas) and database dumps
              (backups/).
       /usr/lib/systemd/system/queen.socket, queen.service
              The service and its socket (port 6632).
       /usr/lib/systemd/system/queen@.socket, queen@.service, queen.target
              Replicas on one host sharing port 6632 (ReusePort=).
       /usr/lib/systemd/system/queen-backup.service, queen-backup.timer
              Daily pg_dump of queen's schema into /var/lib/queen/backups.

EXIT STATUS
       0      Success, including a drained stop.
       1      Run-time failure (listen, database, schema), or a forced stop.
       2      Usage error.
       78     Configuration error (EX_CONFIG). The units set
              RestartPreventExitStatus=78: a typo is reported once, not restarted
              in a loop.

EXAMPLES
       Check a changed env file exactly as systemd parses it, then restart:
              systemd-run --pipe --wait \
                -p EnvironmentFile=/etc/queen/queen.env /usr/bin/queen -check-config
              systemctl restart queen

       Status line, readiness and logs:
              systemctl show -p StatusText queen.service
              journalctl -u queen.service

SEE ALSO
       systemctl(1), journalctl(1), systemd.socket(5), systemd.service(5),
       pg_restore(1), /usr/share/doc/queen/deploy.md, systemd.md, backup.md,
       upgrades.md, configuration.md
`
