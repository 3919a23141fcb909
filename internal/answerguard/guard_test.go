package answerguard_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/answerguard"
)

// TestInstall: a deadline installs the guard as the pool's tracer and bounds the
// pool's ping; none installs nothing (the internal tests and the store's run it
// against a frozen PostgreSQL).
func TestInstall(t *testing.T) {
	cfg, err := pgxpool.ParseConfig("postgres://u@127.0.0.1:1/db")
	require.NoError(t, err)
	require.Zero(t, answerguard.Deadline(0))
	require.Equal(t, 35*time.Second, answerguard.Deadline(30*time.Second))
	require.Nil(t, answerguard.Install(cfg, 0, nil))
	require.Nil(t, cfg.ConnConfig.Tracer)
	require.Zero(t, cfg.PingTimeout)
	require.Zero(t, (*answerguard.Guard)(nil).Closed())

	g := answerguard.Install(cfg, 6*time.Second, nil)
	require.NotNil(t, g)
	require.Same(t, g, cfg.ConnConfig.Tracer)
	require.Equal(t, answerguard.Grace, cfg.PingTimeout)
	require.NotNil(t, cfg.ShouldPing, "the guard pings idle connections itself and drops the ones it closed")
	require.Nil(t, cfg.AfterRelease, "pgxpool would release every connection from a goroutine of its own")
	require.NotNil(t, cfg.AfterConnect, "a new connection ends a silence")
	answerguard.Install(cfg, 2*time.Second, nil)
	require.Equal(t, 2*time.Second, cfg.PingTimeout, "the ping waits no longer than a statement")
	require.Zero(t, g.Closed())
}
