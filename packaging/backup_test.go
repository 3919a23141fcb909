// Package packaging_test runs the packaged scripts against a real PostgreSQL.
package packaging_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
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
