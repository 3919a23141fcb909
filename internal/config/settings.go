package config

import (
	"slices"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/envvalue"
)

// setting is one row of the table that drives parsing, printing and the docs.
type setting struct {
	name   string // environment variable
	def    string // default, written as it would be in the environment
	defDoc string // how the docs show the default, when def alone would mislead
	group  group
	secret bool // value never printed or logged; may come from $CREDENTIALS_DIRECTORY
	// credential: not secret, but may also come from $CREDENTIALS_DIRECTORY (a PEM
	// public key is easier to ship as a file than as an escaped env line).
	credential bool
	// emptyOK gives a set-but-empty value a meaning of its own; otherwise empty = unset.
	emptyOK bool
	doc     string // Markdown, one paragraph
	bind    func(c *Config) value
}

// problem builds the *Error for a raw value this setting rejected.
func (s setting) problem(raw, reason string) *Error {
	if s.secret || envvalue.HoldsPrivateKey(raw) {
		raw = redacted
	}
	return &Error{Name: s.name, Value: raw, Reason: reason}
}

// group is a section of the docs; the constants are in document order.
type group int

const (
	groupServer group = iota
	groupPostgres
	groupPush
	groupPop
	groupLimits
	groupLogging
	groupFileBuffer
	groupMaintenance
	groupJWT
	groupEncryption
	groupTracing
	groupLast = groupTracing
)

// title is the group's section heading in the docs.
func (g group) title() string {
	return [...]string{
		groupServer:      "Server",
		groupPostgres:    "PostgreSQL",
		groupPush:        "Push batching",
		groupPop:         "Pop and long-poll",
		groupLimits:      "Request limits",
		groupLogging:     "Logging",
		groupFileBuffer:  "File buffer (spool)",
		groupMaintenance: "Maintenance, retention and statistics",
		groupJWT:         "Authentication (JWT)",
		groupEncryption:  "Encryption",
		groupTracing:     "OpenTelemetry traces",
	}[g]
}

// table returns every setting queen implements, in document order. It is built on each
// call so that no package variable can be mutated.
func table() []setting {
	return slices.Concat(
		serverSettings(),
		postgresSettings(),
		pushSettings(),
		popSettings(),
		limitSettings(),
		loggingSettings(),
		fileBufferSettings(),
		maintenanceSettings(),
		jwtSettings(),
		encryptionSettings(),
		tracingSettings(),
	)
}

// settingByName finds one row of the table.
func settingByName(name string) (setting, bool) {
	for _, s := range table() {
		if s.name == name {
			return s, true
		}
	}
	return setting{}, false
}

// sortedTable returns the table sorted by variable name, as Print lists it.
func sortedTable() []setting {
	t := table()
	slices.SortFunc(t, func(a, b setting) int { return strings.Compare(a.name, b.name) })
	return t
}

// ms binds a setting in whole milliseconds, at least min (every *_MS-style setting).
func ms(p *time.Duration, min int64) value {
	return envvalue.Unit{P: p, Unit: time.Millisecond, Min: min}
}
