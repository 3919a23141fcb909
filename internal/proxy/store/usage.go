package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/proxy/tenant"
)

// usageCounters and usageGauges are the metered columns, in tenant.Usage's order.
var (
	usageCounters = []string{"requests", "push_requests", "messages_in", "duplicates_in", "failed_in", "bytes_in",
		"bytes_out", "pop_requests", "empty_pops", "messages_out", "acks", "rejected_rate", "rejected_quota", "upstream_errors"}
	usageGauges = []string{"stored_messages", "stored_bytes", "queues"}
)

func usageFields(u *tenant.Usage) []*int64 {
	return []*int64{&u.Requests, &u.PushRequests, &u.MessagesIn, &u.DuplicatesIn, &u.FailedIn, &u.BytesIn,
		&u.BytesOut, &u.PopRequests, &u.EmptyPops, &u.MessagesOut, &u.Acks, &u.RejectedRate, &u.RejectedQuota,
		&u.UpstreamErrors, &u.StoredMessages, &u.StoredBytes, &u.Queues}
}

func allUsageColumns() []string { return append(append([]string{}, usageCounters...), usageGauges...) }

// usageAggregates renders sum() of the counters and max() of the gauges.
func usageAggregates() string {
	var parts []string
	for _, c := range usageCounters {
		parts = append(parts, "sum("+c+")::bigint")
	}
	for _, c := range usageGauges {
		parts = append(parts, "max("+c+")::bigint")
	}
	return strings.Join(parts, ", ")
}

// upsertUsageSQL replaces this replica's whole count of each (tenant, minute): $1
// tenants, $2 minutes, $3 the replica, then one bigint array per column.
var upsertUsageSQL = func() string {
	cols := allUsageColumns()
	var values, sets []string
	for i, c := range cols {
		values = append(values, fmt.Sprintf("($%d::bigint[])[u.i]", i+4))
		sets = append(sets, c+" = excluded."+c)
	}
	return `INSERT INTO queen_proxy.usage_minute (tenant_id, minute, replica_id, ` + strings.Join(cols, ", ") + `)
		SELECT u.t, u.m, $3, ` + strings.Join(values, ", ") + `
		FROM unnest($1::text[], $2::timestamptz[]) WITH ORDINALITY AS u(t, m, i)
		ON CONFLICT (tenant_id, minute, replica_id) DO UPDATE SET ` + strings.Join(sets, ", ")
}()

// UsageUpsert stores this replica's counts of each (tenant, minute) in points with
// replace semantics, in one statement.
func (s *Store) UsageUpsert(ctx context.Context, replicaID string, points []tenant.UsagePoint) error {
	if len(points) == 0 {
		return nil
	}
	tenants := make([]string, len(points))
	minutes := make([]time.Time, len(points))
	cols := make([][]int64, len(allUsageColumns()))
	for i, p := range points {
		tenants[i], minutes[i] = p.Tenant, p.Start
		for j, f := range usageFields(&p.Usage) {
			cols[j] = append(cols[j], *f)
		}
	}
	args := []any{tenants, minutes, replicaID}
	for _, c := range cols {
		args = append(args, c)
	}
	_, err := s.pool.Exec(ctx, upsertUsageSQL, args...)
	return interpretError(err)
}

// Lock keys (two-key form) of the proxy's leader-gated jobs.
const (
	lockNamespaceJobs int32 = 0x51504A42 // "QPJB"
	lockRollup        int32 = 1
)

// UsageRollup recomputes the hours closed by now that a late flush may still change
// (the last three) into usage_hour, and deletes minutes older than 30 days and hours
// older than 400 days. One replica at a time runs it: it returns false when another
// holds the lock.
func (s *Store) UsageRollup(ctx context.Context, now time.Time) (bool, error) {
	ran := false
	cols := allUsageColumns()
	var sets []string
	for _, c := range cols {
		sets = append(sets, c+" = excluded."+c)
	}
	end := now.UTC().Truncate(time.Hour)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1, $2)`, lockNamespaceJobs, lockRollup).Scan(&ran); err != nil || !ran {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO queen_proxy.usage_hour (tenant_id, hour, `+strings.Join(cols, ", ")+`)
			SELECT tenant_id, date_trunc('hour', minute AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', `+usageAggregates()+`
			FROM queen_proxy.usage_minute WHERE minute >= $1 AND minute < $2 GROUP BY 1, 2
			ON CONFLICT (tenant_id, hour) DO UPDATE SET `+strings.Join(sets, ", "), end.Add(-3*time.Hour), end); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM queen_proxy.usage_minute WHERE minute < $1`, now.Add(-30*24*time.Hour)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM queen_proxy.usage_hour WHERE hour < $1`, now.Add(-400*24*time.Hour))
		return err
	})
	return ran, err
}

// UsageSeries returns the usage of one tenant (or, with tenantID "", of every
// tenant) per bucket of g in [from, to), ordered by tenant and start. Minutes sum
// the replicas; hours come from usage_hour where rolled up and from the minutes
// otherwise (the open hour); days sum the hours (UTC).
func (s *Store) UsageSeries(ctx context.Context, tenantID string, from, to time.Time, g tenant.Granularity) ([]tenant.UsagePoint, error) {
	cols := strings.Join(allUsageColumns(), ", ")
	var sql string
	switch g {
	case tenant.GranularityMinute:
		sql = `SELECT tenant_id, minute, ` + usageAggregates() + ` FROM queen_proxy.usage_minute
			WHERE ($1 = '' OR tenant_id = $1) AND minute >= $2 AND minute < $3 GROUP BY 1, 2 ORDER BY 1, 2`
	default:
		sql = `SELECT tenant_id, hour, ` + cols + ` FROM queen_proxy.usage_hour
			WHERE ($1 = '' OR tenant_id = $1) AND hour >= $2 AND hour < $3
			UNION ALL
			SELECT m.tenant_id, m.hour, ` + usageAggregates() + ` FROM (
				SELECT *, date_trunc('hour', minute AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour FROM queen_proxy.usage_minute
				WHERE ($1 = '' OR tenant_id = $1) AND minute >= $2 AND minute < $3) m
			WHERE NOT EXISTS (SELECT 1 FROM queen_proxy.usage_hour h WHERE h.tenant_id = m.tenant_id AND h.hour = m.hour)
			GROUP BY 1, 2 ORDER BY 1, 2`
	}
	rows, err := s.pool.Query(ctx, sql, tenantID, from, to)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []tenant.UsagePoint
	for rows.Next() {
		var p tenant.UsagePoint
		dest := []any{&p.Tenant, &p.Start}
		for _, f := range usageFields(&p.Usage) {
			dest = append(dest, f)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, interpretError(err)
		}
		p.Start = p.Start.UTC()
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	if g == tenant.GranularityDay {
		out = byDay(out)
	}
	return out, nil
}

// byDay folds hourly points (ordered by tenant and start) into UTC days.
func byDay(hours []tenant.UsagePoint) []tenant.UsagePoint {
	var out []tenant.UsagePoint
	for _, h := range hours {
		day := tenant.GranularityDay.Truncate(h.Start)
		if n := len(out); n > 0 && out[n-1].Tenant == h.Tenant && out[n-1].Start.Equal(day) {
			out[n-1].Add(h.Usage)
			continue
		}
		out = append(out, tenant.UsagePoint{Tenant: h.Tenant, Start: day, Usage: h.Usage})
	}
	return out
}
