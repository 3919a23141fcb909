package analytics

import (
	"time"

	"github.com/queenmq/queen/internal/store"
)

// Rates are per-second rates over the last complete minute of this process.
type Rates struct {
	// Minute is the start of the minute the rates cover.
	Minute                time.Time
	PushRequestsPerSecond float64
	PushMessagesPerSecond float64
	PopRequestsPerSecond  float64
	PopMessagesPerSecond  float64
	EmptyPopsPerSecond    float64
	AckRequestsPerSecond  float64
	AckMessagesPerSecond  float64
	// ProcessedPerSecond counts completed acks and autoAck deliveries.
	ProcessedPerSecond    float64
	TransactionsPerSecond float64
	DBErrorsPerSecond     float64
	// AvgLagMs and MaxLagMs describe the pop lag of that minute's deliveries.
	AvgLagMs float64
	MaxLagMs int64
}

// Snapshot is this process's activity: lifetime totals, per queue and overall, and
// the rates of the last complete minute.
type Snapshot struct {
	Hostname string
	WorkerID string
	PID      int
	// Since is when the service was created; totals count from then.
	Since time.Time
	// Total counts every request of the process (requests without a queue included).
	Total store.ActivityCounts
	// Queues holds lifetime totals per queue name (at most 10000 queues).
	Queues map[string]store.ActivityCounts
	Rates  Rates
	// Parked is the number of long-polls parked right now.
	Parked int
	// LastFlush is when counters last reached the database (zero: never).
	LastFlush time.Time
	// PendingMinutes counts buckets (minutes by default) held in memory, not yet
	// written; DroppedMinutes counts buckets dropped because the database refused them
	// for too long.
	PendingMinutes int
	DroppedMinutes int64
}

// Activity returns a snapshot of this process's activity counters (for metrics and
// logs). It runs no SQL.
func (s *Service) Activity() Snapshot {
	rc := s.rec
	now := time.Now()
	rc.mu.Lock()
	rc.rollRates(now.UTC().Truncate(time.Minute))
	snap := Snapshot{
		Hostname: rc.hostname, WorkerID: rc.workerID, PID: rc.pid, Since: rc.started, Total: rc.total,
		Queues: make(map[string]store.ActivityCounts, len(rc.queues)), LastFlush: rc.lastFlush,
		PendingMinutes: len(rc.buckets), DroppedMinutes: rc.dropped,
	}
	for name, c := range rc.queues {
		snap.Queues[name] = *c
	}
	snap.Rates = ratesOf(rc.rateMinute.Add(-time.Minute), rc.rateLast)
	rc.mu.Unlock()
	snap.Parked, _ = s.parked()
	return snap
}

func ratesOf(minute time.Time, c store.ActivityCounts) Rates {
	per := func(n int64) float64 { return float64(n) / time.Minute.Seconds() }
	return Rates{
		Minute:                minute,
		PushRequestsPerSecond: per(c.PushRequests), PushMessagesPerSecond: per(c.PushMessages),
		PopRequestsPerSecond: per(c.PopRequests), PopMessagesPerSecond: per(c.PopMessages),
		EmptyPopsPerSecond: per(c.PopEmpty), AckRequestsPerSecond: per(c.AckRequests),
		AckMessagesPerSecond: per(c.AckMessages), ProcessedPerSecond: per(c.Processed()),
		TransactionsPerSecond: per(c.Transactions), DBErrorsPerSecond: per(c.DBErrors),
		AvgLagMs: c.AvgLagMs(), MaxLagMs: c.LagMaxMs,
	}
}
