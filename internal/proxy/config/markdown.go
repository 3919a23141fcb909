package config

import (
	"fmt"
	"strings"
)

// DocsCommand regenerates docs/proxy-configuration.md; the docs test names it when
// the file is stale.
const DocsCommand = "go run ./cmd/queen-proxy -config-docs > docs/proxy-configuration.md"

// Markdown renders docs/proxy-configuration.md from the settings table: every
// variable with its default, the values it accepts and its meaning.
func Markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# queen-proxy configuration\n\n")
	w("<!-- Generated from internal/proxy/config by `%s`. Do not edit by hand. -->\n\n", DocsCommand)
	w("queen-proxy, the multi-tenant gateway ([multi-tenant.md](multi-tenant.md)), is configured\n")
	w("through environment variables only; under systemd they come from `/etc/queen/queen-proxy.env`.\n")
	w("A value outside what its row accepts, or an unknown `QUEEN_PROXY_*` variable, stops\n")
	w("queen-proxy with exit status 78 and a line naming the variable (systemd does not restart\n")
	w("it until the file is fixed). `queen-proxy -check-config` checks a configuration without\n")
	w("starting anything; `queen-proxy -print-config` prints the effective values, secrets\n")
	w("redacted, each with where it came from. Durations are Go durations (`500ms`, `2s`, `1m`);\n")
	w("booleans are `true`/`false`, `1`/`0`, `yes`/`no` or `on`/`off`. An unset variable, or one\n")
	w("set to the empty string, takes the default (`PG_PASSWORD` set empty means no password).\n")
	w("Secrets are never printed or logged, and may also come from a file of their name in\n")
	w("`$CREDENTIALS_DIRECTORY` (systemd's `LoadCredential=`); so may the files marked\n")
	w("*credential*, whose credential is taken as the file's path.\n\n")
	w("| Variable | Default | Accepts | Description |\n|---|---|---|---|\n")
	for _, s := range settings {
		def := "*unset*"
		if s.def != "" {
			def = "`" + cell(s.def) + "`"
		}
		accepts := s.accepts()
		switch {
		case s.secret:
			accepts += ", secret"
		case s.credentialIsPath:
			accepts += ", credential"
		}
		w("| `%s` | %s | %s | %s |\n", s.name, def, cell(accepts), cell(describe(s)))
	}
	return b.String()
}

// describe is the Description cell of one row: the meaning, and the Queen 0.15
// variable read in its place.
func describe(s setting) string {
	text := s.doc
	if text != "" {
		text = strings.ToUpper(text[:1]) + text[1:] + "."
	}
	if s.fallback != "" {
		text = strings.TrimSpace(text + " When unset, `" + s.fallback + "` (Queen 0.15's name) is read.")
	}
	return text
}

// cell escapes a table cell's pipes.
func cell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}
