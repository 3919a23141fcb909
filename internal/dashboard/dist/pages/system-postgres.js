// System page's PostgreSQL snapshot: cache hit ratios, buffers, table and index caches,
// sizes, dead tuples, HOT updates, active queries and autovacuum.
import { html } from '../lib/html.js';
import { api } from '../lib/api.js';
import { useLoader } from '../lib/data.js';
import { Card, ErrorBox, Table, Stat, Stats, Loading, KV } from '../lib/ui.js';
import * as f from '../lib/format.js';

// The broker sends every ratio in percent (a 0.8 % hit ratio is 0.8, not a fraction).
const ratio = (v) => (v === null || v === undefined ? f.dash : f.pct(Number(v)));
const t = (rows, testid, cols) => html`<${Table} testid=${testid} rows=${rows || []} empty="None."
  columns=${cols.map(([key, label, render, cls]) => ({ key, label, cls, render: render || ((r) => (r[key] === null || r[key] === undefined ? f.dash : String(r[key]))) }))} />`;

// pick reads the first present field: queen and upstream name some of these differently.
const pick = (r, ...keys) => { for (const k of keys) if (r && r[k] !== undefined && r[k] !== null) return r[k]; return null; };
const size = (r, bytesKey, textKey) => (pick(r, bytesKey) !== null ? f.bytes(pick(r, bytesKey)) : pick(r, textKey) ?? f.dash);

function sharedBuffers(cfg) {
  if (!cfg) return f.dash;
  if (cfg.sharedBuffersSize) return cfg.sharedBuffersSize;
  const sb = cfg.shared_buffers;
  if (!sb) return f.dash;
  const unit = { '8kB': 8192, kB: 1024, MB: 1048576 }[sb.unit];
  return unit ? f.bytes(Number(sb.value) * unit) : `${sb.value} ${sb.unit || ''}`;
}

export function PostgresStats() {
  const st = useLoader(() => api('/api/v1/analytics/postgres-stats'), []);
  const d = st.data || {};
  const cs = d.cacheSummary || {};
  const db = d.databaseCache || {};
  const usage = Array.isArray(d.bufferUsage) ? d.bufferUsage : null;
  return html`<div data-testid="postgres-stats">
    <div class="page-head"><h3>PostgreSQL <span class="dim">${d.database || db.database || ''}</span></h3><${Loading} show=${st.loading} /></div>
    <${ErrorBox} error=${st.error} />
    <${Stats} testid="pg-summary">
      <${Stat} label="Database cache hit" value=${ratio(pick(db, 'cacheHitRatio', 'hitRatio'))} testid="stat-pg-hit" />
      <${Stat} label="Table cache hit" value=${ratio(pick(cs.tables, 'hitRatio') ?? pick(cs, 'heapHitRatio'))} testid="stat-pg-table-hit" />
      <${Stat} label="Index cache hit" value=${ratio(pick(cs.indexes, 'hitRatio') ?? pick(cs, 'indexHitRatio'))} testid="stat-pg-index-hit" />
      <${Stat} label="Shared buffers" value=${sharedBuffers(d.bufferConfig)} testid="stat-pg-buffers" />
      ${db.sizeBytes !== undefined && html`<${Stat} label="Database size" value=${f.bytes(db.sizeBytes)} testid="stat-pg-size" />`}
    </${Stats}>
    <div class="grid2">
      <${Card} title="Table sizes" testid="card-pg-sizes">${t(d.tableSizes, 'table-pg-sizes', [['table', 'Table'],
        ['total', 'Total', (r) => size(r, 'totalBytes', 'totalSize'), 'num'], ['tbl', 'Table', (r) => size(r, 'tableBytes', 'tableSize'), 'num'], ['idx', 'Indexes', (r) => size(r, 'indexBytes', 'indexSize'), 'num']])}</${Card}>
      <${Card} title=${usage ? 'Buffer contents' : 'Buffer activity'} testid="card-pg-buffers">${usage
        ? t(usage, 'table-pg-buffers', [['object', 'Object'], ['bufferedSize', 'Buffered', null, 'num'], ['percentOfCache', '% of cache', (r) => ratio(r.percentOfCache), 'num']])
        : html`<${KV} testid="pg-bgwriter" items=${Object.entries(d.bufferUsage || {}).map(([k, v]) => [k, typeof v === 'number' ? f.num(v) : f.date(v)])} />`}</${Card}>
      <${Card} title="Table cache" testid="card-pg-table-cache">${t(d.tableCache, 'table-pg-table-cache', [['table', 'Table'],
        ['reads', 'Disk reads', (r) => f.num(pick(r, 'diskReads', 'blocksRead')), 'num'], ['hits', 'Hits', (r) => f.num(pick(r, 'cacheHits', 'blocksHit')), 'num'], ['ratio', 'Hit ratio', (r) => ratio(pick(r, 'cacheHitRatio', 'hitRatio')), 'num']])}</${Card}>
      <${Card} title="Index cache" testid="card-pg-index-cache">${t(d.indexCache, 'table-pg-index-cache', [['index', 'Index'], ['table', 'Table'],
        ['reads', 'Disk reads', (r) => f.num(pick(r, 'diskReads', 'blocksRead')), 'num'], ['ratio', 'Hit ratio', (r) => ratio(pick(r, 'cacheHitRatio', 'hitRatio')), 'num']])}</${Card}>
      <${Card} title="Dead tuples" testid="card-pg-dead">${t(d.deadTuples, 'table-pg-dead', [['table', 'Table'], ['dead', 'Dead', (r) => f.num(r.deadTuples), 'num'],
        ['pct', '%', (r) => f.pct(pick(r, 'deadPercentage', 'deadRatio')), 'num'], ['av', 'Last autovacuum', (r) => f.date(r.lastAutovacuum)], ['v', 'Last vacuum', (r) => f.date(r.lastVacuum)]])}</${Card}>
      <${Card} title="HOT updates" testid="card-pg-hot">${t(d.hotUpdates, 'table-pg-hot', [['table', 'Table'], ['upd', 'Updates', (r) => f.num(pick(r, 'totalUpdates', 'updates')), 'num'],
        ['hot', 'HOT %', (r) => f.pct(pick(r, 'hotUpdatePercentage', 'hotRatio')), 'num']])}</${Card}>
      <${Card} title="Autovacuum" testid="card-pg-autovacuum">${t(d.autovacuumStatus, 'table-pg-autovacuum', [['table', 'Table'], ['dead', 'Dead', (r) => f.num(r.deadTuples), 'num'],
        ['runs', 'Runs', (r) => f.num(r.autovacuumCount), 'num'], ['last', 'Last', (r) => f.date(r.lastAutovacuum)]])}</${Card}>
      <${Card} title="Active queries" testid="card-pg-queries">${t(d.activeQueries, 'table-pg-queries', [['pid', 'PID'], ['state', 'State'], ['duration', 'Duration'],
        ['wait', 'Wait', (r) => [r.waitEventType, r.waitEvent].filter(Boolean).join(': ') || f.dash], ['query', 'Query', (r) => html`<code class="q">${r.query}</code>`]])}</${Card}>
    </div></div>`;
}
