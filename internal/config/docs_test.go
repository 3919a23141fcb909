package config

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDocsConfigurationIsCurrent(t *testing.T) {
	t.Parallel()

	got, err := os.ReadFile("../../docs/configuration.md")
	require.NoError(t, err, "run: "+DocsCommand)
	require.Equal(t, Markdown(), string(got),
		"docs/configuration.md is stale; regenerate it with: "+DocsCommand)
}

func TestMarkdownListsEverything(t *testing.T) {
	t.Parallel()

	md := Markdown()
	for _, s := range table() {
		require.Contains(t, md, "| `"+s.name+"` |", s.name)
	}
	for _, g := range unusedUpstream() {
		if g.display == "" {
			for _, n := range g.names {
				require.Contains(t, md, "`"+n+"`", n)
			}
		}
	}
	for _, want := range []string{"## How values are parsed", "CREDENTIALS_DIRECTORY", "**78**",
		"## Accepted but unused upstream variables", "QUEEN_<TYPE>_"} {
		require.Contains(t, md, want)
	}
}

func TestTableIsConsistent(t *testing.T) {
	t.Parallel()

	upperSnake := regexp.MustCompile(`^[A-Z][A-Z0-9_]*[A-Z0-9]$`)
	c := mustLoad(t) // every default parses: Load panics otherwise
	seen := make(map[string]bool)
	var secrets []string
	for _, s := range table() {
		require.False(t, seen[s.name], "duplicate %s", s.name)
		seen[s.name] = true
		require.Regexp(t, upperSnake, s.name)
		require.NotEmpty(t, s.doc, s.name)
		require.True(t, strings.HasSuffix(s.doc, "."), "%s: doc ends with a period", s.name)
		require.NotNil(t, s.bind, s.name)
		if s.secret {
			secrets = append(secrets, s.name)
		}
		// Every default prints back to itself, so the docs show what the code uses.
		want := s.def
		if s.name == "POP_WAIT_BACKOFF_MULTIPLIER" {
			want = "2" // written 2.0 as upstream documents it
		}
		require.Equal(t, want, s.bind(c).Get(), s.name)
	}
	require.ElementsMatch(t, []string{"PG_PASSWORD", "PG_SSL_KEY", "JWT_SECRET", "QUEEN_ENCRYPTION_KEY",
		"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"}, secrets)
}

func TestEveryFieldHasASetting(t *testing.T) {
	t.Parallel()

	// One setting per exported field, plus DashboardEnabled, which WEBAPP_ROOT also sets;
	// the fields of the Tracing and OTLP structs count one by one.
	var count func(t reflect.Type) int
	count = func(t reflect.Type) int {
		n := 0
		for f := range t.Fields() {
			switch {
			case !f.IsExported():
			case f.Type == reflect.TypeFor[Tracing]() || f.Type == reflect.TypeFor[OTLP]():
				n += count(f.Type)
			default:
				n++
			}
		}
		return n
	}
	require.Equal(t, len(table())+1, count(reflect.TypeFor[Config]()))
}
