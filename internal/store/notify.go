package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/answerguard"
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

// The advisory lock (two int4 keys, "quen" "wake") that every replica's wake-up
// listener holds in shared mode on its connection while it listens. pg_locks, which
// every role may read, then tells a replica whether another replica of its database
// listens: a replica alone sends no NOTIFY, whose commit costs a WAL flush of its own
// and takes a database-wide lock. Being a session lock on the listening connection, it
// goes when that connection goes.
const (
	wakeListenerClass = 0x7175656e
	wakeListenerObj   = 0x77616b65
)

// WakeListenerLocks is a condition on pg_locks (as l) that matches the locks the
// wake-up listeners hold (the keys above, in hex), one per listening replica
// (l.database tells the database).
const WakeListenerLocks = `l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
      AND l.classid = x'7175656e'::int::oid AND l.objid = x'77616b65'::int::oid`

const sqlOtherWakeListeners = `SELECT EXISTS (
    SELECT 1 FROM pg_locks l
    WHERE ` + WakeListenerLocks + `
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.pid <> $1)`

// OtherWakeListeners reports whether a wake-up listener other than this store's own
// listens on the database: another replica, whose parked pops a NOTIFY would wake.
func (s *Store) OtherWakeListeners(ctx context.Context) (bool, error) {
	var others bool
	err := s.pool.QueryRow(ctx, sqlOtherWakeListeners, int32(s.listenerPID.Load())).Scan(&others)
	return others, interpretError(err)
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
	// ProbeEvery is how long the listener waits for a notification before it checks
	// that its server still answers (0: every 30 s).
	ProbeEvery time.Duration
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
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock_shared($1::int, $2::int)`, wakeListenerClass, wakeListenerObj); err != nil {
		return err
	}
	s.listenerPID.Store(conn.PgConn().PID())
	defer s.listenerPID.Store(0)
	if h.ConnectedFunc != nil {
		h.ConnectedFunc()
	}
	for {
		// A quiet connection is checked every ProbeEvery; a failed check reconnects, to
		// the writable server.
		n, err := answerguard.WaitForNotification(ctx, conn, h.ProbeEvery)
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
