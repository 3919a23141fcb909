package heartbeat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/maintenance"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// Timing of the heartbeat.
const (
	// Interval is how often a replica writes its row.
	Interval = 5 * time.Second
	// staleBeats is how many intervals may pass without a row before it is stale.
	staleBeats = 3
	// beatTimeout bounds one write; finalTimeout the last one, which delays the exit.
	beatTimeout  = 5 * time.Second
	finalTimeout = 3 * time.Second
)

// Options configures [New].
type Options struct {
	// Store writes the row; Broker supplies the parked long-polls, the spool and the
	// instance name (broker.Config.Instance).
	Store  *store.Store
	Broker *broker.Broker
	// Runner supplies this replica's view of the maintenance jobs; nil lists none.
	Runner *maintenance.Runner
	// Version is the build's version; StartedAt when the process started (zero: now).
	Version   string
	StartedAt time.Time
	// ReadyFunc reports whether the replica serves as ready; nil: always.
	ReadyFunc func() bool
	// Draining is closed when the replica's stop begins: the row is written at once
	// and says draining from then on. nil: only the last row does.
	Draining <-chan struct{}
	// SocketActivated and WatchdogInterval describe how systemd runs the replica.
	SocketActivated  bool
	WatchdogInterval time.Duration
	// Interval overrides [Interval] (tests); 0 keeps it.
	Interval time.Duration
	// Logger receives write failures; nil discards.
	Logger *slog.Logger
}

// Heartbeat writes one replica's row. Build it with [New] and start [Heartbeat.Run].
type Heartbeat struct {
	opts      Options
	interval  time.Duration
	processID string
	hostname  string
	logger    *slog.Logger

	// Run's own state (one goroutine).
	beats          int
	failing        bool
	warnedNamesake bool
}

// New returns the heartbeat of the replica opts describe; it writes nothing until Run.
func New(opts Options) *Heartbeat {
	if opts.StartedAt.IsZero() {
		opts.StartedAt = time.Now()
	}
	if opts.ReadyFunc == nil {
		opts.ReadyFunc = func() bool { return true }
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	interval := opts.Interval
	if interval <= 0 {
		interval = Interval
	}
	hostname, _ := os.Hostname()
	return &Heartbeat{opts: opts, interval: interval, processID: newProcessID(), hostname: hostname,
		logger: opts.Logger}
}

// Run writes the row now and every interval until ctx is done, then writes it a last
// time with draining set and returns nil. Failed writes are logged and retried at the
// next interval; Run never fails.
func (h *Heartbeat) Run(ctx context.Context) error {
	ticker := time.NewTicker(h.interval)
	defer ticker.Stop()
	drainingCh, draining := h.opts.Draining, false
	h.beat(ctx, false)
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalTimeout)
			h.beat(final, true)
			cancel()
			return nil
		case <-drainingCh:
			drainingCh, draining = nil, true
			h.beat(ctx, true)
		case <-ticker.C:
			h.beat(ctx, draining)
		}
	}
}

// beat writes the row once, logging a failure (once until a write succeeds again)
// and a namesake (once).
func (h *Heartbeat) beat(ctx context.Context, draining bool) {
	ctx, cancel := context.WithTimeout(ctx, beatTimeout)
	defer cancel()
	prev, err := h.opts.Store.ReplicaBeat(ctx, h.row(draining))
	switch {
	case err != nil && ctx.Err() == nil && !h.failing:
		h.failing = true
		level := slog.LevelWarn
		if errors.Is(err, queue.ErrUnavailable) {
			level = slog.LevelDebug // an outage: the broker reports it already
		}
		h.logger.Log(ctx, level, "heartbeat not written; the replica list shows this replica stale", "err", err)
	case err == nil:
		if h.failing {
			h.logger.Info("heartbeat written again")
		}
		h.failing = false
		if h.beats > 0 && prev != "" && prev != h.processID && !h.warnedNamesake {
			h.warnedNamesake = true
			h.logger.Warn("another broker process writes the heartbeat of this instance name; "+
				"give each replica its own QUEEN_INSTANCE", "heartbeat_name", h.opts.Broker.Config().Instance)
		}
		h.beats++
	}
}

// row is the replica's row as of now.
func (h *Heartbeat) row(draining bool) store.Replica {
	b := h.opts.Broker
	pool := h.opts.Store.Stats()
	r := store.Replica{
		Instance: b.Config().Instance, ProcessID: h.processID, Hostname: h.hostname, PID: os.Getpid(),
		Version: h.opts.Version, StartedAt: h.opts.StartedAt, StaleAfter: staleBeats * h.interval,
		Ready: !draining && h.opts.ReadyFunc(), Draining: draining, ParkedLongPolls: b.ParkedPolls(),
		PoolInUse: pool.AcquiredConns, PoolMax: pool.MaxConns,
		SocketActivated: h.opts.SocketActivated, WatchdogInterval: h.opts.WatchdogInterval,
	}
	if st, ok := b.SpoolStats(); ok {
		r.SpoolPending, r.SpoolHealthy = st.PendingRecords, st.Healthy
		if !st.OldestPending.IsZero() {
			r.SpoolOldestPendingAge = max(time.Since(st.OldestPending), 0)
		}
	}
	if h.opts.Runner != nil {
		r.Jobs = h.opts.Runner.JobStates()
	}
	return r
}

// newProcessID is 16 random hex digits naming this process.
func newProcessID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}
