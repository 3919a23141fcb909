package answerguard

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ListenProbeEvery is how long WaitForNotification waits for a notification, by
// default, before it checks that its server still answers.
const ListenProbeEvery = 30 * time.Second

// WaitForNotification waits for a notification on conn, as pgx's method does, and
// checks a quiet connection every every (0: ListenProbeEvery) with a SELECT 1: a server
// alive but silent (frozen, or an old primary paused while a standby took over) breaks
// no connection, and a listener left on it would hear nothing again. A check left
// unanswered for Grace has its socket closed and fails as a lost connection.
// Notifications that arrive during a check are not lost: pgx buffers them for the
// next wait.
func WaitForNotification(ctx context.Context, conn *pgx.Conn, every time.Duration) (*pgconn.Notification, error) {
	if every <= 0 {
		every = ListenProbeEvery
	}
	for {
		wait, cancel := context.WithTimeout(ctx, every)
		n, err := conn.WaitForNotification(wait)
		quiet := err != nil && wait.Err() != nil && ctx.Err() == nil
		cancel()
		if !quiet {
			return n, err
		}
		if err := probe(ctx, conn); err != nil {
			return nil, err
		}
	}
}

// probe runs SELECT 1 on conn, closing its socket if no answer comes within Grace.
func probe(ctx context.Context, conn *pgx.Conn) error {
	silent := time.AfterFunc(Grace, func() { _ = conn.PgConn().Conn().Close() })
	defer silent.Stop()
	_, err := conn.Exec(ctx, "SELECT 1")
	return err
}
