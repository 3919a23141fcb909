package daemontest

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// PGEnv returns the PG_* variables that point the daemon at the database of dbURL, a
// postgres:// URL such as pgtest.NewDBURL returns.
func PGEnv(t testing.TB, dbURL string) []string {
	t.Helper()
	env, err := pgEnv(dbURL)
	if err != nil {
		t.Fatalf("daemontest: %v", err)
	}
	return env
}

func pgEnv(dbURL string) ([]string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return nil, fmt.Errorf("parse the database URL: %w", err)
	}
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	env := []string{"PG_HOST=" + u.Hostname(), "PG_PORT=" + port, "PG_DB=" + strings.TrimPrefix(u.Path, "/")}
	if u.User != nil {
		env = append(env, "PG_USER="+u.User.Username())
		if pw, ok := u.User.Password(); ok {
			env = append(env, "PG_PASSWORD="+pw)
		}
	}
	if u.Query().Get("sslmode") == "require" {
		// Encrypted but not verified: PG_USE_SSL=true alone verifies the server.
		env = append(env, "PG_USE_SSL=true", "PG_SSL_REJECT_UNAUTHORIZED=false")
	}
	return env, nil
}
