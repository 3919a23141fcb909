package maintenance

import (
	"context"
	"sync"
	"time"

	"github.com/queenmq/queen/internal/store"
)

// JobLookupReconcile repairs the partition lookup table (PARTITION_LOOKUP_RECONCILE_*).
const JobLookupReconcile = "partition_lookup_reconcile"

// lookupReconcile is the partition lookup repair. Its first cycles in a process walk
// every partition (a database written by an upstream broker can hold missing or stale
// rows from any time); once that pass is done, each cycle checks the partitions that
// hold messages but have no lookup row, and the rows touched within the lookback.
// Wildcard pops find a partition whose lookup row was missing within one interval.
type lookupReconcile struct {
	st       *store.Store
	interval time.Duration
	lookback time.Duration
	batch    int
	batches  int
	now      func() time.Time

	// mu guards the full pass's progress across cycles.
	mu       sync.Mutex
	fullDone bool
	after    string
}

func (j *lookupReconcile) Name() string            { return JobLookupReconcile }
func (j *lookupReconcile) Interval() time.Duration { return j.interval }
func (j *lookupReconcile) UpstreamLock() bool      { return false }

func (j *lookupReconcile) RunOnce(ctx context.Context) (Result, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var res Result
	since := j.now().Add(-j.lookback)
	deadline, hasDeadline := ctx.Deadline()
	var slowest time.Duration
	for !j.fullDone && res.Batches < j.batches {
		// The full pass goes on in the next cycle rather than into the job's timeout
		// (on a busy database a batch of a big table takes seconds).
		if hasDeadline && time.Until(deadline) < 2*slowest {
			res.Truncated = true
			return res, nil
		}
		began := time.Now()
		r, err := j.st.LookupReconcileBatch(ctx, true, j.after, j.batch, since)
		slowest = max(slowest, time.Since(began))
		res.Batches++
		res.Rows += int64(r.Repaired)
		if err != nil {
			return res, err
		}
		if r.Scanned < j.batch {
			j.fullDone = true
		}
		j.after = r.Last
	}
	if !j.fullDone {
		res.Truncated = true
		return res, nil
	}
	r, err := j.st.LookupReconcileBatch(ctx, false, "", j.batch, since)
	res.Batches++
	res.Rows += int64(r.Repaired)
	res.Truncated = r.Scanned >= j.batch
	return res, err
}
