package analytics

import (
	"context"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// Overview builds GET /api/v1/resources/overview for the queues of sc: live totals
// (computed now; they scan every message of those queues), the lag of their
// partitions with pending messages, and their rates over the last complete minute.
// StatsAge is 0: nothing is cached.
func (s *Service) Overview(ctx context.Context, sc queue.Scope) (api.Overview, error) {
	o, err := s.store.Overview(ctx, sc)
	if err != nil {
		return api.Overview{}, err
	}
	last := time.Now().UTC().Truncate(time.Minute)
	rows, err := s.store.QueueActivitySeries(ctx, store.SeriesFilter{From: last.Add(-time.Minute), To: last,
		Bucket: time.Minute, Prefix: sc.Prefix()})
	if err != nil {
		return api.Overview{}, err
	}
	var c store.ActivityCounts
	for _, r := range rows {
		c.Add(r.ActivityCounts)
	}
	lag := func(l queue.Lag) api.LagStats {
		return api.LagStats{Avg: l.Avg, Median: l.Median, Min: l.Min, Max: l.Max}
	}
	m := o.Counters
	return api.Overview{
		Queues: o.Queues, Partitions: o.Partitions, Namespaces: o.Namespaces, Tasks: o.Tasks,
		Messages: api.Counters{Total: int(m.Total), Pending: int(m.Pending), Processing: int(m.Processing),
			Completed: int(m.Completed), Failed: int(m.Failed), DeadLetter: int(m.DeadLetter)},
		Lag: api.OverviewLag{Time: lag(o.TimeLag), Offset: lag(o.OffsetLag)},
		Throughput: api.OverviewThroughput{IngestedPerSecond: float64(c.PushMessages) / 60,
			ProcessedPerSecond: float64(c.Processed()) / 60},
		Timestamp: api.FormatMillis(time.Now()), StatsAge: 0,
	}, nil
}
