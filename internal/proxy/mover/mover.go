package mover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// Defaults of Options' durations.
const (
	// DefaultLease is how long a claimed move stays this replica's without a renewal.
	DefaultLease = 10 * time.Second
	// DefaultPauseBudget is how long the final copy may hold a tenant's requests before
	// the pause is given up (the tenant resumes at the source) and tried again. It is
	// below the gateway's 30 s hold, so that a held request never sees it.
	DefaultPauseBudget = 20 * time.Second
	// maxPauses is how many pauses a move tries before it fails.
	maxPauses = 3
	// roundsBeforePause bounds the copy rounds: the pause copies what is left.
	roundsBeforePause = 8
	// maxRetryDelay caps the wait before a move whose run failed is run again.
	maxRetryDelay = 30 * time.Second
	// pageSize is how many messages one export page carries.
	pageSize = 1000
	// importChunkBytes bounds the rows of one import call: half the brokers' default
	// body limit (QUEEN_MAX_BODY_BYTES, 16 MiB).
	importChunkBytes = 8 << 20
)

// Cells is what the mover needs of the gateway: each cell's brokers (every one, for
// the fence) and a healthy one (for the copy).
type Cells struct {
	// Brokers lists the cell's broker base URLs; empty for an unknown cell.
	Brokers func(cell string) []*url.URL
	// Pick returns a healthy broker of the cell, nil when none is up.
	Pick func(cell string) *url.URL
}

// Options are what a Mover is built from.
type Options struct {
	Store     *store.Store
	Cells     Cells
	Client    *http.Client
	Authorize func(*http.Request) error
	ReplicaID string
	Logger    *slog.Logger
	// Lease, PauseBudget and Poll default to DefaultLease, DefaultPauseBudget and 1 s.
	Lease, PauseBudget, Poll time.Duration
}

// Mover runs the moves this replica claims, one at a time.
type Mover struct {
	o   Options
	b   *brokers
	log *slog.Logger
}

// New returns a Mover.
func New(o Options) *Mover {
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.PauseBudget <= 0 {
		o.PauseBudget = DefaultPauseBudget
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	return &Mover{o: o, b: &brokers{client: o.Client, authorize: o.Authorize}, log: o.Logger.With("component", "mover")}
}

// Run claims and runs moves until ctx is done. A run that fails (a cell with no broker
// up, a broker's error) leaves the move where it was, its error recorded; the next run
// waits Poll, doubled after each failure in a row up to maxRetryDelay, so that a move
// that cannot progress is retried, not spun.
func (m *Mover) Run(ctx context.Context) {
	tick := time.NewTicker(m.o.Poll)
	defer tick.Stop()
	failures := 0
	for {
		for ctx.Err() == nil {
			mv, err := m.o.Store.MoveClaim(ctx, m.o.ReplicaID, m.o.Lease)
			if err != nil || mv == nil {
				break
			}
			if m.runClaimed(ctx, mv) {
				failures = 0
				continue
			}
			failures++
			wait := time.NewTimer(retryDelay(m.o.Poll, failures))
			select {
			case <-ctx.Done():
				wait.Stop()
				return
			case <-wait.C:
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// retryDelay is the wait after the nth failed run in a row: base, doubled each time,
// at most maxRetryDelay.
func retryDelay(base time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < maxRetryDelay; i++ {
		d *= 2
	}
	return min(d, maxRetryDelay)
}

// runClaimed runs one claimed move while renewing its lease; losing the lease stops
// it (the replica that took it over goes on). It reports false when the run failed
// and the move is still this replica's to retry.
func (m *Mover) runClaimed(ctx context.Context, mv *tenant.Move) bool {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		t := time.NewTicker(m.o.Lease / 4)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				ok, err := m.o.Store.MoveRenew(ctx, mv.ID, m.o.ReplicaID, m.o.Lease)
				if err == nil && !ok {
					cancel(errLeaseLost)
					return
				}
			}
		}
	}()
	log := m.log.With("move", mv.ID, "tenant", mv.Tenant, "from", mv.From, "to", mv.To)
	log.Info("move running", "phase", mv.Phase)
	r := &run{m: m, mv: mv, log: log}
	if err := r.resume(ctx); err != nil {
		if errors.Is(context.Cause(ctx), errLeaseLost) || ctx.Err() != nil {
			log.Warn("move left to another replica", "err", err)
			return true
		}
		log.Error("move failed", "err", err)
		return false
	}
	return true
}

var (
	errLeaseLost = errors.New("the move's lease was taken by another replica")
	errCancelled = errors.New("cancelled")
)

// run is one move being run.
type run struct {
	m   *Mover
	mv  *tenant.Move
	log *slog.Logger
	// progress is the move's account, written with every phase change.
	progress progress
}

// progress is what a move reports as its progress.
type progress struct {
	Rounds      int   `json:"rounds"`
	Copied      int64 `json:"copied"`
	LastRound   int64 `json:"lastRound"`
	Pauses      int   `json:"pauses"`
	Pruned      int   `json:"prunedPartitions,omitempty"`
	FinalCopied int64 `json:"finalCopied"`
}

// resume runs the move from its phase to its end.
func (r *run) resume(ctx context.Context) error {
	_ = json.Unmarshal(r.mv.Progress, &r.progress)
	for {
		if r.mv.Phase.BeforeSwitch() {
			cur, err := r.m.o.Store.MoveGet(ctx, r.mv.ID)
			if err != nil {
				return err
			}
			if cur.CancelRequested {
				return r.fail(ctx, errCancelled)
			}
		}
		var err error
		switch r.mv.Phase {
		case tenant.MoveCopying:
			err = r.copying(ctx)
		case tenant.MovePausing, tenant.MoveFinal:
			err = r.final(ctx)
		case tenant.MoveSwitched, tenant.MoveCleaning:
			err = r.cleaning(ctx)
		default:
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// setPhase records the phase and the progress.
func (r *run) setPhase(ctx context.Context, phase tenant.MovePhase, errText string) error {
	raw, _ := json.Marshal(r.progress)
	if err := r.m.o.Store.MoveUpdate(ctx, r.mv.ID, r.m.o.ReplicaID, phase, raw, errText); err != nil {
		return err
	}
	r.mv.Phase = phase
	return nil
}

// pick returns a healthy broker of the cell.
func (r *run) pick(cell string) (*url.URL, error) {
	u := r.m.o.Cells.Pick(cell)
	if u == nil {
		return nil, fmt.Errorf("no broker of cell %s is up", cell)
	}
	return u, nil
}

// fail gives the move up before its switch: the source is unfenced (the tenant is
// served there again) and the target's copy dropped.
func (r *run) fail(ctx context.Context, cause error) error {
	r.log.Error("move given up", "err", cause)
	if err := r.fenceAll(ctx, r.mv.From, false); err != nil {
		return fmt.Errorf("%w; and the source could not be unfenced: %w", cause, err)
	}
	if u, err := r.pick(r.mv.To); err == nil {
		_ = r.m.b.drop(ctx, u, r.mv.Tenant)
	}
	raw, _ := json.Marshal(r.progress)
	_ = r.m.o.Store.MoveUpdate(ctx, r.mv.ID, r.m.o.ReplicaID, r.mv.Phase, raw, cause.Error())
	if err := r.m.o.Store.MoveFinish(ctx, r.mv.ID, r.m.o.ReplicaID, tenant.MoveFailed, cause.Error()); err != nil {
		return err
	}
	r.mv.Phase = tenant.MoveFailed
	return nil
}

// fenceAll sets or lifts the tenant's fence at every broker of the cell. Setting it
// fails unless every broker answered that its requests of the tenant have ended.
func (r *run) fenceAll(ctx context.Context, cell string, fenced bool) error {
	brokers := r.m.o.Cells.Brokers(cell)
	if len(brokers) == 0 {
		return fmt.Errorf("cell %s has no brokers", cell)
	}
	for _, u := range brokers {
		drained, err := r.m.b.fence(ctx, u, r.mv.Tenant, fenced)
		if err != nil {
			return fmt.Errorf("fence at %s: %w", u.Host, err)
		}
		if fenced && !drained {
			return fmt.Errorf("fence at %s: requests of the tenant still running", u.Host)
		}
	}
	return nil
}
