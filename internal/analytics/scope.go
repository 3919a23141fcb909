package analytics

import (
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// withoutReplicas sums parked rows (ordered by bucket, then queue) over replicas per
// (bucket, queue), leaving hostname and worker id empty, and shows each queue under
// its name in sc: what a tenant scope sees of the per-replica series.
func withoutReplicas(rows []store.ParkedReplica, sc queue.Scope) []store.ParkedReplica {
	out := make([]store.ParkedReplica, 0, len(rows))
	for _, r := range rows {
		name := sc.Relative(r.Queue)
		if n := len(out); n > 0 && out[n-1].Bucket.Equal(r.Bucket) && out[n-1].Queue == name {
			out[n-1].Parked += r.Parked
			out[n-1].Max = max(out[n-1].Max, r.Max)
			continue
		}
		out = append(out, store.ParkedReplica{Bucket: r.Bucket, Queue: name, Parked: r.Parked, Max: r.Max})
	}
	return out
}
