package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Replica is a live proxy process.
type Replica struct {
	ID          string    `json:"id"`
	Instance    string    `json:"instance"`
	StartedAt   time.Time `json:"startedAt"`
	HeartbeatAt time.Time `json:"heartbeatAt"`
}

// ReplicaHeartbeat records that the replica is alive, and forgets replicas silent for
// longer than stale.
func (s *Store) ReplicaHeartbeat(ctx context.Context, id, instance string, stale time.Duration) error {
	batch := &pgx.Batch{}
	batch.Queue(`INSERT INTO queen_proxy.replicas (id, instance) VALUES ($1, $2)
		ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()`, id, instance)
	batch.Queue(`DELETE FROM queen_proxy.replicas WHERE heartbeat_at < now() - $1::interval`, stale)
	batch.Queue(`DELETE FROM queen_proxy.limiter_demand WHERE updated_at < now() - $1::interval`, stale)
	return interpretError(s.pool.SendBatch(ctx, batch).Close())
}

// ReplicaDelete removes the replica's rows at a clean stop.
func (s *Store) ReplicaDelete(ctx context.Context, id string) error {
	batch := &pgx.Batch{}
	batch.Queue(`DELETE FROM queen_proxy.replicas WHERE id = $1`, id)
	batch.Queue(`DELETE FROM queen_proxy.limiter_demand WHERE replica_id = $1`, id)
	return interpretError(s.pool.SendBatch(ctx, batch).Close())
}

// ReplicaList returns the replicas heard from within fresh.
func (s *Store) ReplicaList(ctx context.Context, fresh time.Duration) ([]Replica, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, instance, started_at, heartbeat_at FROM queen_proxy.replicas
		WHERE heartbeat_at >= now() - $1::interval ORDER BY started_at, id`, fresh)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Replica])
	return out, interpretError(err)
}

// Demand is one replica's smoothed demand of one tenant, in tokens per second.
type Demand struct {
	Tenant   string
	Requests float64
	Messages float64
}

// DemandSync is the cluster's view of the limiter after a sync.
type DemandSync struct {
	// Replicas is the number of live replicas (at least 1: this one).
	Replicas int
	// Total is every fresh replica's demand per tenant, this one's included.
	Total map[string]Demand
}

// LimiterSync upserts this replica's demand per tenant in one statement and returns
// every fresh replica's demand summed per tenant (rows older than fresh are ignored),
// with the number of replicas heard from within replicaFresh.
func (s *Store) LimiterSync(ctx context.Context, replicaID string, own []Demand, fresh, replicaFresh time.Duration) (*DemandSync, error) {
	tenants := make([]string, len(own))
	reqs := make([]float64, len(own))
	msgs := make([]float64, len(own))
	for i, d := range own {
		tenants[i], reqs[i], msgs[i] = d.Tenant, d.Requests, d.Messages
	}
	rows, err := s.pool.Query(ctx, `WITH up AS (
			INSERT INTO queen_proxy.limiter_demand (replica_id, tenant_id, requests, messages, updated_at)
			SELECT $1, t, r, m, now() FROM unnest($2::text[], $3::float8[], $4::float8[]) AS u(t, r, m)
			ON CONFLICT (tenant_id, replica_id) DO UPDATE SET requests = excluded.requests,
				messages = excluded.messages, updated_at = excluded.updated_at
			RETURNING tenant_id, requests, messages
		), others AS (
			SELECT tenant_id, requests, messages FROM queen_proxy.limiter_demand
			WHERE replica_id <> $1 AND updated_at >= now() - $5::interval
		), live AS (
			SELECT count(*) AS n FROM queen_proxy.replicas WHERE heartbeat_at >= now() - $6::interval AND id <> $1
		)
		SELECT tenant_id, sum(requests), sum(messages), (SELECT n FROM live)
		FROM (SELECT * FROM up UNION ALL SELECT * FROM others) d GROUP BY tenant_id
		UNION ALL SELECT NULL, 0, 0, (SELECT n FROM live)`, replicaID, tenants, reqs, msgs, fresh, replicaFresh)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := &DemandSync{Total: map[string]Demand{}, Replicas: 1}
	for rows.Next() {
		var t *string
		var d Demand
		var others int
		if err := rows.Scan(&t, &d.Requests, &d.Messages, &others); err != nil {
			return nil, interpretError(err)
		}
		out.Replicas = 1 + others
		if t != nil {
			d.Tenant = *t
			out.Total[*t] = d
		}
	}
	return out, interpretError(rows.Err())
}
