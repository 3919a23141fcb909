package config

import (
	"fmt"
	"strings"
)

// EnvFileCommand regenerates etc/queen.env, the packaged /etc/queen/queen.env; the
// envfile test names it when the file is stale.
const EnvFileCommand = "go run ./cmd/queen -env-file > etc/queen.env"

// EnvFile renders the env file the deb and rpm install as /etc/queen/queen.env: every
// setting commented out with its default, grouped as in docs/configuration.md, under a
// header with systemd's EnvironmentFile= syntax rules. The packaged file is a conffile:
// it only changes when a setting is added or a default changes, so upgrades rarely
// meet an edited copy. Notes sit on their own lines because systemd does not strip
// inline comments: uncommenting `#X=1  # note` would set X to "1  # note".
func EnvFile() string {
	var b strings.Builder
	b.WriteString(envFileHeader)
	t := table()
	for g := groupServer; g <= groupLast; g++ {
		fmt.Fprintf(&b, "\n## %s\n", g.title())
		for _, s := range t {
			if s.group != g {
				continue
			}
			for _, note := range envFileNotes(s) {
				fmt.Fprintf(&b, "# %s\n", note)
			}
			fmt.Fprintf(&b, "#%s=%s\n", s.name, envQuote(s.def))
		}
	}
	return b.String()
}

const envFileHeader = `# /etc/queen/queen.env: the environment of queen.service, queen@N.service and
# queen-backup.service (EnvironmentFile=). Generated from queen's settings table.
#
# Every setting is listed, commented out, with its built-in default. To change one,
# remove the leading "#" and edit the value, then check the file and restart:
#   systemd-run --pipe --wait -p EnvironmentFile=/etc/queen/queen.env /usr/bin/queen -check-config
#   systemctl restart queen          (replicas: systemctl restart queen.target)
# An invalid value stops queen with exit status 78 and a journal line naming it
# (journalctl -u queen); systemd does not restart it until the file is fixed.
#
# This is systemd's syntax, not a shell's:
# - one NAME=value per line; "export NAME=value" lines are ignored;
# - only lines starting with "#" or ";" are comments: "NAME=yes # note" sets NAME to
#   "yes # note", which queen rejects;
# - quotes are removed; $VARIABLES are not expanded.
#
# Secrets (PG_PASSWORD, PG_SSL_KEY, JWT_SECRET, QUEEN_ENCRYPTION_KEY) are better kept
# out of this file: as root-only files under /etc/queen/credentials/ passed with
# LoadCredential= (see /usr/share/doc/queen/systemd.md).
# Replicas read this file, then /etc/queen/queen@N.env for their own settings.
# Reference: /usr/share/doc/queen/configuration.md
`

// envFileNotes are the comment lines above one setting's line.
func envFileNotes(s setting) []string {
	var notes []string
	switch s.name {
	case "HOST", "PORT":
		notes = append(notes, s.name+" is ignored under queen.socket: the socket unit owns the address (ListenStream=).")
	case "FILE_BUFFER_DIR":
		notes = append(notes, "queen.service sets /var/lib/queen/spool, queen@N.service /var/lib/queen/N/spool;",
			"a value here overrides both, and replicas must not share a directory.")
	case "QUEEN_INSTANCE":
		notes = append(notes, "Set by queen@N.service to N.")
	case "QUEEN_ENV_FILES":
		notes = append(notes, "queen.service sets /etc/queen/queen.env, queen@N.service adds /etc/queen/queen@N.env;",
			"SIGHUP (systemctl reload) re-reads them if user queen may read them.")
	}
	if s.defDoc != "" {
		notes = append(notes, fmt.Sprintf("%s default: %s", s.name, s.defDoc))
	}
	if s.emptyOK && s.def != "" {
		notes = append(notes, s.name+" set but empty has its own meaning; see the reference.")
	}
	if s.emptyOK && s.def == "" {
		notes = append(notes, s.name+" set but empty is not the same as unset; see the reference.")
	}
	if s.secret {
		notes = append(notes, s.name+" is a secret: better as the credential /etc/queen/credentials/"+s.name+".")
	}
	return notes
}

// envQuote writes a default so that systemd reads it back unchanged: values with
// whitespace, quotes or backslashes are double-quoted with escapes.
func envQuote(v string) string {
	if !strings.ContainsAny(v, " \t\"'\\") {
		return v
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}
