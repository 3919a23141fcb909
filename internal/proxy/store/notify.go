package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/answerguard"
)

// AuthChannel is the LISTEN/NOTIFY channel of authentication changes. Payloads are
// "key:<id>", "tenant:<id>", "user:<username>" and "session:<id>".
const AuthChannel = "queen_proxy_auth"

// ListenerApplicationName is the application_name of the listener's connection, so
// that an operator (or a test) can find it in pg_stat_activity.
const ListenerApplicationName = "queen-proxy-listener"

func notify(ctx context.Context, tx pgx.Tx, payload string) error {
	_, err := tx.Exec(ctx, `SELECT pg_notify('`+AuthChannel+`', $1)`, payload)
	return err
}

// ListenHandlers receive what the auth listener hears.
type ListenHandlers struct {
	// NotifyFunc gets each payload.
	NotifyFunc func(payload string)
	// ConnectedFunc is called after every (re)connection, LISTEN done.
	ConnectedFunc func()
	// LostFunc is called when the connection is lost: notifications may have been
	// missed from then on.
	LostFunc func(err error)
	// ProbeEvery is how long the listener waits for a notification before it checks
	// that its server still answers (0: every 30 s).
	ProbeEvery time.Duration
}

// Listen holds one dedicated connection (outside the pool) listening on AuthChannel
// until ctx is done, reconnecting with a capped backoff after any failure.
func (s *Store) Listen(ctx context.Context, h ListenHandlers) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		connected, err := s.listenOnce(ctx, h)
		if ctx.Err() != nil {
			return
		}
		if h.LostFunc != nil {
			h.LostFunc(interpretError(err))
		}
		if connected {
			backoff = 100 * time.Millisecond
		}
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

func (s *Store) listenOnce(ctx context.Context, h ListenHandlers) (bool, error) {
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = ListenerApplicationName
	delete(cfg.RuntimeParams, "statement_timeout")
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+AuthChannel); err != nil {
		return false, err
	}
	if h.ConnectedFunc != nil {
		h.ConnectedFunc()
	}
	for {
		// A quiet connection is checked every ProbeEvery; a failed check loses the
		// connection (revocations may be missed), and the listener connects again.
		n, err := answerguard.WaitForNotification(ctx, conn, h.ProbeEvery)
		if err != nil {
			return true, err
		}
		if h.NotifyFunc != nil {
			h.NotifyFunc(n.Payload)
		}
	}
}
