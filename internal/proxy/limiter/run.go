package limiter

import (
	"context"
	"log/slog"
	"time"

	"github.com/queenmq/queen/internal/proxy/store"
)

// Syncer runs the limiter's share exchange and this replica's heartbeat.
type Syncer struct {
	Limiter   *Limiter
	Store     *store.Store
	ReplicaID string
	Instance  string
	Interval  time.Duration
	Logger    *slog.Logger
}

// heartbeat is the replicas table's heartbeat period; a replica silent for three of
// them is no longer counted.
const heartbeat = 5 * time.Second

// Run syncs every Interval and heartbeats every 5 s until ctx is done, then removes
// this replica's rows.
func (s *Syncer) Run(ctx context.Context) {
	s.beat(ctx)
	tick := time.NewTicker(s.Interval)
	defer tick.Stop()
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	last := time.Now()
	failing := false
	for {
		select {
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			_ = s.Store.ReplicaDelete(cctx, s.ReplicaID)
			cancel()
			return
		case <-beat.C:
			s.beat(ctx)
		case now := <-tick.C:
			own := s.Limiter.Demand(now.Sub(last))
			last = now
			cctx, cancel := context.WithTimeout(ctx, s.Interval+time.Second)
			res, err := s.Store.LimiterSync(cctx, s.ReplicaID, own, max(3*s.Interval, 3*time.Second), 3*heartbeat)
			cancel()
			if err != nil {
				if !failing && ctx.Err() == nil {
					s.Logger.Warn("limiter sync failed; keeping the last shares", "err", err)
				}
				failing = true
				continue
			}
			failing = false
			s.Limiter.ApplySync(res)
		}
	}
}

func (s *Syncer) beat(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := s.Store.ReplicaHeartbeat(cctx, s.ReplicaID, s.Instance, 3*heartbeat); err != nil && ctx.Err() == nil {
		s.Logger.Debug("replica heartbeat failed", "err", err)
	}
}
