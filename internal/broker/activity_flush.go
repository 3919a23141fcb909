package broker

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// FlushReport says what one flush wrote.
type FlushReport struct {
	Minutes    int
	QueueRows  int
	WorkerRows int
	ParkedRows int
	SystemRows int
}

// take removes what a flush writes: every minute before current, and with all also
// the counters of the current minute (whose system aggregate stays, as it is
// rewritten whole). It returns the flush and the taken minutes, for restore.
func (a *activity) take(current time.Time, all bool) (queue.ActivityFlush, map[time.Time]*activityMinute) {
	a.mu.Lock()
	defer a.mu.Unlock()
	taken := make(map[time.Time]*activityMinute)
	for key, m := range a.minutes {
		switch {
		case key.Before(current):
			taken[key] = m
			delete(a.minutes, key)
		case all && key.Equal(current):
			part := &activityMinute{queues: m.queues, worker: m.worker, gauges: m.gauges,
				system: cloneSample(m.system), systemSamples: m.systemSamples}
			m.queues, m.worker, m.gauges = make(map[string]*queueMinute), queue.ActivityCounts{}, queue.WorkerGauges{}
			taken[key] = part
		}
	}
	return a.flushOf(taken), taken
}

func cloneSample(s queue.SystemSample) queue.SystemSample {
	out := make(queue.SystemSample, len(s))
	for g, keys := range s {
		out[g] = maps.Clone(keys)
	}
	return out
}

// flushOf renders taken minutes as table rows.
func (a *activity) flushOf(taken map[time.Time]*activityMinute) queue.ActivityFlush {
	f := queue.ActivityFlush{Hostname: a.hostname, WorkerID: a.workerID, PID: a.pid}
	for _, key := range slices.SortedFunc(maps.Keys(taken), time.Time.Compare) {
		m := taken[key]
		if !m.worker.IsZero() || m.gauges.Samples > 0 {
			f.Workers = append(f.Workers, queue.WorkerActivity{
				Bucket: key, Hostname: a.hostname, WorkerID: a.workerID, PID: a.pid,
				ActivityCounts: m.worker, WorkerGauges: m.gauges,
			})
		}
		for _, name := range slices.Sorted(maps.Keys(m.queues)) {
			q := m.queues[name]
			if !q.counts.IsZero() {
				f.Queues = append(f.Queues, queue.QueueActivity{Bucket: key, Queue: name, ActivityCounts: q.counts})
			}
			if q.parkedSum > 0 {
				f.Parked = append(f.Parked, queue.ParkedReplica{
					Bucket: key, Queue: name, Hostname: a.hostname, WorkerID: a.workerID,
					Parked: float64(q.parkedSum) / float64(samplesPerMinute), Max: q.parkedMax,
				})
			}
		}
		if m.systemSamples > 0 {
			f.System = append(f.System, queue.SystemMetrics{
				Bucket: key, Hostname: a.hostname, WorkerID: a.workerID, PID: a.pid,
				Samples: m.systemSamples, Metrics: m.system,
			})
		}
	}
	return f
}

// restore puts back the minutes of a failed flush, adding to what was recorded
// since, and drops the oldest minutes beyond maxPendingMinutes.
func (a *activity) restore(taken map[time.Time]*activityMinute) (dropped int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for key, t := range taken {
		m := a.minutes[key]
		if m == nil {
			a.minutes[key] = t
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
	return a.dropOldest()
}

// FlushActivity samples the gauges once and writes everything recorded so far,
// including the current minute, to the analytics tables now (POST /stats/refresh;
// tests). The flush loop later adds the rest of the current minute.
func (b *Broker) FlushActivity(ctx context.Context) (FlushReport, error) {
	b.sampleActivity(time.Now(), 0)
	return b.flushActivity(ctx, time.Now(), true)
}

// flushActivity writes the minutes before now's (and, with all, now's counters).
// On failure the minutes go back to memory for the next attempt.
func (b *Broker) flushActivity(ctx context.Context, now time.Time, all bool) (FlushReport, error) {
	a := b.activity
	f, taken := a.take(now.UTC().Truncate(time.Minute), all)
	rep := FlushReport{Minutes: len(taken), QueueRows: len(f.Queues), WorkerRows: len(f.Workers),
		ParkedRows: len(f.Parked), SystemRows: len(f.System)}
	if f.IsEmpty() {
		return rep, nil
	}
	if err := b.store.ActivityAdd(ctx, f); err != nil {
		if dropped := a.restore(taken); dropped > 0 {
			b.logger.Warn("activity minutes dropped: the database refused them for too long",
				"dropped", dropped, "err", err)
		}
		return FlushReport{}, err
	}
	a.mu.Lock()
	a.lastFlush = time.Now()
	a.mu.Unlock()
	return rep, nil
}

// sampleActivity takes one 1 Hz gauge sample; lag is how late the sampler ran.
func (b *Broker) sampleActivity(now time.Time, lag time.Duration) {
	a := b.activity
	a.sampleMu.Lock()
	defer a.sampleMu.Unlock()
	parked := b.waiters.countByQueue()
	pool := b.store.Stats()
	s := gaugeSample{
		at: now, lagMs: float64(lag) / float64(time.Millisecond), parked: parked, parkedAll: b.waiters.count(),
		freeSlots: int64(pool.MaxConns - pool.AcquiredConns), poolSize: int64(pool.MaxConns),
		system: make(queue.SystemSample),
	}
	s.system.Observe("database", "pool_size", float64(pool.MaxConns))
	s.system.Observe("database", "pool_open", float64(pool.TotalConns))
	s.system.Observe("database", "pool_idle", float64(pool.IdleConns))
	s.system.Observe("database", "pool_active", float64(pool.AcquiredConns))
	s.system.Observe("longpoll", "parked", float64(s.parkedAll))
	s.system.Observe("runtime", "scheduler_delay_ms", s.lagMs)
	a.prevProc, a.prevAt = observeProcess(s.system, now, a.prevProc, a.prevAt)
	a.observe(s)
}

// runActivity samples gauges every second and flushes each closed minute, until
// ctx is done; then it flushes everything, the current minute included.
func (b *Broker) runActivity(ctx context.Context) {
	ticker := time.NewTicker(activitySampleInterval)
	defer ticker.Stop()
	lastMinute := time.Now().UTC().Truncate(time.Minute)
	var retryAt time.Time
	failing := false
	for {
		select {
		case <-ctx.Done():
			flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalFlushTimeout)
			if _, err := b.flushActivity(flushCtx, time.Now(), true); err != nil {
				b.logger.Warn("final activity flush failed; the last minutes of analytics are lost", "err", err)
			}
			cancel()
			return
		case tick := <-ticker.C:
			now := time.Now()
			b.sampleActivity(now, max(now.Sub(tick), 0))
			minute := now.UTC().Truncate(time.Minute)
			if !minute.After(lastMinute) && !failing {
				continue
			}
			if minute.After(lastMinute) {
				lastMinute = minute
			}
			if failing && now.Before(retryAt) {
				continue
			}
			flushCtx, cancel := context.WithTimeout(ctx, activityFlushTimeout)
			_, err := b.flushActivity(flushCtx, now, false)
			cancel()
			switch {
			case err != nil && ctx.Err() == nil:
				if !failing {
					b.logger.Warn("activity flush failed; minutes stay in memory and are retried", "err", err)
				}
				failing, retryAt = true, now.Add(activityRetryInterval)
			case err == nil && failing:
				b.logger.Info("activity flush recovered")
				failing = false
			}
		}
	}
}

// countByQueue returns the number of long-polls parked on each queue.
func (ws *waiters) countByQueue() map[string]int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	out := make(map[string]int, len(ws.byQueue))
	for q, set := range ws.byQueue {
		if len(set) > 0 {
			out[q] = len(set)
		}
	}
	return out
}
