package cli

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestJSONToYAML(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, json, yaml string
	}{
		{name: "KeyOrderKept", json: `{"b":1,"a":2}`, yaml: "b: 1\na: 2\n"},
		{name: "AmbiguousStringsQuoted", json: `{"a":"true","b":"123","c":"null","d":"","e":"yes"}`,
			yaml: "a: \"true\"\nb: \"123\"\nc: \"null\"\nd: \"\"\ne: \"yes\"\n"},
		{name: "YAML11WordsQuoted", json: `["on","Off","n","~","none"]`, yaml: "- \"on\"\n- \"Off\"\n- \"n\"\n- \"~\"\n- none\n"},
		{name: "ScalarsKeepTheirType", json: `{"t":true,"n":null,"f":1.5,"big":12345678901234567890}`,
			yaml: "t: true\n\"n\": null\nf: 1.5\nbig: 12345678901234567890\n"},
		{name: "EmptyCollectionsStayFlow", json: `{"a":[],"o":{}}`, yaml: "a: []\no: {}\n"},
		{name: "NestedSequences", json: `{"items":[{"x":1,"y":[1,2]},"s"]}`,
			yaml: "items:\n  - x: 1\n    \"y\":\n      - 1\n      - 2\n  - s\n"},
		{name: "SpecialCharacters", json: `{"k":"a: b","h":"#c","m":"line1\nline2"}`,
			yaml: "k: 'a: b'\nh: '#c'\nm: |-\n  line1\n  line2\n"},
		{name: "TopLevelArray", json: `[1,"two"]`, yaml: "- 1\n- two\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := jsonToYAML([]byte(tc.json))
			require.NoError(t, err)
			require.Equal(t, tc.yaml, string(got))
		})
	}
}

func TestTable(t *testing.T) {
	t.Parallel()

	t.Run("AlignsOnVisibleWidthWithColour", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		w := &tw{w: &buf, color: true}
		w.table([]string{"NAME", "STATE"}, [][]string{{w.green("ok"), "x"}, {"élan", w.red("failed")}}, "")
		want := "\x1b[1mNAME\x1b[0m  \x1b[1mSTATE\x1b[0m\n" +
			"\x1b[32mok\x1b[0m    x\n" +
			"élan  \x1b[31mfailed\x1b[0m\n"
		require.Equal(t, want, buf.String())
	})
	t.Run("NoColourOffTerminal", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		w := &tw{w: &buf}
		w.table([]string{"A", "LONGER"}, [][]string{{w.state("failed"), ""}}, "")
		require.Equal(t, "A       LONGER\nfailed\n", buf.String(), "no ANSI, no trailing spaces")
	})
	t.Run("EmptyMessage", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		(&tw{w: &buf}).table([]string{"A"}, nil, "Nothing.")
		require.Equal(t, "Nothing.\n", buf.String())
	})
	t.Run("Helpers", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, 4, visibleWidth("\x1b[1mélan\x1b[0m"))
		require.Equal(t, "abc…", truncate("abcdef", 4))
		require.Equal(t, "abc", truncate("abc", 4))
		require.Equal(t, []string{"5s", "1m05s", "2h01m", "3d02h"}, []string{ago(5), ago(65), ago(7260), ago(266400)})
		require.Equal(t, `{"a":1}`, compactJSON([]byte("{ \"a\" : 1 }")))
	})
}

func TestParseTime(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 4, 26, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"now", "2026-04-26T12:00:00.000Z"},
		{"2026-04-25T10:00:00+02:00", "2026-04-25T08:00:00.000Z"},
		{"2026-04-25T10:00:00", "2026-04-25T10:00:00.000Z"},
		{"2026-04-25", "2026-04-25T00:00:00.000Z"},
		{"15m", "2026-04-26T11:45:00.000Z"},
		{"-2h", "2026-04-26T10:00:00.000Z"},
	} {
		got, err := parseTime(tc.in, now)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, wireTime(got), tc.in)
	}
	_, err := parseTime("soon", now)
	require.ErrorContains(t, err, `"soon" is not a time`)
}

func TestFlags(t *testing.T) {
	t.Parallel()

	t.Run("UnitValue", func(t *testing.T) {
		t.Parallel()
		var secs, ms int
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		unitVar(fs, &secs, "s", time.Second, "")
		unitVar(fs, &ms, "ms", time.Millisecond, "")
		require.NoError(t, fs.Parse([]string{"-s", "5m", "-ms", "1.5s"}))
		require.Equal(t, 300, secs)
		require.Equal(t, 1500, ms)
		require.NoError(t, fs.Parse([]string{"-s", "42"}))
		require.Equal(t, 42, secs)
		require.Error(t, fs.Parse([]string{"-s", "-3"}))
	})
	t.Run("Interspersed", func(t *testing.T) {
		t.Parallel()
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		o := fs.String("o", "", "")
		v := fs.Bool("v", false, "")
		pos, err := parseInterspersed(fs, []string{"a", "-o", "json", "b", "-v", "--", "-c", "d"})
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b", "-c", "d"}, pos)
		require.Equal(t, "json", *o)
		require.True(t, *v)
	})
	t.Run("GlobalsSurviveTheSubcommand", func(t *testing.T) {
		t.Parallel()
		g := defaultGlobals()
		root := flag.NewFlagSet("root", flag.ContinueOnError)
		g.register(root)
		require.NoError(t, root.Parse([]string{"-o", "yaml", "queue"}))
		leaf := flag.NewFlagSet("leaf", flag.ContinueOnError)
		g.register(leaf)
		require.NoError(t, leaf.Parse([]string{"--timeout", "5s"}))
		require.Equal(t, "yaml", g.output)
		require.Equal(t, 5*time.Second, g.timeout)
	})
}

func TestResolveTarget(t *testing.T) {
	t.Parallel()
	file := &ctxFile{path: "/cfg", CurrentContext: "cur", Contexts: []ctxEntry{
		{Name: "cur", Server: "cur:1", Token: "tcur"},
		{Name: "named", Server: "https://named:2/", Token: ""},
	}}
	for _, tc := range []struct {
		name              string
		g                 globals
		env               map[string]string
		server, from, tok string
	}{
		{name: "CurrentContext", server: "http://cur:1", from: "context cur", tok: "tcur"},
		{name: "EnvBeatsCurrent", env: map[string]string{"QUEEN_SERVER": "env:3", "QUEEN_TOKEN": "tenv"},
			server: "http://env:3", from: "QUEEN_SERVER", tok: "tenv"},
		{name: "NamedBeatsEnv", g: globals{context: "named"}, env: map[string]string{"QUEEN_SERVER": "env:3", "QUEEN_TOKEN": "tenv"},
			server: "https://named:2", from: "context named", tok: "tenv"},
		{name: "QueenContextEnvNeverBorrowsTheCurrentToken", env: map[string]string{"QUEEN_CONTEXT": "named"},
			server: "https://named:2", from: "context named", tok: ""},
		{name: "FlagBeatsAll", g: globals{server: "flag:4", token: "tflag", context: "named"},
			env: map[string]string{"QUEEN_SERVER": "env:3"}, server: "http://flag:4", from: "--server", tok: "tflag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := resolveTarget(&tc.g, tc.env, file)
			require.NoError(t, err)
			require.Equal(t, tc.server, got.server)
			require.Equal(t, tc.from, got.serverFrom)
			require.Equal(t, tc.tok, got.token)
		})
	}
	t.Run("DefaultWithoutFile", func(t *testing.T) {
		t.Parallel()
		got, err := resolveTarget(&globals{}, nil, &ctxFile{})
		require.NoError(t, err)
		require.Equal(t, DefaultServer, got.server)
		require.Equal(t, "the default", got.serverFrom)
		require.Empty(t, got.token)
	})
	t.Run("UnknownContextIsUsageError", func(t *testing.T) {
		t.Parallel()
		_, err := resolveTarget(&globals{context: "x"}, nil, file)
		var ue *usageError
		require.ErrorAs(t, err, &ue)
		require.EqualError(t, err, `context "x" (from --context) is not in the config file /cfg`)
	})
}

func TestProgress(t *testing.T) {
	t.Parallel()

	t.Run("PlainThrottlesAndPrintsTheSummary", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		p := &progress{w: &buf, mode: progressPlain, every: time.Hour}
		p.update("first %d", 1)
		p.update("second") // within the interval: dropped
		p.done("done %d", 2)
		require.Equal(t, "first 1\ndone 2\n", buf.String())
	})
	t.Run("TTYRedrawsInPlaceAndClears", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		p := &progress{w: &buf, mode: progressTTY}
		p.update("a")
		p.update("b")
		p.clear()
		p.done("")
		require.Equal(t, "\r\x1b[Ka\r\x1b[Kb\r\x1b[K", buf.String())
	})
	t.Run("OffPrintsNothing", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		p := &progress{w: &buf}
		p.update("a")
		p.done("b")
		require.Empty(t, buf.String())
	})
}

// TestCommandTree checks every command: a summary, a leaf with a run function or a
// group with sub-commands, unique names, and a help text that renders.
func TestCommandTree(t *testing.T) {
	t.Parallel()
	for _, n := range walk(rootCommand()) {
		name := strings.Join(n.path, " ")
		if len(n.path) > 0 {
			require.NotEmpty(t, n.cmd.summary, name)
		}
		require.True(t, (n.cmd.setup == nil) != (len(n.cmd.subs) == 0), "%q: a leaf with setup, or a group", name)
		seen := map[string]bool{}
		for _, s := range n.cmd.subs {
			for _, id := range append([]string{s.name}, s.aliases...) {
				require.False(t, seen[id], "%q: duplicate sub-command %q", name, id)
				seen[id] = true
			}
		}
		var buf bytes.Buffer
		writeHelp(&buf, n.cmd, n.path)
		require.Contains(t, buf.String(), "Usage:\n  queenctl")
		require.Contains(t, buf.String(), "Global flags:\n")
	}
}
