package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
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

// listenProbeEvery is the default of ListenHandlers.ProbeEvery.
const listenProbeEvery = 30 * time.Second

// listenProbeTimeout bounds the wait for the check's answer, as the pool's ping of an
// idle connection is bounded (answerguard.Grace). The listener's connection has no
// statement_timeout, and the answer guard, which it inherits only when the pool has
// one, would wait longer: the check bounds itself.
const listenProbeTimeout = 5 * time.Second

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
	probeEvery := h.ProbeEvery
	if probeEvery <= 0 {
		probeEvery = listenProbeEvery
	}
	for {
		// A quiet connection is checked now and then: a server that is alive but
		// silent (frozen, or an old primary paused while a standby took over) breaks
		// no connection, and a listener left on it would hear no revocation again. A
		// check unanswered within listenProbeTimeout loses the connection, and the
		// listener connects again. Notifications that arrive during the check are
		// not lost: pgx buffers them for the next WaitForNotification.
		wait, cancel := context.WithTimeout(ctx, probeEvery)
		n, err := conn.WaitForNotification(wait)
		quiet := err != nil && wait.Err() != nil && ctx.Err() == nil
		cancel()
		if quiet {
			if err := probe(ctx, conn); err != nil {
				return true, err
			}
			continue
		}
		if err != nil {
			return true, err
		}
		if h.NotifyFunc != nil {
			h.NotifyFunc(n.Payload)
		}
	}
}

// probe checks that the server answers a statement within listenProbeTimeout.
func probe(ctx context.Context, conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, listenProbeTimeout)
	defer cancel()
	_, err := conn.Exec(ctx, "SELECT 1")
	return err
}
