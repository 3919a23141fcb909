package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/cli"
)

func TestOperations(t *testing.T) {
	t.Parallel()
	b := startBroker(t)

	t.Run("Ping", func(t *testing.T) {
		t.Parallel()
		require.Regexp(t, `^`+b.url+` is healthy: database connected, version \S+, [0-9.]+[µm]?s\n$`, ok(t, b.run(t, "ping")))
		var h api.Health
		decode(t, ok(t, b.run(t, "ping", "-o", "json")), &h)
		require.Equal(t, api.HealthStatusHealthy, h.Status)
		require.Equal(t, api.DatabaseConnected, h.Database)
	})

	t.Run("Version", func(t *testing.T) {
		t.Parallel()
		out := ok(t, b.run(t, "version"))
		require.Regexp(t, `^queenctl `+testVersion+` \(commit \S+, built \S+, go\S+ \S+/\S+\)\nbroker   \S+ at `+b.url+` \(healthy\)\n$`, out)
		var v struct {
			Client struct{ Version string }
			Server struct{ URL, Status string }
		}
		decode(t, ok(t, b.run(t, "version", "-o", "json")), &v)
		require.Equal(t, testVersion, v.Client.Version)
		require.Equal(t, b.url, v.Server.URL)
		require.Equal(t, "healthy", v.Server.Status)
	})

	t.Run("Status", func(t *testing.T) {
		t.Parallel()
		b.push(t, "status.q", "", `1`, `2`)
		out := ok(t, b.run(t, "status", "--queue", "status.q"))
		require.Regexp(t, `(?m)^Messages:     2 total, 2 pending, 0 processing, 0 completed, 0 failed, 0 dead-letter$`, out)
		require.Contains(t, fields(out), []string{"status.q", "status", "q", "1", "0"})
		var s api.StatusResponse
		decode(t, ok(t, b.run(t, "status", "--queue", "status.q", "--from", "2h", "-o", "json")), &s)
		require.Equal(t, int64(2), s.Messages.Total)
		require.Equal(t, 5, s.BucketMinutes, "a 2-hour window has 5-minute buckets")
		fails(t, b.run(t, "status", "--from", "yesterday-ish"), cli.ExitUsage, `--from: "yesterday-ish" is not a time`)
	})

	t.Run("Metrics", func(t *testing.T) {
		t.Parallel()
		out := ok(t, b.run(t, "metrics"))
		for _, k := range []string{"Uptime:", "Requests:", "Messages:", "DB pool:", "Memory:", "CPU:"} {
			require.Contains(t, out, k)
		}
		var m api.Metrics
		decode(t, ok(t, b.run(t, "metrics", "-o", "json")), &m)
		require.Equal(t, int64(8), m.Database.PoolSize)
		require.Contains(t, ok(t, b.run(t, "metrics", "--prometheus")), "# TYPE queen_build_info gauge")
	})
}

func TestMaintenance(t *testing.T) {
	t.Parallel()
	b := startBroker(t)

	out := ok(t, b.run(t, "maintenance", "status"))
	require.Equal(t, [][]string{
		{"MODE", "MAINTENANCE", "EFFECT", "WHILE", "ON"},
		{"push", "off", "pushes", "are", "spooled", "(buffered),", "replayed", "when", "off"},
		{"pop", "off", "pops", "return", "no", "messages"},
	}, fields(out))

	var s api.MaintenanceStatus
	decode(t, ok(t, b.run(t, "maintenance", "on", "pop", "-o", "json")), &s)
	require.True(t, s.PopMaintenanceMode)
	require.False(t, s.MaintenanceMode)
	b.push(t, "m.q", "", `1`)
	require.Equal(t, "No messages.\n", ok(t, b.run(t, "pop", "m.q")), "pop maintenance: nothing is delivered")

	out = ok(t, b.run(t, "maintenance", "on", "all"))
	require.Contains(t, fields(out), []string{"push", "on", "pushes", "are", "spooled", "(buffered),", "replayed", "when", "off"})
	out = ok(t, b.run(t, "maintenance", "off", "all"))
	require.Contains(t, fields(out), []string{"pop", "off", "pops", "return", "no", "messages"})
	require.Len(t, popAll(t, b, "m.q").Messages, 1)

	fails(t, b.run(t, "maintenance", "on", "everything"), cli.ExitUsage, `mode "everything": want push, pop or all`)
}

// TestServerDown runs every command that talks to the broker against a port where
// nothing listens: each exits 5 and names the server and where its address came from.
func TestServerDown(t *testing.T) {
	t.Parallel()
	server := closedServer(t)
	const id = "01900000-0000-7000-8000-000000000000"
	for _, args := range [][]string{
		{"ping"}, {"status"}, {"metrics"}, {"metrics", "--prometheus"}, {"version"},
		{"queue", "list"}, {"queue", "get", "q"}, {"queue", "configure", "q"}, {"queue", "delete", "q", "--yes"},
		{"push", "q", "1"}, {"pop", "q"}, {"ack", id, "t"}, {"lease", "extend", id}, {"tx", "--push", "q=1"},
		{"tail", "q"}, {"cg", "list"}, {"cg", "get", "g"}, {"cg", "lag"}, {"cg", "seek", "g", "q", "--to-end"},
		{"cg", "replay", "g", "q"}, {"cg", "delete", "g", "--yes"},
		{"dlq", "list"}, {"dlq", "retry", id, "t"}, {"dlq", "delete", "--all", "--yes"},
		{"messages", "list"}, {"messages", "get", id, "t"}, {"messages", "delete", id, "t"},
		{"traces", "get", id, "t"}, {"traces", "by-name", "n"}, {"traces", "names"},
		{"maintenance", "status"}, {"maintenance", "on", "push"},
	} {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			t.Parallel()
			r := runQueenctl(t, []string{"QUEEN_SERVER=" + server}, "", args...)
			fails(t, r, cli.ExitUnavailable, "cannot reach the broker at "+server+" (QUEEN_SERVER): dial tcp", "connection refused")
			require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one error line: %s", r)
		})
	}
	t.Run("FlagNamesItsSource", func(t *testing.T) {
		t.Parallel()
		r := runQueenctl(t, nil, "", "queue", "list", "--server", server)
		fails(t, r, cli.ExitUnavailable, "queenctl queue list: list queues: cannot reach the broker at "+server+" (--server)")
	})
	t.Run("VersionClientOnlyNeedsNoBroker", func(t *testing.T) {
		t.Parallel()
		out := ok(t, runQueenctl(t, []string{"QUEEN_SERVER=" + server}, "", "version", "--client"))
		require.Regexp(t, `^queenctl `+testVersion+` `, out)
		require.NotContains(t, out, "broker")
	})
}

func TestUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr []string
	}{
		{name: "Help", args: []string{"--help"}, stdout: "Exit status:\n  0    success\n"},
		{name: "HelpCommand", args: []string{"help", "queue", "configure"}, stdout: "Only the options given change"},
		{name: "SubcommandHelp", args: []string{"dlq", "retry", "-h"}, stdout: "      --all "},
		{name: "NoArguments", args: nil, code: cli.ExitUsage, stderr: []string{"Usage:\n  queenctl COMMAND [flags]"}},
		{name: "GroupWithoutCommand", args: []string{"cg"}, code: cli.ExitUsage, stderr: []string{"queenctl cg COMMAND"}},
		{name: "UnknownCommand", args: []string{"queu", "list"}, code: cli.ExitUsage,
			stderr: []string{`queenctl: unknown command "queu" (did you mean "queue"?)`, "Run 'queenctl --help' for usage."}},
		{name: "UnknownFlag", args: []string{"queue", "list", "--colour"}, code: cli.ExitUsage,
			stderr: []string{"queenctl queue list: flag provided but not defined: -colour", "Run 'queenctl queue list --help'"}},
		{name: "BadOutput", args: []string{"queue", "list", "-o", "xml"}, code: cli.ExitUsage,
			stderr: []string{`queenctl queue list: --output "xml": want table, json or yaml`}},
		{name: "TooManyArguments", args: []string{"queue", "get", "a", "b"}, code: cli.ExitUsage,
			stderr: []string{"queenctl queue get: wrong number of arguments (2): want QUEUE"}},
		{name: "BadDuration", args: []string{"queue", "configure", "q", "--lease-time", "soon"}, code: cli.ExitUsage,
			stderr: []string{`invalid value "soon" for flag -lease-time: want a non-negative integer or a duration`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runQueenctl(t, []string{"QUEEN_SERVER=" + "http://127.0.0.1:1"}, "", tc.args...)
			require.Equal(t, tc.code, r.code, "%s", r)
			require.Contains(t, r.stdout, tc.stdout)
			for _, w := range tc.stderr {
				require.Contains(t, r.stderr, w)
			}
			if tc.code == 0 {
				require.Empty(t, r.stderr)
			}
		})
	}
}

func TestContexts(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	down := closedServer(t)
	cfg := filepath.Join(t.TempDir(), "queenctl.yaml")
	env := []string{"QUEENCTL_CONFIG=" + cfg}
	run := func(extra []string, args ...string) result {
		return runQueenctl(t, append(append([]string{}, env...), extra...), "", args...)
	}

	require.Equal(t, "No contexts in "+cfg+"; add one with 'queenctl context set NAME --server URL'.\n", ok(t, run(nil, "context", "list")))
	ok(t, run(nil, "context", "set", "local", "--server", strings.TrimPrefix(b.url, "http://")))
	ok(t, run(nil, "context", "set", "down", "--server", down, "--token", "s3cret"))
	rows := fields(ok(t, run(nil, "context", "list")))
	require.Equal(t, [][]string{{"CURRENT", "NAME", "SERVER", "TOKEN"}, {"*", "local", b.url, "no"}, {"down", down, "yes"}}, rows,
		"the first context becomes the current one")
	st, err := os.Stat(cfg)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the file may hold tokens")
	data, err := os.ReadFile(cfg)
	require.NoError(t, err)
	require.Contains(t, string(data), "current-context: local\ncontexts:\n  - name: local\n")
	require.NotContains(t, ok(t, run(nil, "context", "list", "-o", "json")), "s3cret", "tokens are never printed")

	// Precedence: --server > --context/QUEEN_CONTEXT > QUEEN_SERVER > current context.
	ok(t, run(nil, "ping"))
	fails(t, run(nil, "ping", "--context", "down"), cli.ExitUnavailable, "at "+down+" (context down)")
	fails(t, run([]string{"QUEEN_CONTEXT=down"}, "ping"), cli.ExitUnavailable, "(context down)")
	fails(t, run([]string{"QUEEN_SERVER=" + down}, "ping"), cli.ExitUnavailable, "(QUEEN_SERVER)")
	ok(t, run([]string{"QUEEN_CONTEXT=down"}, "ping", "--server", b.url))
	fails(t, run(nil, "ping", "--context", "nope"), cli.ExitUsage, `context "nope" (from --context) is not in the config file `+cfg)

	require.Equal(t, "Now using context down.\n", ok(t, run(nil, "context", "use", "down")))
	require.Equal(t, "down\n", ok(t, run(nil, "context", "current")))
	fails(t, run(nil, "queue", "list"), cli.ExitUnavailable, "(context down)")
	fails(t, run(nil, "context", "use", "nope"), cli.ExitNotFound, `no context "nope"`)
	require.Equal(t, "Deleted context down.\n", ok(t, run(nil, "context", "delete", "down")))
	fails(t, run(nil, "context", "current"), cli.ExitNotFound, "no current context")

	require.NoError(t, os.WriteFile(cfg, []byte("contexts: [oops\n"), 0o600))
	fails(t, run(nil, "ping"), cli.ExitUsage, "queenctl ping: config file "+cfg+": ")
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	bash := ok(t, runQueenctl(t, nil, "", "completion", "bash"))
	require.Contains(t, bash, "complete -o default -F _queenctl queenctl")
	require.Contains(t, bash, `"cg") opts="list get lag seek replay delete `)
	require.Contains(t, bash, `"dlq|retry") path="dlq retry" ;;`)
	if sh, err := exec.LookPath("bash"); err == nil {
		check := exec.Command(sh, "-n")
		check.Stdin = strings.NewReader(bash)
		out, err := check.CombinedOutput()
		require.NoError(t, err, "bash -n: %s", out)
	}
	require.Contains(t, ok(t, runQueenctl(t, nil, "", "completion", "zsh")), "#compdef queenctl\n")
	fish := ok(t, runQueenctl(t, nil, "", "completion", "fish"))
	require.Contains(t, fish, `complete -c queenctl -n "__fish_use_subcommand" -a tail -d "follow a queue's messages as they arrive, like tail -f"`)
	fails(t, runQueenctl(t, nil, "", "completion", "tcsh"), cli.ExitUsage, `shell "tcsh": want bash, zsh or fish`)
}
