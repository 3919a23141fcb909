package main

import (
	"bytes"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/buildinfo"
	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/schema"
)

func TestRealMain(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name       string
		args       []string
		environ    []string
		wantCode   int
		wantStdout []string
		wantStderr []string
		// wantNotStdout: build helpers (-config-docs, -env-file) stay out of the manual.
		wantNotStdout []string
	}{
		{name: "Version", args: []string{"-version"}, wantCode: exitOK,
			wantStdout: []string{buildinfo.String()}},
		{name: "CheckConfigOK", args: []string{"-check-config"}, environ: []string{"PORT=7000"},
			wantCode: exitOK, wantStdout: []string{"configuration OK\n"}},
		{name: "CheckConfigPrintsWarnings", args: []string{"-check-config"}, environ: []string{"NUM_WORKERS=4"},
			wantCode: exitOK, wantStdout: []string{"configuration OK\n", "warning: NUM_WORKERS=\"4\" is accepted but unused"}},
		{name: "CheckConfigBadBoolean", args: []string{"-check-config"},
			environ:  []string{"PG_USE_SSL=ture", "DB_POOL_SIZE=abc"},
			wantCode: exitConfig,
			wantStderr: []string{`config: PG_USE_SSL="ture": not a boolean`,
				`config: DB_POOL_SIZE="abc": not an integer`}},
		{name: "CheckConfigRefusesAKeyTheVerifierRefuses", args: []string{"-check-config"},
			environ:  []string{"JWT_ENABLED=true", "JWT_ALGORITHM=RS256", "JWT_PUBLIC_KEY=" + testEd25519PublicKey},
			wantCode: exitConfig, wantStderr: []string{"config: unsupported configuration: JWT_PUBLIC_KEY is an Ed25519 key"},
			wantNotStdout: []string{"configuration OK"}},
		{name: "CheckConfigPrintsTheVerifiersWarnings", args: []string{"-check-config"},
			environ:  []string{"JWT_ENABLED=true", "JWT_SECRET=short"},
			wantCode: exitOK, wantStdout: []string{"configuration OK\n", "warning: JWT_SECRET is shorter than"}},
		{name: "PrintConfig", args: []string{"-print-config"}, environ: []string{"PG_PASSWORD=hunter2"},
			wantCode: exitOK, wantStdout: []string{"PG_PASSWORD=<redacted>  # env\n", "PORT=6632  # default\n"}},
		{name: "PrintConfigHidesAURLsPassword", args: []string{"-print-config"},
			environ:  []string{"JWT_JWKS_URL=https://jwks:s3cretpw@idp.example.com/jwks.json"},
			wantCode: exitOK, wantStdout: []string{"JWT_JWKS_URL=https://jwks:xxxxx@idp.example.com/jwks.json  # env\n"},
			wantNotStdout: []string{"s3cretpw"}},
		{name: "PrintConfigInvalid", args: []string{"-print-config"}, environ: []string{"PORT=x"},
			wantCode: exitConfig, wantStderr: []string{`config: PORT="x": not an integer`}},
		{name: "PrintConfigWarnsAboutUnknownVariables", args: []string{"-print-config"}, environ: []string{"QUEEN_PORT=1"},
			wantCode: exitOK, wantStdout: []string{"PORT=6632  # default\n"},
			wantStderr: []string{"warning: config: QUEEN_PORT: unknown variable, ignored (named like a Kubernetes " +
				"service-link variable, but its value is not one); did you mean PORT?\n"}},
		{name: "CheckConfigUnknownVariableFails", args: []string{"-check-config"},
			environ: []string{"QUEEN_LOG_FROMAT=text", "NUM_WORKERS=4"}, wantCode: exitConfig,
			wantStdout: []string{"warning: NUM_WORKERS=\"4\" is accepted but unused"},
			wantStderr: []string{"config: QUEEN_LOG_FROMAT: unknown variable, ignored; did you mean QUEEN_LOG_FORMAT?\n",
				"the daemon would start, but it would warn about the 1 unknown QUEEN_* or OTEL_* variable(s) above"},
			wantNotStdout: []string{"configuration OK"}},
		{name: "CheckConfigMissingDashboardDirectory", args: []string{"-check-config"},
			environ: []string{"WEBAPP_ROOT=/nonexistent/queen-dashboard", "QUEEN_LOG_FROMAT=text"}, wantCode: exitConfig,
			wantStderr: []string{`config: WEBAPP_ROOT="/nonexistent/queen-dashboard": dashboard directory:`,
				"config: QUEEN_LOG_FROMAT: unknown variable"}, // every problem, not the first
			wantNotStdout: []string{"configuration OK"}},
		{name: "CheckConfigSpoolUnderAFile", args: []string{"-check-config"},
			environ: []string{"FILE_BUFFER_DIR=main.go/buffers"}, wantCode: exitConfig, // a file of this package
			wantStderr:    []string{`config: FILE_BUFFER_DIR="main.go/buffers": main.go is not a directory`},
			wantNotStdout: []string{"configuration OK"}},
		{name: "CheckConfigNumericHost", args: []string{"-check-config"}, environ: []string{"HOST=999.1.1.1"},
			wantCode: exitConfig, wantStderr: []string{`config: HOST="999.1.1.1": not an IP address, nor a host name`}},
		{name: "CheckConfigDashboardDirectoryWithoutIndex", args: []string{"-check-config"},
			environ: []string{"WEBAPP_ROOT=."}, wantCode: exitConfig, // this package's directory
			wantStderr: []string{`config: WEBAPP_ROOT=".": dashboard files have no index.html`}},
		{name: "CheckConfigIgnoresServiceLinks", args: []string{"-check-config"},
			environ: []string{"QUEEN_PORT=tcp://10.0.0.1:6632", "QUEEN_SERVICE_HOST=10.0.0.1", "QUEEN_SERVICE_PORT=6632",
				"QUEEN_PORT_6632_TCP=tcp://10.0.0.1:6632", "QUEEN_PORT_6632_TCP_ADDR=10.0.0.1"},
			wantCode: exitOK, wantStdout: []string{"configuration OK\n"}},
		{name: "CheckConfigInvalidValueNamesUnknownVariablesToo", args: []string{"-check-config"},
			environ: []string{"PG_USE_SSL=ture", "QUEEN_SHUTDOWN_TIMOUT=1s"}, wantCode: exitConfig,
			wantStderr: []string{`config: PG_USE_SSL="ture": not a boolean`,
				"warning: config: QUEEN_SHUTDOWN_TIMOUT: unknown variable, ignored; did you mean QUEEN_SHUTDOWN_TIMEOUT?"}},
		{name: "CheckConfigUnknownVariableWithoutHint", args: []string{"-check-config"},
			environ: []string{"QUEEN_TOTALLY_DIFFERENT=1"}, wantCode: exitConfig,
			wantStderr: []string{"config: QUEEN_TOTALLY_DIFFERENT: unknown variable, ignored\n"}},
		{name: "ServeWithBadConfigNeverStarts", args: nil, environ: []string{"LOG_LEVEL=loud"},
			wantCode: exitConfig, wantStderr: []string{`config: LOG_LEVEL="loud"`}},
		{name: "ServeSubcommandWithBadConfig", args: []string{"serve"}, environ: []string{"PORT=x"},
			wantCode: exitConfig, wantStderr: []string{`config: PORT="x"`}},
		{name: "SchemaSubcommand", args: []string{"schema"}, wantCode: exitOK, wantStdout: []string{schema.Script()}},
		{name: "PrintSchemaFlag", args: []string{"-print-schema"}, wantCode: exitOK, wantStdout: []string{schema.Script()}},
		{name: "ConfigDocs", args: []string{"-config-docs"}, wantCode: exitOK, wantStdout: []string{config.Markdown()}},
		{name: "ConfigDocsIgnoresBadEnvironment", args: []string{"-config-docs"}, environ: []string{"PORT=x"},
			wantCode: exitOK, wantStdout: []string{"# Configuration"}},
		{name: "Help", args: []string{"-h"}, wantCode: exitOK,
			wantStdout: []string{"NAME\n       queen - ", "SYNOPSIS", "ENVIRONMENT", "NOTIFY_SOCKET", "LISTEN_FDS",
				"WATCHDOG_USEC", "SIGNALS", "SIGHUP", "QUEEN_ENV_FILES", "FILES", "/etc/queen/queen.env", "EXIT STATUS", "RestartPreventExitStatus=78"},
			wantNotStdout: []string{"config-docs", "env-file"}},
		{name: "LongHelp", args: []string{"--help"}, wantCode: exitOK, wantStdout: []string{"SYNOPSIS"}},
		{name: "HelpHidesConfigDocs", args: []string{"-help"}, wantCode: exitOK, wantNotStdout: []string{"config-docs", "env-file"}},
		{name: "EnvFile", args: []string{"-env-file"}, wantCode: exitOK, wantStdout: []string{config.EnvFile()}},
		{name: "UnknownFlag", args: []string{"-nope=1"}, wantCode: exitUsage,
			wantStderr: []string{"flag provided but not defined: -nope"}},
		{name: "UpstreamFlagsOverrideTheEnvironment", args: []string{"--port", "7000", "--host", "127.0.0.1", "--dev", "-print-config"},
			environ: []string{"PORT=6000", "HOST=0.0.0.0", "LOG_LEVEL=warn"}, wantCode: exitOK,
			wantStdout: []string{"PORT=7000  # flag\n", "HOST=127.0.0.1  # flag\n", "LOG_LEVEL=debug  # flag\n"}},
		{name: "DevFalseLeavesTheLogLevel", args: []string{"--dev=false", "-print-config"},
			environ: []string{"LOG_LEVEL=warn"}, wantCode: exitOK, wantStdout: []string{"LOG_LEVEL=warn  # env\n"}},
		{name: "PortFlagIsValidated", args: []string{"--port", "0", "-check-config"}, wantCode: exitConfig,
			wantStderr: []string{`config: PORT="0": must be between 1 and 65535`}},
		{name: "UnknownCommand", args: []string{"migrate"}, wantCode: exitUsage,
			wantStderr: []string{`unexpected arguments ["migrate"]`}},
		{name: "TwoActions", args: []string{"-version", "-check-config"}, wantCode: exitUsage,
			wantStderr: []string{"one command or flag at a time"}},
		{name: "FlagAndCommand", args: []string{"-version", "schema"}, wantCode: exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := realMain(tc.args, tc.environ, &stdout, &stderr)
			require.Equal(t, tc.wantCode, code, "stdout:\n%s\nstderr:\n%s", &stdout, &stderr)
			for _, want := range tc.wantStdout {
				require.Contains(t, stdout.String(), want)
			}
			for _, want := range tc.wantStderr {
				require.Contains(t, stderr.String(), want)
			}
			require.NotContains(t, stdout.String()+stderr.String(), "hunter2")
			require.NotContains(t, stderr.String(), "config-docs")
			for _, unwanted := range tc.wantNotStdout {
				require.NotContains(t, stdout.String(), unwanted)
			}
		})
	}
}

// TestBinary builds the real binary, stamped through -ldflags as `make build` does,
// and checks what the shell and systemd see: output and exit status.
func TestBinary(t *testing.T) {
	t.Parallel()

	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go tool must be on PATH")
	bin := filepath.Join(t.TempDir(), "queen")
	build := exec.Command(goTool, "build", "-o", bin,
		"-ldflags", "-X github.com/queenmq/queen/internal/buildinfo.Version=9.9.9-test", ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build:\n%s", out)

	run := func(t *testing.T, environ []string, args ...string) (code int, stdout, stderr string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = environ
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return exitErr.ExitCode(), o.String(), e.String()
		}
		require.NoError(t, err)
		return 0, o.String(), e.String()
	}

	t.Run("VersionIsStamped", func(t *testing.T) {
		t.Parallel()
		code, stdout, _ := run(t, nil, "-version")
		require.Equal(t, exitOK, code)
		require.True(t, strings.HasPrefix(stdout, "queen 9.9.9-test ("), stdout)
	})
	t.Run("CheckConfigExits78NamingTheVariable", func(t *testing.T) {
		t.Parallel()
		code, stdout, stderr := run(t, []string{"JWT_ENABLED=ture"}, "-check-config")
		require.Equal(t, exitConfig, code)
		require.Empty(t, stdout)
		require.Contains(t, stderr, `config: JWT_ENABLED="ture": not a boolean`)
	})
	t.Run("UsageErrorExits2", func(t *testing.T) {
		t.Parallel()
		code, _, stderr := run(t, nil, "-no-such-flag")
		require.Equal(t, exitUsage, code)
		require.Contains(t, stderr, "Usage: queen")
	})
}

// testEd25519PublicKey is an Ed25519 public key in PEM, which RS256 cannot use.
const testEd25519PublicKey = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAhRLFooTQE4rUhiPQGwWYLzx7XU8erwd93hALH2aYXbg=\n-----END PUBLIC KEY-----\n"

// TestDaemonRefusesASpoolUnderAFileAs78 checks that the daemon refuses what
// -check-config refuses, with the same status, before it needs PostgreSQL (none
// listens on PG_PORT=1).
func TestDaemonRefusesASpoolUnderAFileAs78(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	var stdout, stderr bytes.Buffer
	code := realMain(nil, []string{"FILE_BUFFER_DIR=main.go/buffers", "HOST=127.0.0.1",
		"PORT=" + strconv.Itoa(port), "PG_PORT=1", "QUEEN_LOG_FORMAT=text"}, &stdout, &stderr)
	require.Equal(t, exitConfig, code, "stderr: %s", stderr.String())
	require.Contains(t, stderr.String(), `config: FILE_BUFFER_DIR="main.go/buffers": main.go is not a directory`)
}
