package main

import (
	"flag"
	"strings"

	"github.com/queenmq/queen/internal/buildinfo"
	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/manpage"
)

// isHidden reports the build helpers, left out of the manual on purpose:
// -config-docs and -env-file render docs/configuration.md and etc/queen.env, -man
// the roff page.
func isHidden(name string) bool {
	switch name {
	case "config-docs", "env-file", "man":
		return true
	}
	return false
}

// optionDocs are the OPTIONS texts of the visible flags; TestManPageCoversEveryFlag
// keeps it and the flag set in step.
func optionDocs(name string) []string {
	return map[string][]string{
		"version": {"Print version and build information, and exit."},
		"check-config": {"Validate the environment, print \"configuration OK\" and any warnings; exit 78 " +
			"naming every bad variable otherwise, a WEBAPP_ROOT that is not a directory included. Unknown " +
			"QUEEN_* variables fail the check too (status 78): the daemon would start, but warn about each " +
			"one. Nothing is started."},
		"print-config": {"Print the effective configuration, sorted, as NAME=value  # source, secrets " +
			"redacted, and warnings on stderr; exit 78 if invalid."},
		"print-schema": {"Same as the schema command."},
		"port":         {"Serve on this port: sets PORT, over the environment (as the upstream broker's flag)."},
		"host":         {"Bind to this address: sets HOST, over the environment (as the upstream broker's flag)."},
		"dev":          {"Log at debug level: sets LOG_LEVEL=debug, over the environment (as the upstream broker's flag)."},
	}[name]
}

// manPage is queen(8): the text of -h and --help, and the roff page of -man that the
// packages install. Its options come from fs, its environment from the settings
// table.
func manPage(fs *flag.FlagSet) *manpage.Page {
	options := manpage.FlagItems(fs, func(name string) bool { return !isHidden(name) }, optionDocs)
	options = append(options, manpage.Item{Tag: "-h, --help", Text: []string{"Print this manual."}})
	return &manpage.Page{
		Name: "queen", Section: "8", Manual: "System Manager's Manual",
		Source: "queen " + buildinfo.Version, Date: buildDate(),
		Summary: "the Queen message broker daemon (HTTP API, all state in PostgreSQL)",
		Synopsis: []string{"queen [--port N] [--host H] [--dev] [serve]", "queen schema",
			"queen -version | -check-config | -print-config | -print-schema", "queen -h | --help"},
		Sections: []manpage.Section{
			{Title: "Description", Text: []string{
				"queen serves the Queen HTTP API v1 (port 6632 by default) and keeps every queue, partition, " +
					"message, cursor and lease in one PostgreSQL database. One to three queen processes (replicas) " +
					"serve one database; past that, more databases (cells behind queen-proxy).",
				"All configuration comes from environment variables (under systemd: the file " +
					"/etc/queen/queen.env); the flags choose what to do, except --port, --host and --dev, which " +
					"set PORT, HOST and LOG_LEVEL=debug over it, as the upstream broker's flags. At start-up queen logs its " +
					"version and one \"effective configuration\" line with every setting, its value and its source " +
					"(secrets redacted), waits for PostgreSQL, applies the schema (idempotent, under an advisory " +
					"lock; with QUEEN_APPLY_SCHEMA=0 only checks it is there) and serves.",
			}},
			{Title: "Commands", Items: []manpage.Item{
				{Tag: "serve", Text: []string{"Run the broker. The default; what queen.service starts."}},
				{Tag: "schema", Text: []string{"Print the SQL schema applied at every start, as a psql script " +
					"that also records its version, and exit. With QUEEN_APPLY_SCHEMA=0 the broker applies no " +
					"DDL: a DBA applies this output as the schema's owner (queen schema | psql -v ON_ERROR_STOP=1)."}},
			}},
			{Title: "Options", Items: options},
			{Title: "Environment", Text: []string{
				"Booleans accept true/false, 1/0, yes/no, on/off; anything else is a configuration error. An " +
					"unknown QUEEN_* variable (a typo?) is logged as a warning with a \"did you mean\" hint, and " +
					"ignored. The variables Kubernetes sets for a Service named queen (QUEEN_PORT, " +
					"QUEEN_SERVICE_HOST, QUEEN_PORT_6632_TCP_ADDR ...) are recognised and ignored without a word. " +
					"The settings, as /usr/share/doc/queen/configuration.md lists them:",
			}, Items: append(settingItems(), systemdItems()...)},
			{Title: "Signals", Items: []manpage.Item{
				{Tag: "SIGTERM, SIGINT", Text: []string{"Drain: report \"not ready\", stop accepting, answer parked " +
					"long-polls, finish in-flight requests within QUEEN_SHUTDOWN_TIMEOUT (20 s; keep it below the " +
					"unit's TimeoutStopSec=30s), flush the spool, close the database pool, exit 0. The same signal " +
					"again within 2 s is ignored; a later one exits at once with status 1."}},
				{Tag: "SIGHUP", Text: []string{"Reload (systemctl reload queen): re-read the env files named by " +
					"QUEEN_ENV_FILES (the units set it), apply a changed LOG_LEVEL at once, and log every other " +
					"changed setting as needing a restart, or why nothing was reloaded. The broker keeps serving " +
					"throughout; an invalid file is reported and changes nothing."}},
				{Tag: "SIGABRT", Text: []string{"Sent by systemd when the watchdog expires: the Go runtime writes " +
					"every goroutine's stack to the journal and exits with status 2; Restart=on-failure starts a " +
					"new process."}},
			}},
			{Title: "Files", Items: []manpage.Item{
				{Tag: "/etc/queen/queen.env", Text: []string{"Settings of queen.service and every replica (a conffile)."}},
				{Tag: "/etc/queen/queen@N.env", Text: []string{"Extra settings of replica N (queen@N.service)."}},
				{Tag: "/etc/queen/credentials/", Text: []string{"Root-only secrets for LoadCredential= drop-ins."}},
				{Tag: "/var/lib/queen/", Text: []string{"State: the spool (spool/, N/spool/ for replicas) and " +
					"database dumps (backups/)."}},
				{Tag: "/usr/lib/systemd/system/queen.socket, queen.service", Text: []string{"The service and its " +
					"socket (port 6632)."}},
				{Tag: "/usr/lib/systemd/system/queen@.socket, queen@.service, queen.target", Text: []string{
					"Replicas on one host sharing port 6632 (ReusePort=)."}},
				{Tag: "/usr/lib/systemd/system/queen-backup.service, queen-backup.timer", Text: []string{
					"Daily pg_dump of queen's schema into /var/lib/queen/backups."}},
			}},
			{Title: "Exit status", Items: []manpage.Item{
				{Tag: "0", Text: []string{"Success, including a drained stop."}},
				{Tag: "1", Text: []string{"Run-time failure (listen, database, schema), or a forced stop."}},
				{Tag: "2", Text: []string{"Usage error."}},
				{Tag: "78", Text: []string{"Configuration error (EX_CONFIG). The units set " +
					"RestartPreventExitStatus=78: a typo is reported once, not restarted in a loop. Also " +
					"QUEEN_APPLY_SCHEMA=0 on a database without this release's schema."}},
			}},
			{Title: "Examples", Text: []string{
				"Check a changed env file exactly as systemd parses it, then restart:",
				" systemd-run --pipe --wait \\\n   -p EnvironmentFile=/etc/queen/queen.env /usr/bin/queen -check-config\n systemctl restart queen",
				"Status line, readiness and logs:",
				" systemctl show -p StatusText queen.service\n journalctl -u queen.service",
			}},
			{Title: "See also", Text: []string{
				"queenctl(1), queen-proxy(8), systemctl(1), journalctl(1), systemd.socket(5), systemd.service(5), " +
					"pg_restore(1), /usr/share/doc/queen/deploy.md, systemd.md, backup.md, upgrades.md, " +
					"configuration.md",
			}},
		},
	}
}

// settingItems are the settings table as ENVIRONMENT items.
func settingItems() []manpage.Item {
	var items []manpage.Item
	for _, r := range config.References() {
		def := "empty"
		if r.Default != "" {
			def = "`" + r.Default + "`"
		}
		items = append(items, manpage.Item{Tag: r.Name, Text: []string{
			r.Doc + " (" + r.Group + "; " + r.Kind + "; default " + def + ".)"}})
	}
	return items
}

// systemdItems are the variables systemd sets and queen reads.
func systemdItems() []manpage.Item {
	return []manpage.Item{
		{Tag: "LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES", Text: []string{"Set by systemd. Socket activation " +
			"(queen.socket): queen serves the passed sockets and ignores HOST and PORT. Without them it binds " +
			"HOST:PORT itself."}},
		{Tag: "NOTIFY_SOCKET", Text: []string{"Set by systemd. Type=notify: STATUS= while waiting for PostgreSQL " +
			"(with EXTEND_TIMEOUT_USEC=), READY=1 once the schema is applied, STOPPING=1 when the drain begins."}},
		{Tag: "WATCHDOG_USEC, WATCHDOG_PID", Text: []string{"Set by systemd. WatchdogSec=: a keep-alive every " +
			"third of the interval, sent only while the HTTP accept loop, the handler chain and the broker " +
			"answer. A PostgreSQL outage does not stop the keep-alives."}},
		{Tag: "CREDENTIALS_DIRECTORY", Text: []string{"Set by systemd. LoadCredential=: PG_PASSWORD, JWT_SECRET " +
			"and QUEEN_ENCRYPTION_KEY are read from files of those names first."}},
	}
}

// buildDate is the date of the build (YYYY-MM-DD) for the page's footer, or
// "unknown" in a build without one (go run, tests).
func buildDate() string {
	if d, _, ok := strings.Cut(buildinfo.Date, "T"); ok && len(d) == len("2006-01-02") {
		return d
	}
	return buildinfo.Date
}
