package config

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Print writes every setting, sorted by name, one per line as
// `NAME=value  # default|env|credential`. Secrets print as <redacted> unless empty.
// Values that would make the line ambiguous (spaces, '#', quotes, newlines) are
// Go-quoted. The output is for people (`queen -print-config`), not an env file.
func (c *Config) Print(w io.Writer) {
	var b strings.Builder
	for _, s := range sortedTable() {
		fmt.Fprintf(&b, "%s=%s  # %s\n", s.name, quoteIfNeeded(c.display(s)), c.Source(s.name))
	}
	_, _ = io.WriteString(w, b.String())
}

// String returns the Print listing, so that formatting a *Config with %v or %s never
// shows a secret.
func (c *Config) String() string {
	var b strings.Builder
	c.Print(&b)
	return b.String()
}

// LogAttrs returns the effective configuration for the one startup log block: one
// group per setting, keyed by variable name and sorted, holding its value (secrets
// redacted) and its source, e.g. PORT={value=6632 source=default}.
func (c *Config) LogAttrs() []slog.Attr {
	t := sortedTable()
	attrs := make([]slog.Attr, 0, len(t))
	for _, s := range t {
		attrs = append(attrs, slog.Group(s.name,
			slog.String("value", c.display(s)),
			slog.String("source", c.Source(s.name))))
	}
	return attrs
}

// LogValue makes a *Config log as its redacted LogAttrs group, so that
// logger.Info("effective configuration", "config", cfg) is safe.
func (c *Config) LogValue() slog.Value {
	return slog.GroupValue(c.LogAttrs()...)
}

// SlogLevel maps LogLevel onto slog: trace is one step below debug (slog.LevelDebug-4).
func (c *Config) SlogLevel() slog.Level {
	switch c.LogLevel {
	case "trace":
		return slog.LevelDebug - 4
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}
