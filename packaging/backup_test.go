// Package packaging_test runs the packaged scripts against a real PostgreSQL.
package packaging_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/schema"
)

// TestBackupConnectsAsTheBrokerDoes runs queen-backup with the broker's PostgreSQL
// settings against a server with TLS: a host list whose first host is down, the
// writable-server check, and PG_USE_SSL verifying the server against PG_SSL_ROOT_CERT
// given as PEM text (as an env file holds it, "\n" for line breaks). The right CA gives
// a dump; another CA, or a certificate for another host name, is refused, as the
// broker refuses them.
func TestBackupConnectsAsTheBrokerDoes(t *testing.T) {
	t.Parallel()
	bindir := pgBindir(t)
	ca := pgtest.NewCA(t)
	cert, key := ca.Issue(t, "127.0.0.1")
	pg := pgtest.StartTLSCluster(t, pgtest.TLSOptions{CertPEM: cert, KeyPEM: key,
		HBA: []string{"hostssl all all 127.0.0.0/8 trust"}, ListenAddresses: []string{"127.0.0.1", "127.0.0.2"}})
	conn, err := pgx.Connect(t.Context(), pg.SocketDSN())
	require.NoError(t, err)
	_, err = conn.Exec(t.Context(), `CREATE SCHEMA queen; CREATE TABLE queen.messages (x int)`)
	require.NoError(t, err)
	require.NoError(t, conn.Close(context.WithoutCancel(t.Context())))

	run := func(hosts string, caPEM []byte) (string, string, error) {
		dir := t.TempDir()
		cmd := exec.CommandContext(t.Context(), "sh", "queen-backup.sh")
		cmd.Env = []string{
			"PATH=" + bindir + ":" + os.Getenv("PATH"),
			"BACKUP_DIR=" + filepath.Join(dir, "backups"), "RUNTIME_DIRECTORY=" + dir,
			"PG_HOST=" + hosts, "PG_PORT=" + strconv.Itoa(pg.Port()),
			"PG_USER=postgres", "PG_PASSWORD=", "PG_DATABASE=postgres",
			"PG_USE_SSL=true", "PG_SSL_ROOT_CERT=" + strings.ReplaceAll(string(caPEM), "\n", `\n`),
		}
		out, err := cmd.CombinedOutput()
		return dir, string(out), err
	}

	dir, out, err := run("127.0.0.9,127.0.0.1", ca.CertPEM)
	require.NoError(t, err, out)
	dumps, err := filepath.Glob(filepath.Join(dir, "backups", "queen-*.dump"))
	require.NoError(t, err)
	require.Len(t, dumps, 1, out)

	_, out, err = run("127.0.0.1", pgtest.NewCA(t).CertPEM)
	require.Error(t, err, "a server whose certificate another CA signed was accepted:\n%s", out)
	require.Contains(t, out, "certificate verify failed", out)

	_, out, err = run("127.0.0.2", ca.CertPEM)
	require.Error(t, err, "a server whose certificate names another host was accepted:\n%s", out)
	require.Contains(t, out, "does not match host name", out)
}

// TestBackupReadsBooleansAsTheBrokerDoes: a PG_USE_SSL or PG_SSL_REJECT_UNAUTHORIZED
// the broker would refuse (it stops with status 78) stops the backup too, naming the
// variable, before anything connects; the broker's spellings pass in any case.
func TestBackupReadsBooleansAsTheBrokerDoes(t *testing.T) {
	t.Parallel()
	run := func(env ...string) (string, int) {
		dir := t.TempDir()
		cmd := exec.CommandContext(t.Context(), "sh", "queen-backup.sh")
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "BACKUP_DIR=" + filepath.Join(dir, "backups"),
			"RUNTIME_DIRECTORY=" + dir, "PG_HOST=127.0.0.1", "PG_PORT=1"}, env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return string(out), code
	}
	for _, env := range [][]string{{"PG_USE_SSL=t"}, {"PG_USE_SSL=y"}, {"PG_USE_SSL=ture"},
		{"PG_USE_SSL=TRUE", "PG_SSL_REJECT_UNAUTHORIZED=nope"}} {
		out, code := run(env...)
		name, value, _ := strings.Cut(env[len(env)-1], "=")
		require.Equal(t, 2, code, "%v: %s", env, out)
		require.Contains(t, out, "queen-backup: "+name+"="+value+" is not a boolean", env)
	}
	// The broker's spellings pass the check (and the run fails later: nothing listens on port 1).
	for _, v := range []string{"ON", "off", "1", "No", ""} {
		out, code := run("PG_USE_SSL=" + v)
		require.NotEqual(t, 2, code, "PG_USE_SSL=%q: %s", v, out)
		require.NotContains(t, out, "is not a boolean", v)
	}
}

// pgBindir finds the PostgreSQL client binaries (pg_dump, pg_restore) the script runs.
func pgBindir(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("pg_dump"); err == nil {
		return filepath.Dir(p)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "pg_dump")); err == nil {
			return dirs[i]
		}
	}
	t.Skip("no pg_dump: install PostgreSQL's client binaries")
	return ""
}

// TestBackupRestoresABroker dumps a broker's database with queen-backup, restores the
// dump into an empty database the way docs/backup.md says, and starts a broker on it:
// the dump holds every schema the broker's DDL creates, and the restored broker has
// the messages and the stream query, and deletes a queue (which touches the streams'
// tables).
func TestBackupRestoresABroker(t *testing.T) {
	t.Parallel()
	bindir := pgBindir(t)
	src := daemontest.Start(t, daemontest.Options{})
	c := &http.Client{Timeout: 10 * time.Second}
	call := func(base, method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(raw)
	}
	code, raw := call(src.URL, http.MethodPost, "/api/v1/push",
		`{"items":[{"queue":"kept","payload":{"n":1}},{"queue":"gone","payload":{"n":2}}]}`)
	require.Equal(t, http.StatusCreated, code, raw)
	code, raw = call(src.URL, http.MethodPost, "/streams/v1/queries",
		`{"name":"totals","source_queue":"kept","sink_queue":"sums","config_hash":"h1"}`)
	require.Equal(t, http.StatusOK, code, raw)

	u, err := url.Parse(src.DBURL)
	require.NoError(t, err)
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "sh", "queen-backup.sh")
	cmd.Env = []string{"PATH=" + bindir + ":" + os.Getenv("PATH"),
		"BACKUP_DIR=" + filepath.Join(dir, "backups"), "RUNTIME_DIRECTORY=" + dir,
		"PG_HOST=" + u.Hostname(), "PG_PORT=" + u.Port(), "PG_USER=" + u.User.Username(), "PG_PASSWORD=",
		"PG_DATABASE=" + strings.TrimPrefix(u.Path, "/")}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	dumps, err := filepath.Glob(filepath.Join(dir, "backups", "queen-*.dump"))
	require.NoError(t, err)
	require.Len(t, dumps, 1, "%s", out)
	list, err := exec.CommandContext(t.Context(), filepath.Join(bindir, "pg_restore"), "--list", dumps[0]).Output()
	require.NoError(t, err)
	for _, s := range schema.Schemas() {
		require.Contains(t, string(list), " SCHEMA - "+s+" ", "the dump holds the schema %s", s)
	}

	// Restore into an empty database, as the restore steps do.
	target := pgtest.NewDBURL(t)
	conn, err := pgx.Connect(t.Context(), target)
	require.NoError(t, err)
	_, err = conn.Exec(t.Context(), `DROP SCHEMA queen, queen_streams CASCADE`)
	require.NoError(t, err)
	require.NoError(t, conn.Close(context.WithoutCancel(t.Context())))
	tu, err := url.Parse(target)
	require.NoError(t, err)
	restore := exec.CommandContext(t.Context(), filepath.Join(bindir, "pg_restore"), "--no-owner",
		"-h", tu.Hostname(), "-p", tu.Port(), "-U", tu.User.Username(), "-d", strings.TrimPrefix(tu.Path, "/"), dumps[0])
	out, err = restore.CombinedOutput()
	require.NoError(t, err, "%s", out)

	dst := daemontest.Start(t, daemontest.Options{DBURL: target})
	code, raw = call(dst.URL, http.MethodGet, "/api/v1/pop/queue/kept?wait=false", "")
	require.Equal(t, http.StatusOK, code, raw)
	require.Contains(t, raw, `"n":1`)
	code, raw = call(dst.URL, http.MethodGet, "/streams/v1/queries", "")
	require.Equal(t, http.StatusOK, code, raw)
	require.Contains(t, raw, `"totals"`)
	code, raw = call(dst.URL, http.MethodDelete, "/api/v1/resources/queues/gone", "")
	require.Equal(t, http.StatusOK, code, raw)
}
