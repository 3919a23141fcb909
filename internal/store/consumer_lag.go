package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// sqlConsumerLagSample writes one sample per (group, queue) into
// consumer_lag_history, as the consumer-group views count it (sqlGroupLagRows: every
// partition of the queue, those the group has no cursor on included), in the bucket
// of $5 ($6 seconds wide, aligned to the epoch). Only the first $2 pairs by group and
// queue name are sampled ($4 = $2 + 1 are read, so that the second column can report
// that more pairs exist). A sample replaces one taken earlier in the same bucket. $1
// is the scope prefix (empty: every queue), $3 one queue (NULL: all).
const sqlConsumerLagSample = `
WITH ` + sqlGroupLagRows + `,
ins AS (
    INSERT INTO queen.consumer_lag_history AS t (bucket_time, consumer_group, queue_name, total_lag,
        max_time_lag_seconds, partitions_with_lag, partitions, sampled_at)
    SELECT to_timestamp(floor(extract(epoch FROM $5::timestamptz) / $6::float8) * $6::float8),
           x.grp, x.qname, x.total_lag,
           greatest(coalesce(extract(epoch FROM now() - x.oldest), 0), 0)::float8, x.with_lag, x.members, now()
    FROM (SELECT * FROM g ORDER BY g.grp, g.qname LIMIT $2::integer) x
    ORDER BY x.grp, x.qname
    ON CONFLICT (bucket_time, consumer_group, queue_name) DO UPDATE SET
        total_lag            = excluded.total_lag,
        max_time_lag_seconds = excluded.max_time_lag_seconds,
        partitions_with_lag  = excluded.partitions_with_lag,
        partitions           = excluded.partitions,
        sampled_at           = excluded.sampled_at
    RETURNING 1
)
SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM g) > $2::integer`

// ConsumerLagSample records the lag of the first maxPairs (consumer group, queue)
// pairs by name in consumer_lag_history, in the bucket of now (bucket wide, at least
// a second; it divides a minute). It returns the rows written and whether more pairs
// exist than were sampled.
func (s *Store) ConsumerLagSample(ctx context.Context, now time.Time, bucket time.Duration,
	maxPairs int) (rows int64, truncated bool, err error) {
	secs := max(bucket.Seconds(), 1)
	// The sample covers the whole cluster: every group, every queue (no tenant prefix).
	err = s.pool.QueryRow(ctx, sqlConsumerLagSample, "", maxPairs, nil, maxPairs+1, now, secs).Scan(&rows, &truncated)
	if err != nil {
		return 0, false, interpretError(err)
	}
	return rows, truncated, nil
}

// ConsumerLagPoint is one bucket of a consumer group's lag on one queue. A bucket
// wider than the samples' holds the largest of its samples, field by field.
type ConsumerLagPoint struct {
	Bucket            time.Time
	Group             string
	Queue             string
	TotalLag          int64
	MaxTimeLag        time.Duration
	PartitionsWithLag int
}

// sqlConsumerLagSeries reads consumer_lag_history per (bucket of $3 seconds, group,
// queue) in [$1, $2), oldest first; $4 group and $5 queue ("" = any).
const sqlConsumerLagSeries = `
SELECT ` + bucketOf + `h.bucket_time` + bucketEnd + ` AS b, h.consumer_group, h.queue_name,
       max(h.total_lag)::bigint, max(h.max_time_lag_seconds)::float8, max(h.partitions_with_lag)::int
FROM queen.consumer_lag_history h
WHERE h.bucket_time >= $1 AND h.bucket_time < $2
  AND ($4::text = '' OR h.consumer_group = $4::text)
  AND ($5::text = '' OR h.queue_name = $5::text)
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3
LIMIT $6`

// ConsumerLagSeries returns the lag samples in f's window per bucket, group and
// queue, oldest first, at most maxSeriesRows; group and f.Queue filter ("" = any).
func (s *Store) ConsumerLagSeries(ctx context.Context, f SeriesFilter, group string) ([]ConsumerLagPoint, error) {
	rows, err := s.pool.Query(ctx, sqlConsumerLagSeries, f.From, f.To, bucketSeconds(f), group, f.Queue, maxSeriesRows)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ConsumerLagPoint, error) {
		var p ConsumerLagPoint
		var lagSeconds float64
		err := row.Scan(&p.Bucket, &p.Group, &p.Queue, &p.TotalLag, &lagSeconds, &p.PartitionsWithLag)
		p.Bucket, p.MaxTimeLag = p.Bucket.UTC(), secondsDuration(lagSeconds)
		return p, err
	})
	return out, interpretError(err)
}
