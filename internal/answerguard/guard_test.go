package answerguard_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/answerguard"
)

// TestInstall: a statement timeout installs the guard as the pool's tracer and bounds
// the pool's ping; none installs nothing (the store's tests run it against a frozen
// PostgreSQL).
func TestInstall(t *testing.T) {
	cfg, err := pgxpool.ParseConfig("postgres://u@127.0.0.1:1/db")
	require.NoError(t, err)
	require.Nil(t, answerguard.Install(cfg, 0, nil))
	require.Nil(t, cfg.ConnConfig.Tracer)
	require.Zero(t, cfg.PingTimeout)
	require.Zero(t, (*answerguard.Guard)(nil).Closed())

	g := answerguard.Install(cfg, time.Second, nil)
	require.NotNil(t, g)
	require.Same(t, g, cfg.ConnConfig.Tracer)
	require.Equal(t, answerguard.Grace, cfg.PingTimeout)
	require.Zero(t, g.Closed())
}
