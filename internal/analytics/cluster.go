package analytics

import (
	"context"
	"time"

	"github.com/queenmq/queen/internal/api"
)

// Replicas builds GET /api/v1/system/replicas: every replica's last heartbeat row, by
// instance name, with stale set where the row is older than the bound its writer set.
func (s *Service) Replicas(ctx context.Context) (api.ReplicaList, error) {
	rows, err := s.store.ReplicaList(ctx)
	if err != nil {
		return api.ReplicaList{}, err
	}
	out := api.ReplicaList{Replicas: make([]api.Replica, 0, len(rows))}
	for _, r := range rows {
		rep := api.Replica{
			Instance: r.Instance, Hostname: r.Hostname, PID: r.PID, Version: r.Version,
			StartedAt: api.FormatMillis(r.StartedAt), LastSeenAt: api.FormatMillis(r.LastSeenAt), Stale: r.Stale,
			Ready: r.Ready, Draining: r.Draining, ParkedLongPolls: r.ParkedLongPolls,
			Pool: api.ReplicaPool{InUse: r.PoolInUse, Max: r.PoolMax},
			Spool: api.ReplicaSpool{Pending: r.SpoolPending, OldestPendingAgeSeconds: r.SpoolOldestPendingAge.Seconds(),
				Healthy: r.SpoolHealthy},
			Jobs:    make([]api.ReplicaJob, 0, len(r.Jobs)),
			Systemd: api.ReplicaSystemd{SocketActivated: r.SocketActivated, WatchdogSec: r.WatchdogInterval.Seconds()},
		}
		for _, j := range r.Jobs {
			rep.Jobs = append(rep.Jobs, api.ReplicaJob{Name: j.Name, LastResult: j.LastResult, LastCycle: j.LastCycle,
				LastSuccessAt: formatPtr(j.LastSuccessAt), LastRunAt: formatPtr(j.LastRunAt), LastError: j.LastError})
		}
		out.Replicas = append(out.Replicas, rep)
	}
	return out, nil
}

// ConsumerLag builds GET /api/v1/analytics/consumer-lag for f's window (default the
// last hour), Group and Queue: the consumer-lag samples per bucket, group and queue,
// oldest first.
func (s *Service) ConsumerLag(ctx context.Context, f Filter) (api.ConsumerLag, error) {
	w, err := viewWindow(f, defaultWindow, s.rec.width, "group", "queue")
	if err != nil {
		return api.ConsumerLag{}, err
	}
	rows, err := s.store.ConsumerLagSeries(ctx, w.series(f), f.Group)
	if err != nil {
		return api.ConsumerLag{}, err
	}
	out := api.ConsumerLag{TimeRange: w.timeRange(), BucketMinutes: w.Minutes(), BucketSeconds: w.Seconds(),
		Series: make([]api.ConsumerLagPoint, 0, len(rows))}
	for _, r := range rows {
		out.Series = append(out.Series, api.ConsumerLagPoint{Bucket: api.FormatSeconds(r.Bucket), Group: r.Group,
			Queue: r.Queue, TotalLag: r.TotalLag, MaxTimeLag: r.MaxTimeLag.Seconds(),
			PartitionsWithLag: r.PartitionsWithLag})
	}
	return out, nil
}

// formatPtr formats t as an api time, nil for nil.
func formatPtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := api.FormatMillis(*t)
	return &s
}
