// Package daemontest runs whole queen daemons (daemon.Run) in a test process, the way
// nats-server's tests use RunServer: a fresh listener on 127.0.0.1:0, a fresh database
// of its own (pgtest.NewDBURL), logs to t.Log, a wait for readiness, and a cleanup that
// stops the daemon and requires a clean return. It is a test-only package: never import
// it from non-test code.
//
// Which helper to use:
//
//   - Start returns a ready Server and fails the test if the daemon does not become
//     ready. Options vary what the tests of the daemon, the CLI and the checker need:
//     extra variables (Env), an existing database (DBURL) or none (NoDatabase), the
//     spool directory, the listener, captured logs, a systemd notifier, a reload
//     channel, and not waiting for readiness (NoWait).
//   - Launch is Start for code that must not fail the test itself, such as a restart
//     run by the checker on a goroutine of its own: it returns the error instead.
//   - StartError runs a daemon that must refuse to start and returns daemon.Run's
//     error.
//   - PGEnv turns a postgres:// URL into the daemon's PG_* variables, for a daemon
//     started as a child process (the queen binary, a re-executed test binary).
//
// Readiness is the daemon's own signal (daemon.Options.ReadyFunc), after which GET
// /health/ready must answer 200: the two must agree. The stop, in the cleanup or by
// Server.Stop, cancels daemon.Run's context and requires Run to return nil within the
// configured drain (QUEEN_SHUTDOWN_DELAY plus QUEEN_SHUTDOWN_TIMEOUT) and a small
// margin for closing the spool and the pool.
//
// Environment. Start gives config.Load the test's Env first, then the database's PG_*
// variables, then HOST=127.0.0.1, LOG_LEVEL=warn, DB_POOL_SIZE=8 and FILE_BUFFER_DIR
// (a fresh directory: the default one is shared and locked). config.Load keeps the
// first occurrence of a name, so Env overrides everything Start adds.
package daemontest
