// Command queen-proxy is the multi-tenant gateway in front of 1–3 queen brokers:
// tenants, API keys, rate limits, quotas and metering, with its own PostgreSQL
// database (schema queen_proxy). Configuration comes from the environment only.
//
//	queen-proxy [serve]        run the gateway
//	queen-proxy -version       print version and build information
//	queen-proxy -check-config  validate the environment; exit 78 naming each bad variable
//	queen-proxy -print-config  print the effective configuration, secrets redacted
//	queen-proxy -print-schema  print the SQL schema applied at every start
//
// Exit status: 0 success, 1 runtime failure, 2 usage error, 78 configuration error.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/queenmq/queen/internal/buildinfo"
	"github.com/queenmq/queen/internal/proxy/config"
	"github.com/queenmq/queen/internal/proxy/daemon"
	"github.com/queenmq/queen/internal/proxy/schema"
)

// Exit statuses; 78 is EX_CONFIG, which the unit's RestartPreventExitStatus= names.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitConfig  = 78
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// realMain runs one invocation with injected arguments, environment and output.
func realMain(args, environ []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("queen-proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.Bool("version", false, "print version and build information")
	check := fs.Bool("check-config", false, "validate the configuration")
	printCfg := fs.Bool("print-config", false, "print the effective configuration")
	printSchema := fs.Bool("print-schema", false, "print the SQL schema")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if rest := fs.Args(); len(rest) > 1 || (len(rest) == 1 && rest[0] != "serve") {
		fmt.Fprintf(stderr, "queen-proxy: unexpected arguments %q\n", rest)
		return exitUsage
	}
	switch {
	case *version:
		fmt.Fprintln(stdout, buildinfo.String())
		return exitOK
	case *printSchema:
		fmt.Fprint(stdout, schema.SQL())
		return exitOK
	}
	cfg, err := config.Load(environ)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitConfig
	}
	switch {
	case *check:
		fmt.Fprintln(stdout, "configuration OK")
		return exitOK
	case *printCfg:
		cfg.Print(stdout)
		return exitOK
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := daemon.Run(ctx, cfg, daemon.Options{Stdout: stdout}); err != nil {
		fmt.Fprintln(stderr, "queen-proxy:", err)
		if config.IsConfigError(err) {
			return exitConfig
		}
		return exitFailure
	}
	return exitOK
}
