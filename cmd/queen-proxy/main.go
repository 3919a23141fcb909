// Command queen-proxy is the multi-tenant gateway in front of 1–3 queen brokers:
// tenants, API keys, rate limits, quotas and metering, with its own PostgreSQL
// database (schema queen_proxy). Configuration comes from the environment only.
//
//	queen-proxy [serve]        run the gateway
//	queen-proxy -version       print version and build information
//	queen-proxy -check-config  validate the environment; exit 78 naming each bad variable
//	queen-proxy -print-config  print the effective configuration, secrets redacted
//	queen-proxy -print-schema  print the SQL schema applied at every start
//	queen-proxy -h, -help      print the usage: commands and flags (not -man)
//	queen-proxy -man           print the queen-proxy(8) manual page in roff (the packages install it)
//	queen-proxy -config-docs   print docs/proxy-configuration.md (not in the usage either)
//	queen-proxy tenant|key|user|usage|cell ...   manage tenants, keys, users and
//	                           cells and read usage on the proxy database directly
//	                           (the server may be down); "queen-proxy help" lists them
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
	"runtime"
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
	os.Exit(realMain(os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr))
}

// realMain runs one invocation with injected arguments, environment and output.
func realMain(args, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "tenant", "key", "user", "usage", "cell":
			return runManage(args, environ, stdin, stdout, stderr)
		case "help":
			fmt.Fprint(stdout, manageUsage)
			return exitOK
		}
	}
	fs := flag.NewFlagSet("queen-proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.Bool("version", false, "print version and build information")
	check := fs.Bool("check-config", false, "validate the configuration")
	printCfg := fs.Bool("print-config", false, "print the effective configuration")
	printSchema := fs.Bool("print-schema", false, "print the SQL schema")
	man := fs.Bool("man", false, "print the queen-proxy(8) manual page in roff")
	configDocs := fs.Bool("config-docs", false, "print docs/proxy-configuration.md")
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout, fs)
			return exitOK
		}
		printUsage(stderr, fs)
		return exitUsage
	}
	if rest := fs.Args(); len(rest) > 1 || (len(rest) == 1 && rest[0] != "serve") {
		fmt.Fprintf(stderr, "queen-proxy: unexpected arguments %q\n\n", rest)
		printUsage(stderr, fs)
		return exitUsage
	}
	switch {
	case *version:
		// buildinfo.String's line, for this binary.
		fmt.Fprintf(stdout, "queen-proxy %s (commit %s, built %s, %s %s/%s)\n", buildinfo.Version, buildinfo.Commit,
			buildinfo.Date, buildinfo.GoVersion(), runtime.GOOS, runtime.GOARCH)
		return exitOK
	case *printSchema:
		fmt.Fprint(stdout, schema.SQL())
		return exitOK
	case *man:
		fmt.Fprint(stdout, manPage(fs).Roff())
		return exitOK
	case *configDocs:
		fmt.Fprint(stdout, config.Markdown())
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
	hups := make(chan os.Signal, 1) // SIGHUP would kill the process; the proxy logs it instead
	signal.Notify(hups, syscall.SIGHUP)
	defer signal.Stop(hups)
	if err := daemon.Run(ctx, cfg, daemon.Options{Stdout: stdout, Reload: hups}); err != nil {
		fmt.Fprintln(stderr, "queen-proxy:", err)
		if config.IsConfigError(err) {
			return exitConfig
		}
		return exitFailure
	}
	return exitOK
}

// hiddenFlags are left out of the usage and the manual: -man is for the package
// build, which renders the manual page with it, and -config-docs renders
// docs/proxy-configuration.md.
var hiddenFlags = map[string]bool{"man": true, "config-docs": true}

// printUsage writes the usage of -h and --help (to stdout) and of a usage error (to
// stderr): the commands, then the flags of fs but the hidden ones.
func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `Usage: queen-proxy [serve]
       queen-proxy -version | -check-config | -print-config | -print-schema
       queen-proxy tenant|key|user|usage|cell ...
       queen-proxy help

Commands:
  serve       run the gateway (the default)
  tenant, key, user, usage, cell
              manage tenants, keys, users and cells, and read usage, on the
              proxy database directly (the server may be down)
  help        list the management commands and their flags

Flags:
`)
	type row struct{ name, usage string }
	rows := []row{{"-h, -help", "print this usage"}}
	width := len(rows[0].name)
	fs.VisitAll(func(f *flag.Flag) {
		if !hiddenFlags[f.Name] {
			rows = append(rows, row{"-" + f.Name, f.Usage})
			width = max(width, len(f.Name)+1)
		}
	})
	for _, r := range rows {
		fmt.Fprintf(w, "  %-*s  %s\n", width, r.name, r.usage)
	}
	fmt.Fprint(w, `
Configuration comes from environment variables only; "man queen-proxy" lists
every one.
`)
}
