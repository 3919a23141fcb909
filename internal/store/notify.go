package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// WakeChannel is the LISTEN/NOTIFY channel on which replicas announce queues that got
// new messages. The payload is the queue name. A replica's listener skips the
// notifications its own pool sent: its pushes wake its own waiters in-process, and a
// second wake would only re-run every parked claim for nothing.
const WakeChannel = "queen_wake"

// QueueNotify announces, after their commit, that queues got new messages. One
// statement for the whole set; PostgreSQL delivers to every listening replica.
func (s *Store) QueueNotify(ctx context.Context, queues []string) error {
	_, err := s.pool.Exec(ctx, `SELECT pg_notify('`+WakeChannel+`', q) FROM unnest($1::text[]) AS q`, queues)
	return interpretError(err)
}

// ListenHandlers receive what the wake-up listener hears.
type ListenHandlers struct {
	// NotifyFunc gets each announced queue name.
	NotifyFunc func(queue string)
	// ConnectedFunc is called after every (re)connection: notifications sent while the
	// listener was away are lost, so callers re-check everything they wait for.
	ConnectedFunc func()
	// ErrorFunc is called when the connection fails and before the next attempt.
	ErrorFunc func(err error, retryIn time.Duration)
}

// Listen holds one dedicated connection (outside the pool) listening on WakeChannel
// until ctx is done, reconnecting with a capped backoff after any failure (a database
// restart, a network cut).
func (s *Store) Listen(ctx context.Context, h ListenHandlers) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, h)
		if ctx.Err() != nil {
			return
		}
		if h.ErrorFunc != nil {
			h.ErrorFunc(interpretError(err), backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (s *Store) listenOnce(ctx context.Context, h ListenHandlers) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+WakeChannel); err != nil {
		return err
	}
	if h.ConnectedFunc != nil {
		h.ConnectedFunc()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if _, self := s.own.Load(n.PID); self {
			continue // sent by this replica, whose pushes woke its own waiters in-process
		}
		if n.Channel == WakeChannel && h.NotifyFunc != nil {
			h.NotifyFunc(n.Payload)
		}
	}
}
