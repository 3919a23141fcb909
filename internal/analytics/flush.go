package analytics

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/store"
)

// take removes what a flush writes: every bucket before current, and with all also
// the counters of the current bucket (whose system aggregate stays, as it is
// rewritten whole). It returns the flush and the taken buckets, for restore; on an
// error (a system aggregate JSON cannot hold) the caller restores them.
func (rc *recorder) take(current time.Time, all bool) (store.ActivityFlush, map[time.Time]*activityBucket, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	taken := make(map[time.Time]*activityBucket)
	for key, m := range rc.buckets {
		switch {
		case key.Before(current):
			taken[key] = m
			delete(rc.buckets, key)
		case all && key.Equal(current):
			part := &activityBucket{queues: m.queues, worker: m.worker, gauges: m.gauges,
				system: m.system.clone(), systemSamples: m.systemSamples}
			m.queues, m.worker, m.gauges = make(map[string]*queueBucket), store.ActivityCounts{}, store.WorkerGauges{}
			taken[key] = part
		}
	}
	f, err := rc.flushOf(taken)
	return f, taken, err
}

// flushOf renders taken buckets as table rows. A parked row holds the bucket's share
// of its minute's average (samples over a minute's worth of samples), whatever the
// width, so the rows of a minute add up to that minute's average.
func (rc *recorder) flushOf(taken map[time.Time]*activityBucket) (store.ActivityFlush, error) {
	f := store.ActivityFlush{Hostname: rc.hostname, WorkerID: rc.workerID, PID: rc.pid, Width: rc.width}
	for _, key := range slices.SortedFunc(maps.Keys(taken), time.Time.Compare) {
		m := taken[key]
		if !m.worker.IsZero() || m.gauges.Samples > 0 {
			f.Workers = append(f.Workers, store.WorkerActivity{
				Bucket: key, Hostname: rc.hostname, WorkerID: rc.workerID, PID: rc.pid,
				ActivityCounts: m.worker, WorkerGauges: m.gauges,
			})
		}
		for _, name := range slices.Sorted(maps.Keys(m.queues)) {
			q := m.queues[name]
			if !q.counts.IsZero() {
				f.Queues = append(f.Queues, store.QueueActivity{Bucket: key, Queue: name, ActivityCounts: q.counts})
			}
			if q.parkedSum > 0 {
				f.Parked = append(f.Parked, store.ParkedReplica{
					Bucket: key, Queue: name, Hostname: rc.hostname, WorkerID: rc.workerID,
					Parked: float64(q.parkedSum) / float64(samplesPerMinute), Max: q.parkedMax,
				})
			}
		}
		if m.systemSamples > 0 {
			doc, err := m.system.encode()
			if err != nil {
				return f, err
			}
			f.System = append(f.System, store.SystemActivity{
				Bucket: key, Hostname: rc.hostname, WorkerID: rc.workerID, PID: rc.pid,
				Samples: m.systemSamples, Metrics: doc,
			})
		}
	}
	return f, nil
}

// restore puts back the buckets of a failed flush, adding to what was recorded
// since, and drops the oldest buckets beyond the bound.
func (rc *recorder) restore(taken map[time.Time]*activityBucket) (dropped int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for key, t := range taken {
		m := rc.buckets[key]
		if m == nil {
			rc.buckets[key] = t
			continue
		}
		m.worker.Add(t.worker)
		m.gauges.Add(t.gauges)
		for name, q := range t.queues {
			mq := m.queueOf(name)
			mq.counts.Add(q.counts)
			mq.parkedSum += q.parkedSum
			mq.parkedMax = max(mq.parkedMax, q.parkedMax)
		}
	}
	return rc.dropOldest()
}

// Flush samples the gauges once and writes everything recorded so far, including
// the current bucket, to the analytics tables now (POST /stats/refresh; tests). The
// flush loop later adds the rest of the current bucket.
func (s *Service) Flush(ctx context.Context) (api.FlushedStats, error) {
	s.sample(time.Now(), 0)
	return s.flush(ctx, time.Now(), true)
}

// flush writes the buckets before now's (and, with all, now's counters). On failure
// the buckets go back to memory for the next attempt; on success (nothing to write
// included) it advances s.flushes.
func (s *Service) flush(ctx context.Context, now time.Time, all bool) (fs api.FlushedStats, err error) {
	defer func() {
		if err == nil {
			s.flushes.Advance()
		}
	}()
	rc := s.rec
	f, taken, err := rc.take(rc.keyOf(now), all)
	if err == nil && f.IsEmpty() {
		return api.FlushedStats{Minutes: len(taken)}, nil
	}
	if err == nil {
		err = s.store.ActivityAdd(ctx, f)
	}
	if errors.Is(err, store.ErrActivityDerive) {
		// The counters are in: putting them back would count them twice.
		s.logger.Warn("activity flush written, but its parked averages and partition counts were not "+
			"recomputed; the next flush of those buckets does it", "err", err)
		err = nil
	}
	if err != nil {
		if dropped := rc.restore(taken); dropped > 0 {
			s.logger.Warn("activity buckets dropped: the database refused them for too long",
				"dropped", dropped, "err", err)
		}
		return api.FlushedStats{}, err
	}
	rc.mu.Lock()
	rc.lastFlush = time.Now()
	rc.mu.Unlock()
	return api.FlushedStats{Minutes: len(taken), QueueRows: len(f.Queues), WorkerRows: len(f.Workers),
		ParkedRows: len(f.Parked), SystemRows: len(f.System)}, nil
}

// sample takes one 1 Hz gauge sample; lag is how late the sampler ran.
func (s *Service) sample(now time.Time, lag time.Duration) {
	s.sampleMu.Lock()
	defer s.sampleMu.Unlock()
	parkedAll, parked := s.parked()
	pool := s.store.Stats()
	g := gaugeSample{
		at: now, lagMs: float64(lag) / float64(time.Millisecond), parked: parked, parkedAll: parkedAll,
		freeSlots: int64(pool.MaxConns - pool.AcquiredConns), poolSize: int64(pool.MaxConns),
		system: make(systemSample),
	}
	g.system.observe("database", "pool_size", float64(pool.MaxConns))
	g.system.observe("database", "pool_open", float64(pool.TotalConns))
	g.system.observe("database", "pool_idle", float64(pool.IdleConns))
	g.system.observe("database", "pool_active", float64(pool.AcquiredConns))
	g.system.observe("longpoll", "parked", float64(g.parkedAll))
	g.system.observe("runtime", "scheduler_delay_ms", g.lagMs)
	s.prevProc, s.prevAt = observeProcess(g.system, now, s.prevProc, s.prevAt)
	s.rec.observe(g)
}

// Run samples the gauges every second and flushes each closed bucket until ctx is
// done; then it flushes everything, the current bucket included, within a few
// seconds, and returns nil. With a FlushInterval under the bucket width it also
// flushes the current bucket's counters every FlushInterval. A failed flush keeps the
// buckets in memory (at most 15 minutes of them) and is retried every 10 s; Run never
// returns early because of it.
func (s *Service) Run(ctx context.Context) error {
	ticker := time.NewTicker(activitySampleInterval)
	defer ticker.Stop()
	lastBucket := s.rec.keyOf(time.Now())
	lastFlush := time.Now()
	var retryAt time.Time
	failing := false
	for {
		select {
		case <-ctx.Done():
			flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalFlushTimeout)
			if _, err := s.flush(flushCtx, time.Now(), true); err != nil {
				s.logger.Warn("final activity flush failed; the last buckets of analytics are lost", "err", err)
			}
			cancel()
			return nil
		case tick := <-ticker.C:
			now := time.Now()
			s.sample(now, max(now.Sub(tick), 0))
			bucket := s.rec.keyOf(now)
			partial := s.flushEvery < s.rec.width && now.Sub(lastFlush) >= s.flushEvery
			if !bucket.After(lastBucket) && !partial && !failing {
				continue
			}
			if bucket.After(lastBucket) {
				lastBucket = bucket
			}
			if failing && now.Before(retryAt) {
				continue
			}
			lastFlush = now
			flushCtx, cancel := context.WithTimeout(ctx, activityFlushTimeout)
			_, err := s.flush(flushCtx, now, partial)
			cancel()
			switch {
			case err != nil && ctx.Err() == nil:
				if !failing {
					s.logger.Warn("activity flush failed; buckets stay in memory and are retried", "err", err)
				}
				failing, retryAt = true, now.Add(activityRetryInterval)
			case err == nil && failing:
				s.logger.Info("activity flush recovered")
				failing = false
			}
		}
	}
}
