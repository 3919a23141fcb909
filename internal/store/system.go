package store

import (
	"context"
	"encoding/json"
)

// sqlPostgresStats builds the whole /analytics/postgres-stats document in one
// statement from the statistics views, each list bounded. Next to queen's own keys
// (byte counts, ratios in percent) each object also carries the names upstream's
// dashboard reads (cacheHitRatio, diskReads, cacheHits, totalSize as text, …), so
// either dashboard shows it; docs/api.md lists both.
const sqlPostgresStats = `
SELECT jsonb_build_object(
  'database', current_database(),
  'databaseCache', (
    SELECT to_jsonb(x) FROM (
      SELECT datname AS database, blks_hit::bigint AS "blocksHit", blks_read::bigint AS "blocksRead",
             round(100.0 * blks_hit / nullif(blks_hit + blks_read, 0), 2)::float8 AS "hitRatio",
             round(100.0 * blks_hit / nullif(blks_hit + blks_read, 0), 2)::float8 AS "cacheHitRatio",
             numbackends AS connections, xact_commit::bigint AS commits, xact_rollback::bigint AS rollbacks,
             deadlocks::bigint AS deadlocks, temp_bytes::bigint AS "tempBytes",
             pg_database_size(datname)::bigint AS "sizeBytes"
      FROM pg_stat_database WHERE datname = current_database()) x),
  'tableCache', coalesce((
    SELECT jsonb_agg(to_jsonb(x) ORDER BY x."blocksRead" DESC) FROM (
      SELECT relname AS table, heap_blks_hit::bigint AS "blocksHit", heap_blks_read::bigint AS "blocksRead",
             round(100.0 * heap_blks_hit / nullif(heap_blks_hit + heap_blks_read, 0), 2)::float8 AS "hitRatio",
             heap_blks_hit::bigint AS "cacheHits", heap_blks_read::bigint AS "diskReads",
             round(100.0 * heap_blks_hit / nullif(heap_blks_hit + heap_blks_read, 0), 2)::float8 AS "cacheHitRatio"
      FROM pg_statio_user_tables WHERE schemaname = 'queen'
      ORDER BY heap_blks_read DESC NULLS LAST LIMIT 50) x), '[]'),
  'indexCache', coalesce((
    SELECT jsonb_agg(to_jsonb(x) ORDER BY x."blocksRead" DESC) FROM (
      SELECT relname AS table, indexrelname AS index, idx_blks_hit::bigint AS "blocksHit",
             idx_blks_read::bigint AS "blocksRead",
             round(100.0 * idx_blks_hit / nullif(idx_blks_hit + idx_blks_read, 0), 2)::float8 AS "hitRatio",
             idx_blks_hit::bigint AS "cacheHits", idx_blks_read::bigint AS "diskReads",
             round(100.0 * idx_blks_hit / nullif(idx_blks_hit + idx_blks_read, 0), 2)::float8 AS "cacheHitRatio"
      FROM pg_statio_user_indexes WHERE schemaname = 'queen'
      ORDER BY idx_blks_read DESC NULLS LAST LIMIT 50) x), '[]'),
  'cacheSummary', (
    SELECT jsonb_build_object(
      'heapHitRatio', round(100.0 * sum(heap_blks_hit) / nullif(sum(heap_blks_hit) + sum(heap_blks_read), 0), 2)::float8,
      'indexHitRatio', round(100.0 * sum(idx_blks_hit) / nullif(sum(idx_blks_hit) + sum(idx_blks_read), 0), 2)::float8,
      'tables', jsonb_build_object('hitRatio',
          round(100.0 * sum(heap_blks_hit) / nullif(sum(heap_blks_hit) + sum(heap_blks_read), 0), 2)::float8),
      'indexes', jsonb_build_object('hitRatio',
          round(100.0 * sum(idx_blks_hit) / nullif(sum(idx_blks_hit) + sum(idx_blks_read), 0), 2)::float8))
    FROM pg_statio_user_tables WHERE schemaname = 'queen'),
  'deadTuples', coalesce((
    SELECT jsonb_agg(to_jsonb(x) ORDER BY x."deadTuples" DESC) FROM (
      SELECT relname AS table, n_live_tup::bigint AS "liveTuples", n_dead_tup::bigint AS "deadTuples",
             round(100.0 * n_dead_tup / nullif(n_live_tup + n_dead_tup, 0), 2)::float8 AS "deadRatio",
             round(100.0 * n_dead_tup / nullif(n_live_tup + n_dead_tup, 0), 2)::float8 AS "deadPercentage",
             last_autovacuum AS "lastAutovacuum", last_vacuum AS "lastVacuum"
      FROM pg_stat_user_tables WHERE schemaname = 'queen'
      ORDER BY n_dead_tup DESC LIMIT 50) x), '[]'),
  'hotUpdates', coalesce((
    SELECT jsonb_agg(to_jsonb(x) ORDER BY x.updates DESC) FROM (
      SELECT relname AS table, n_tup_upd::bigint AS updates, n_tup_hot_upd::bigint AS "hotUpdates",
             round(100.0 * n_tup_hot_upd / nullif(n_tup_upd, 0), 2)::float8 AS "hotRatio",
             n_tup_upd::bigint AS "totalUpdates",
             round(100.0 * n_tup_hot_upd / nullif(n_tup_upd, 0), 2)::float8 AS "hotUpdatePercentage"
      FROM pg_stat_user_tables WHERE schemaname = 'queen'
      ORDER BY n_tup_upd DESC LIMIT 50) x), '[]'),
  'activeQueries', coalesce((
    SELECT jsonb_agg(to_jsonb(x) ORDER BY x."durationMs" DESC) FROM (
      SELECT pid, state, coalesce(wait_event_type, '') AS "waitEventType", coalesce(wait_event, '') AS "waitEvent",
             coalesce(application_name, '') AS application,
             round(extract(epoch FROM clock_timestamp() - query_start) * 1000)::bigint AS "durationMs",
             (date_trunc('millisecond', clock_timestamp() - query_start))::text AS duration,
             left(query, 200) AS query
      FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND state IS DISTINCT FROM 'idle'
            AND backend_type = 'client backend'
      ORDER BY query_start NULLS LAST LIMIT 20) x), '[]'),
  'autovacuumStatus', coalesce((
    SELECT jsonb_agg(to_jsonb(x) ORDER BY x.table) FROM (
      SELECT relname AS table, last_vacuum AS "lastVacuum", last_autovacuum AS "lastAutovacuum",
             last_analyze AS "lastAnalyze", last_autoanalyze AS "lastAutoanalyze",
             vacuum_count::bigint AS "vacuumCount", autovacuum_count::bigint AS "autovacuumCount",
             n_dead_tup::bigint AS "deadTuples"
      FROM pg_stat_user_tables WHERE schemaname = 'queen'
      ORDER BY relname LIMIT 50) x), '[]'),
  'bufferConfig', coalesce((
    SELECT jsonb_object_agg(name, jsonb_build_object('value', setting, 'unit', coalesce(unit, '')))
    FROM pg_settings
    WHERE name IN ('shared_buffers', 'effective_cache_size', 'work_mem', 'maintenance_work_mem',
                   'max_connections', 'wal_buffers', 'random_page_cost', 'autovacuum')), '{}')
    || jsonb_build_object('sharedBuffersSize', current_setting('shared_buffers')),
  'bufferUsage', (
    SELECT to_jsonb(x) FROM (
      SELECT buffers_clean::bigint AS "buffersClean", maxwritten_clean::bigint AS "maxwrittenClean",
             buffers_alloc::bigint AS "buffersAlloc", stats_reset AS "statsReset"
      FROM pg_stat_bgwriter) x),
  'tableSizes', coalesce((
    SELECT jsonb_agg(to_jsonb(x) ORDER BY x."totalBytes" DESC) FROM (
      SELECT c.relname AS table, pg_total_relation_size(c.oid)::bigint AS "totalBytes",
             pg_relation_size(c.oid)::bigint AS "tableBytes", pg_indexes_size(c.oid)::bigint AS "indexBytes",
             c.reltuples::bigint AS "estimatedRows",
             pg_size_pretty(pg_total_relation_size(c.oid)) AS "totalSize",
             pg_size_pretty(pg_relation_size(c.oid)) AS "tableSize",
             pg_size_pretty(pg_indexes_size(c.oid)) AS "indexSize"
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'queen' AND c.relkind = 'r'
      ORDER BY pg_total_relation_size(c.oid) DESC LIMIT 50) x), '[]'))`

// PostgresStats returns PostgreSQL statistics about this database and the queen
// schema as one JSON object.
func (s *Store) PostgresStats(ctx context.Context) (json.RawMessage, error) {
	var doc []byte
	if err := s.pool.QueryRow(ctx, sqlPostgresStats).Scan(&doc); err != nil {
		return nil, interpretError(err)
	}
	return doc, nil
}

// Keys of the maintenance flags in queen.system_state (upstream's keys).
const (
	MaintenanceKeyPush = "maintenance_mode"
	MaintenanceKeyPop  = "pop_maintenance_mode"
)

// MaintenanceGet reads both maintenance flags; an absent key is off.
func (s *Store) MaintenanceGet(ctx context.Context) (push, pop bool, err error) {
	err = s.pool.QueryRow(ctx, `
SELECT coalesce(bool_or(key = $1 AND value->>'enabled' = 'true'), false),
       coalesce(bool_or(key = $2 AND value->>'enabled' = 'true'), false)
FROM queen.system_state WHERE key IN ($1, $2)`, MaintenanceKeyPush, MaintenanceKeyPop).Scan(&push, &pop)
	return push, pop, interpretError(err)
}

// MaintenanceSet stores the flag key ([MaintenanceKeyPush] or [MaintenanceKeyPop]) as
// {"enabled": enabled}.
func (s *Store) MaintenanceSet(ctx context.Context, key string, enabled bool) error {
	_, err := s.pool.Exec(ctx, `
INSERT INTO queen.system_state (key, value, updated_at) VALUES ($1, jsonb_build_object('enabled', $2::boolean), now())
ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = now()`, key, enabled)
	return interpretError(err)
}
