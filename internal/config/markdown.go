package config

import (
	"fmt"
	"strings"
)

// DocsCommand regenerates docs/configuration.md; the docs test names it when the file
// is stale.
const DocsCommand = "go run ./cmd/queen -config-docs > docs/configuration.md"

// Markdown renders docs/configuration.md from the settings table: every variable with
// its default, type and meaning, grouped by section, followed by the parsing rules,
// the credential lookup, the exit status and the accepted-but-unused upstream
// variables.
func Markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Configuration\n\n")
	w("<!-- Generated from internal/config by `%s`. Do not edit by hand. -->\n\n", DocsCommand)
	w("queen is configured through environment variables. Under systemd they come from\n")
	w("`/etc/queen/queen.env` (`EnvironmentFile=`) and secrets from `LoadCredential=`. The names and\n")
	w("defaults are upstream Queen's, so existing env files keep working; the parsing is stricter\n")
	w("(see [How values are parsed](#how-values-are-parsed)). Settings described as \"Queen-only\"\n")
	w("do not exist upstream.\n\n")
	w("The upstream broker's three command-line flags work too and override the environment:\n")
	w("`--port N` sets `PORT`, `--host H` sets `HOST`, `--dev` sets `LOG_LEVEL=debug`.\n\n")
	w("Check a configuration without starting anything with `queen -check-config`, and list the\n")
	w("effective values, secrets redacted, each with where it came from (`default`, `env`,\n")
	w("`credential` or `flag`), with `queen -print-config`; the broker logs the same at start-up.\n\n")

	t := table()
	for g := groupServer; g <= groupLast; g++ {
		w("## %s\n\n", g.title())
		w("| Variable | Default | Type | Description |\n|---|---|---|---|\n")
		for _, s := range t {
			if s.group == g {
				w("| `%s` | %s | %s | %s |\n", s.name, defaultDoc(s), kindDoc(s), cell(s.doc))
			}
		}
		w("\n")
	}
	b.WriteString(parsingRules())
	b.WriteString(unusedDoc())
	return b.String()
}

// defaultDoc is the Default column of one row.
func defaultDoc(s setting) string {
	switch {
	case s.defDoc != "":
		if strings.HasPrefix(s.defDoc, s.def) && s.def != "" {
			return "`" + s.def + "`" + cell(strings.TrimPrefix(s.defDoc, s.def))
		}
		return "*" + cell(s.defDoc) + "*"
	case s.def == "":
		return "*empty*"
	}
	return "`" + cell(s.def) + "`"
}

// kindDoc is the Type column of one row.
func kindDoc(s setting) string {
	k := s.bind(&Config{}).Kind()
	if s.secret {
		k += ", **secret**"
	}
	if s.credential {
		k += ", credential"
	}
	return cell(k)
}

// cell escapes text for a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}

// secretList names every secret setting of the table, in table order, as Markdown
// code spans.
func secretList() string {
	var names []string
	for _, s := range table() {
		if s.secret {
			names = append(names, "`"+s.name+"`")
		}
	}
	return strings.Join(names, ", ")
}

// parsingRules is the "How values are parsed" section.
func parsingRules() string {
	return `## How values are parsed

These rules are stricter than upstream's, which reads anything but the exact string ` + "`true`" + `
as false and any non-numeric integer as 0.

* **Unset or empty.** An unset variable, or one set to the empty string, takes its default.
  The exceptions are stated in the table: ` + "`PG_PASSWORD`" + ` (empty: no password),
  ` + "`JWT_SKIP_PATHS`" + ` (empty: no path skipped) and ` + "`WEBAPP_ROOT`" + ` (empty: dashboard off).
* **Booleans** are ` + "`true`/`false`, `1`/`0`, `yes`/`no` or `on`/`off`" + `, in any case. Anything
  else (` + "`ture`, `enabled`, `yes # comment`" + `) is an error. Note that systemd passes inline
  comments in env files through verbatim: write comments on their own lines.
* **Integers** are whole base-10 numbers within the range in the table; ` + "`12abc`" + `, ` + "`1.5`" + `
  and ` + "` 12`" + ` are errors, never 0. Times keep upstream's units (the variable name or the
  table says milliseconds or seconds).
* **Durations** (` + "`QUEEN_SHUTDOWN_TIMEOUT`" + `) use Go syntax: ` + "`20s`, `1m30s`, `500ms`" + `.
* **Words** from a closed set (` + "`LOG_LEVEL`, `QUEEN_LOG_FORMAT`, `JWT_ALGORITHM`, `DEFAULT_SUBSCRIPTION_MODE`" + `)
  are matched in any case; any other word is an error.
* **Lists** are comma-separated; spaces around entries and empty entries are dropped.
* **Unknown ` + "`QUEEN_*`" + ` variables are reported loudly but never stop the daemon**: the
  environment is not all queen's. Each one gets a warning at boot, with a "did you mean"
  hint, so that a typo cannot silently leave a default in force, and
  ` + "`queen -check-config`" + ` fails on them (status 78) so that scripts and CI can be strict.
  The variables of Queen clients and tools
  (` + "`QUEEN_SERVER`, `QUEEN_TOKEN`, `QUEEN_CONTEXT`, `QUEEN_CONFIG`, `QUEEN_TEST_DATABASE_URL`" + `)
  are ignored. Other variables (` + "`PATH`" + `, ...) are none of queen's business.
* **Kubernetes service links are ignored.** A Service named ` + "`queen`" + ` makes Kubernetes put
  ` + "`QUEEN_SERVICE_HOST`, `QUEEN_SERVICE_PORT`, `QUEEN_SERVICE_PORT_<NAME>`, `QUEEN_PORT`" + `,
  ` + "`QUEEN_PORT_<port>_<PROTO>`" + ` and its ` + "`_PROTO`, `_PORT` and `_ADDR`" + ` variants into every pod of
  the namespace. queen recognises them by name and by value (an IP address, a port, or
  ` + "`tcp://10.0.0.1:6632`" + `) and says nothing about them, not even with ` + "`-check-config`" + `; a
  variable of that name with another value (` + "`QUEEN_PORT=7000`" + `, meant as ` + "`PORT`" + `) is unknown.
  The variables of a Service with another name (` + "`queen-api`" + ` gives ` + "`QUEEN_API_SERVICE_HOST`" + `,
  ...) are unknown and warned about; ` + "`enableServiceLinks: false`" + ` in the pod spec stops them.
* **Upstream variables queen does not implement** are accepted; when set, each one is
  reported as a warning by ` + "`queen -check-config`" + ` and in the startup log. They are listed below.
* Every problem is reported at once, one line each, naming the variable and its value
  (secrets show as ` + "`<redacted>`" + `), e.g. ` + "`config: DB_POOL_SIZE=\"abc\": not an integer`" + `.

### Secrets and systemd credentials

` + secretList() + ` and the unused ` + "`QUEEN_SYNC_SECRET`" + ` are
secrets: never printed or logged. Each may also be given as a systemd credential: when
` + "`$CREDENTIALS_DIRECTORY`" + ` is set and holds a file named exactly like the variable, the file's
content, with trailing newlines removed, is the value. **The credential wins over the
environment** (a warning says so when both are set), so a secret can move out of the env
file without editing it. For example:

` + "```ini" + `
[Service]
LoadCredential=PG_PASSWORD:/etc/queen/credentials/pg_password
LoadCredential=JWT_SECRET:/etc/queen/credentials/jwt_secret
` + "```" + `

` + "`JWT_PUBLIC_KEY`" + ` is not a secret, but it may come from a credential the same way (type
"credential" above): the PEM file as it is, without the ` + "`\\n`" + ` escaping an env file needs.

### Exit status

` + "`queen`" + ` exits with status **78** (` + "`EX_CONFIG`" + `) on any configuration error, both when starting
and with ` + "`-check-config`" + `, so ` + "`RestartPreventExitStatus=78`" + ` stops systemd from restarting it in a
loop; 2 on a command-line usage error; 1 on any other failure; 0 otherwise. Unknown
` + "`QUEEN_*`" + ` variables make ` + "`-check-config`" + ` exit 78 too, saying that the daemon would start
but warn about them; the daemon itself starts. Both also check what they can on the host
without changing it: a ` + "`WEBAPP_ROOT`" + ` without the dashboard's files, and a ` + "`FILE_BUFFER_DIR`" + `
that is, or would have to be created under, a file. What they cannot know in advance (a
` + "`HOST`" + ` name that does not resolve, a port in use, a spool directory the broker's user may
not write) fails the start with status 1.

`
}

// unusedDoc is the list of accepted-but-unused upstream variables.
func unusedDoc() string {
	var b strings.Builder
	b.WriteString("## Accepted but unused upstream variables\n\n")
	b.WriteString("Upstream Queen reads these; queen accepts them so that existing env files keep working,\n")
	b.WriteString("and warns about each one that is set, because it changes nothing here.\n\n")
	for _, g := range unusedUpstream() {
		names := g.display
		if names == "" {
			names = "`" + strings.Join(g.names, "`, `") + "`"
		}
		fmt.Fprintf(&b, "* %s: %s.\n", names, g.reason)
	}
	return b.String()
}
