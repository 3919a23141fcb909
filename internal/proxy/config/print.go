package config

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
)

// redacted replaces every secret's value in printouts and logs.
const redacted = "<redacted>"

// Print writes every setting, sorted, as NAME=value  # source, secrets redacted.
func (c *Config) Print(w io.Writer) {
	for _, s := range c.sorted() {
		fmt.Fprintf(w, "%s=%s  # %s\n", s.name, c.shown(s), c.sources[s.name])
	}
}

// LogAttrs is the effective configuration as log attributes, secrets redacted.
func (c *Config) LogAttrs() []slog.Attr {
	var out []slog.Attr
	for _, s := range c.sorted() {
		out = append(out, slog.String(s.name, c.shown(s)))
	}
	return out
}

func (c *Config) shown(s setting) string {
	v := c.values[s.name]
	if s.secret && v != "" {
		return redacted
	}
	return v
}

func (c *Config) sorted() []setting {
	out := slices.Clone(settings)
	slices.SortFunc(out, func(a, b setting) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	return out
}
