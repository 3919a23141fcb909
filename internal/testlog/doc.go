// Package testlog gives tests somewhere to send logs: each line to t.Log, or into a
// buffer that the test reads while other goroutines or processes write to it. It is a
// test-only package: never import it from non-test code.
//
// It imports nothing of queen, so that the tests of any package can use it, including
// internal tests of the packages that internal/daemontest builds on (schema, auth,
// httpapi), which could not import daemontest without an import cycle.
//
// Which helper to use:
//
//   - Writer sends every write to t.Log until the test ends: the output of a daemon or
//     a component that the test only shows when it fails (go test -v shows it always).
//   - Logger is a text slog.Logger at Debug over Writer, for a component that takes a
//     *slog.Logger.
//   - Buffer keeps what is written, for a test that asserts on log lines or on the
//     output of a child process (exec.Cmd copies stdout and stderr from goroutines of
//     its own).
package testlog
