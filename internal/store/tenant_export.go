package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// A tenant's rows, for moving a tenant between cells (docs/api.md, "Tenant export,
// import and fences"). Every statement here takes $1 = the tenant's prefix (its id and
// ':', how its queues and groups are stored) and $2 = the tenant id. Rows travel as
// to_jsonb(row), every column as stored, but for the bigserial ids the target assigns.

// sqlTenantQueues and sqlTenantPartitions are the ids of the tenant's queues and of
// their partitions: what most tables are attributed to a tenant by.
const (
	sqlTenantQueues     = `(SELECT id FROM queen.queues WHERE starts_with(name::text, $1))`
	sqlTenantPartitions = `(SELECT p.id FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
        WHERE starts_with(q.name::text, $1))`
	sqlTenantStreams = `(SELECT id FROM queen_streams.queries WHERE starts_with(source_queue, $1))`
)

// tenantTable is one table holding a tenant's state (every one but messages).
type tenantTable struct {
	// key names the table's rows in the export and the import.
	key string
	// table is the qualified table name.
	table string
	// owned is the SQL condition, on the table's row as t, that the row is the tenant's.
	owned string
	// serial is set for a table whose bigserial id is not carried.
	serial bool
	// order sorts the exported rows (on t), for a stable answer.
	order string
}

// tenantTables lists the tables of a tenant's state, parents before children (the
// order rows are inserted in).
var tenantTables = []tenantTable{
	{key: "queues", table: "queen.queues", owned: `starts_with(t.name::text, $1)`, order: "t.name"},
	{key: "partitions", table: "queen.partitions", owned: `t.queue_id IN ` + sqlTenantQueues, order: "t.id"},
	{key: "consumers", table: "queen.partition_consumers", owned: `t.partition_id IN ` + sqlTenantPartitions,
		order: "t.partition_id, t.consumer_group"},
	{key: "lookup", table: "queen.partition_lookup", serial: true,
		owned: `t.partition_id IN ` + sqlTenantPartitions + ` AND starts_with(t.queue_name::text, $1)`, order: "t.partition_id"},
	{key: "groups", table: "queen.consumer_groups_metadata", serial: true,
		owned: `(starts_with(t.consumer_group::text, $1) OR starts_with(t.queue_name::text, $1))`,
		order: "t.consumer_group, t.queue_name, t.partition_name, t.namespace, t.task"},
	{key: "watermarks", table: "queen.consumer_watermarks", owned: `starts_with(t.queue_name::text, $1)`,
		order: "t.queue_name, t.consumer_group"},
	{key: "queueConsumers", table: "queen.queue_consumers", owned: `t.queue_id IN ` + sqlTenantQueues,
		order: "t.queue_id, t.consumer_group"},
	{key: "groupPolicies", table: "queen.consumer_group_policies", owned: `t.queue_id IN ` + sqlTenantQueues,
		order: "t.queue_id, t.consumer_group"},
	{key: "ready", table: "queen.partition_ready", owned: `t.partition_id IN ` + sqlTenantPartitions,
		order: "t.partition_id, t.consumer_group"},
	{key: "dlq", table: "queen.dead_letter_queue", owned: `t.partition_id IN ` + sqlTenantPartitions, order: "t.id"},
	{key: "traces", table: "queen.message_traces", owned: `t.partition_id IN ` + sqlTenantPartitions, order: "t.id"},
	{key: "traceNames", table: "queen.message_trace_names",
		owned: `t.trace_id IN (SELECT id FROM queen.message_traces WHERE partition_id IN ` + sqlTenantPartitions + `)`,
		order: "t.trace_id, t.trace_name"},
	{key: "kv", table: "queen.kv_entries", owned: `t.tenant = $2`, order: "t.ns, t.key"},
	{key: "timers", table: "queen.message_timers", owned: `starts_with(t.queue_name, $1)`, order: "t.queue_name, t.timer_key"},
	{key: "timersDead", table: "queen.message_timers_dead", owned: `starts_with(t.queue_name, $1)`, order: "t.id"},
	{key: "streamQueries", table: "queen_streams.queries", owned: `starts_with(t.source_queue, $1)`, order: "t.id"},
	{key: "streamState", table: "queen_streams.state", owned: `t.query_id IN ` + sqlTenantStreams,
		order: "t.query_id, t.partition_id, t.key"},
	{key: "streamShards", table: "queen_streams.shards", owned: `t.query_id IN ` + sqlTenantStreams,
		order: "t.query_id, t.partition_id"},
}

// TenantStateKeys lists the keys of a tenant's state export, in insert order.
func TenantStateKeys() []string {
	out := make([]string, len(tenantTables))
	for i, tt := range tenantTables {
		out[i] = tt.key
	}
	return out
}

// tenantPrefix is how tenant's queue and group names start.
func tenantPrefix(tenant string) string { return tenant + ":" }

// sqlTenantHeads is one object per partition of the tenant: its id, stored queue
// name, name, message count and last message by (created_at, id), null when empty.
const sqlTenantHeads = `
SELECT coalesce(jsonb_agg(jsonb_build_object('id', p.id, 'queue', q.name, 'name', p.name, 'count', c.n,
        'lastCreatedAt', l.created_at, 'lastId', l.id) ORDER BY q.name, p.name), '[]'::jsonb)
FROM queen.queues q
JOIN queen.partitions p ON p.queue_id = q.id
CROSS JOIN LATERAL (SELECT count(*) AS n FROM queen.messages m WHERE m.partition_id = p.id) c
LEFT JOIN LATERAL (SELECT m.created_at, m.id FROM queen.messages m WHERE m.partition_id = p.id
                   ORDER BY m.created_at DESC, m.id DESC LIMIT 1) l ON true
WHERE starts_with(q.name::text, $1)`

// TenantExportHeads returns a JSON array with one object per partition of tenant
// (id, queue, name, count, lastCreatedAt, lastId).
func (s *Store) TenantExportHeads(ctx context.Context, tenant string) (json.RawMessage, error) {
	var out json.RawMessage
	if err := s.pool.QueryRow(ctx, sqlTenantHeads, tenantPrefix(tenant)).Scan(&out); err != nil {
		return nil, fmt.Errorf("store: tenant export heads: %w", interpretError(err))
	}
	return out, nil
}

// sqlTenantMessages pages through the tenant's messages in (partition_id, created_at,
// id) order: $2 is the since object ({"<partition id>":{"createdAt","id"}}; a
// partition's rows start after its entry), $3..$5 the key of the last row of the
// previous page (all null on the first), $6 the limit. Each partition is read by one
// range scan of idx_messages_partition_created from its lower bound, lazily: a page
// reads the partitions it returns rows of, and scans the others' index only once.
const sqlTenantMessages = `
WITH tp AS (
    SELECT p.id FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE starts_with(q.name::text, $1) AND ($3::uuid IS NULL OR p.id >= $3::uuid)
), s AS (
    SELECT key::uuid AS pid, (value->>'createdAt')::timestamptz AS c, (value->>'id')::uuid AS i
    FROM jsonb_each($2::jsonb)
), b AS (
    SELECT tp.id,
           CASE WHEN tp.id = $3::uuid AND ($4::timestamptz, $5::uuid) > (coalesce(s.c, '-infinity'), coalesce(s.i, '00000000-0000-0000-0000-000000000000'))
                THEN $4::timestamptz ELSE coalesce(s.c, '-infinity') END AS c,
           CASE WHEN tp.id = $3::uuid AND ($4::timestamptz, $5::uuid) > (coalesce(s.c, '-infinity'), coalesce(s.i, '00000000-0000-0000-0000-000000000000'))
                THEN $5::uuid ELSE coalesce(s.i, '00000000-0000-0000-0000-000000000000') END AS i
    FROM tp LEFT JOIN s ON s.pid = tp.id
)
SELECT to_jsonb(m)
FROM b
CROSS JOIN LATERAL (
    SELECT * FROM queen.messages m
    WHERE m.partition_id = b.id AND (m.created_at, m.id) > (b.c, b.i)
    ORDER BY m.created_at, m.id LIMIT $6
) m
ORDER BY b.id, m.created_at, m.id
LIMIT $6`

// TenantExportMessages returns up to limit messages of tenant (to_jsonb rows) in
// (partition_id, created_at, id) order, after the row keyed afterPartition,
// afterCreatedAt, afterID ("" for all three: from the start), a partition's rows
// starting after its entry in since (a JSON object keyed by partition id, values
// {"createdAt","id"}; nil or {} for none). The next page starts after the last row.
func (s *Store) TenantExportMessages(ctx context.Context, tenant string, since json.RawMessage,
	afterPartition, afterCreatedAt, afterID string, limit int) ([]json.RawMessage, error) {
	if len(since) == 0 || string(since) == "null" {
		since = json.RawMessage(`{}`)
	}
	var ap, ac, ai *string
	if afterPartition != "" {
		ap, ac, ai = &afterPartition, &afterCreatedAt, &afterID
	}
	rows, err := s.pool.Query(ctx, sqlTenantMessages, tenantPrefix(tenant), string(since), ap, ac, ai, limit)
	if err != nil {
		return nil, tenantInputError("tenant export messages", "since", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[json.RawMessage])
	if err != nil {
		return nil, tenantInputError("tenant export messages", "since", err)
	}
	return out, nil
}

// TenantExportIDs returns every message id of partitionID, a partition of tenant's, in
// (created_at, id) order; none for a partition that is not the tenant's.
func (s *Store) TenantExportIDs(ctx context.Context, tenant, partitionID string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT m.id::text FROM queen.messages m
        WHERE m.partition_id = $2::uuid AND m.partition_id IN `+sqlTenantPartitions+`
        ORDER BY m.created_at, m.id`, tenantPrefix(tenant), partitionID)
	if err != nil {
		return nil, tenantInputError("tenant export ids", "partitionId", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, tenantInputError("tenant export ids", "partitionId", err)
	}
	return ids, nil
}

// TenantExportState returns every row of tenant in the tables of its state (all but
// messages) as one JSON object: a key per table (TenantStateKeys), each an array of
// to_jsonb rows, read in one snapshot.
func (s *Store) TenantExportState(ctx context.Context, tenant string) (json.RawMessage, error) {
	var b strings.Builder
	b.WriteString("SELECT jsonb_build_object(")
	for i, tt := range tenantTables {
		if i > 0 {
			b.WriteString(", ")
		}
		row := "to_jsonb(t)"
		if tt.serial {
			row = "to_jsonb(t) - 'id'"
		}
		fmt.Fprintf(&b, "'%s', (SELECT coalesce(jsonb_agg(%s ORDER BY %s), '[]'::jsonb) FROM %s t WHERE %s)",
			tt.key, row, tt.order, tt.table, tt.owned)
	}
	b.WriteString(")")
	var out json.RawMessage
	if err := s.pool.QueryRow(ctx, b.String(), tenantPrefix(tenant), tenant).Scan(&out); err != nil {
		return nil, fmt.Errorf("store: tenant export state: %w", interpretError(err))
	}
	return out, nil
}
