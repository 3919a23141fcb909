package maintenance

import (
	"context"

	"github.com/queenmq/queen/internal/store"
)

// JobKVSweep deletes expired KV rows.
const JobKVSweep = "kv_sweep"

// kvSweep is the kv_sweep job, paced by s.RetentionInterval (RETENTION_INTERVAL): like
// every job it runs on one replica per cycle (the runner's lock), deleting rows with
// expires_at <= now in batches of s.BatchSize, at most s.MaxBatches batches a cycle; the
// next cycle goes on. Expired rows are absent for every read the moment they expire;
// the sweep only reclaims their space, so its pace bounds how long they linger on disk
// (and count in the console's namespace listing).
func kvSweep(st *store.Store, s Settings) Job {
	return &job{name: JobKVSweep, interval: s.RetentionInterval,
		run: func(ctx context.Context) (Result, error) {
			return inBatches(ctx, s.MaxBatches, s.BatchSize, func(ctx context.Context, n int) (int64, error) {
				return st.KVSweepBatch(ctx, s.NowFunc(), n)
			})
		}}
}
