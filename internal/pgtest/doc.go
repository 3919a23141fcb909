// Package pgtest gives tests a real, isolated PostgreSQL database. It is a test-only
// package: never import it from non-test code.
//
// The server is one throwaway cluster per test run, started outside go test by
// scripts/pgtest.sh (make test does this), which exports QUEEN_TEST_DATABASE_URL, a
// postgres:// URL of a superuser connection to the cluster's maintenance database.
// Reading that variable in URL is the single exception to the rule that only the
// config package calls os.Getenv: it configures the test harness, not the broker.
//
// Which helper to use:
//
//   - NewDB returns a 4-connection pool on a fresh database of its own, cloned from a
//     template that already has the schema applied. Use it for queries, several
//     connections, advisory locks, LISTEN/NOTIFY, SKIP LOCKED races, maintenance, the
//     broker or HTTP handlers. Advisory locks and NOTIFY channels are scoped to one
//     database, so parallel tests never see each other's.
//   - NewDBURL is NewDB without the pool: it returns the database's URL, for tests that
//     open their own pool (store.Open) or run a whole daemon (internal/daemontest).
//   - URL returns QUEEN_TEST_DATABASE_URL itself, for the rare test that needs the
//     maintenance database (creating databases, server settings).
//
// Every helper skips the test under go test -short and fails it, never skips it, when
// QUEEN_TEST_DATABASE_URL is unset: a test that silently skips in CI does not exist.
//
// Databases. The template is queen_tmpl_<schema.Version()>, so a schema change gets
// a new template automatically. go test ./... runs packages as parallel processes,
// so the template is built under a session advisory lock held on one dedicated
// connection, in a database named queen_tmpl_<version>_build that is renamed only
// once the schema is applied: a database named queen_tmpl_<version> is always
// complete. Each NewDB or NewDBURL database is queen_t_<random>, created with
// CREATE DATABASE … TEMPLATE … STRATEGY FILE_COPY (PostgreSQL 15+). It is dropped
// WITH (FORCE) when the test passes; when the test fails it is kept and its URL is
// logged, so that it can be inspected with psql while the cluster still runs
// (scripts/pgtest.sh start, or make pg-start, keeps a cluster running).
package pgtest
