// System (/system): broker processes over time (CPU, memory, pool, goroutines, scheduler
// delay, parked long-polls) per server or summed, replicas, the spool, live waiters and
// the PostgreSQL snapshot.
import { html, useState } from '../lib/html.js';
import { api } from '../lib/api.js';
import { useLoader } from '../lib/data.js';
import { rangeWindow, series, gaps } from '../lib/time.js';
import { Chart } from '../lib/chart.js';
import { Card, ErrorBox, Loading, PageHead, Range, Table, Tabs } from '../lib/ui.js';
import { Replicas, Spool } from './parts/replicas.js';
import { LongPolls } from './parts/longpolls.js';
import { PostgresStats } from './system-postgres.js';
import * as f from '../lib/format.js';

// METRICS: label, path into metrics, scale, formatter, how replicas combine in Aggregate.
const METRICS = [
  ['CPU %', ['cpu', 'user_us'], ['cpu', 'system_us'], 1 / 10000, (v) => f.pct(v), 'sum'],
  ['RSS', ['memory', 'rss_bytes'], null, 1, f.bytes, 'sum'],
  ['Pool active', ['database', 'pool_active'], null, 1, f.compact, 'sum'],
  ['Pool open', ['database', 'pool_open'], null, 1, f.compact, 'sum'],
  ['Goroutines', ['runtime', 'goroutines'], null, 1, f.compact, 'sum'],
  ['Scheduler delay', ['runtime', 'scheduler_delay_ms'], null, 1, f.ms, 'max'],
  ['Parked long-polls', ['longpoll', 'parked'], null, 1, f.compact, 'sum'],
];

function pick(metrics, path, stat) {
  let o = metrics;
  for (const k of path) o = o && o[k];
  return o && Number.isFinite(Number(o[stat])) ? Number(o[stat]) : null;
}

function value(p, m, stat) {
  const a = pick(p.metrics, m[1], stat);
  const b = m[2] ? pick(p.metrics, m[2], stat) : 0;
  return a === null && (b === null || b === 0) ? null : ((a || 0) + (b || 0)) * m[3];
}

export function SystemPage() {
  const [range, setRange] = useState('1h');
  const [mode, setMode] = useState('Per server');
  const [stat, setStat] = useState('avg');
  const st = useLoader(() => api('/api/v1/analytics/system-metrics', { query: rangeWindow(range) }), [range], 60000);
  const d = st.data || {};
  const reps = (d.replicas || []).map((r) => ({ id: r.workerId ? `${r.hostname}:${r.workerId}` : r.hostname, rows: gaps(series(r.timeSeries, 'timestamp', d), d) }));
  const chart = (m) => {
    if (mode === 'Per server') {
      return reps.map((r, i) => ({ label: r.id, cls: 's' + (i % 8), points: r.rows.map((p) => ({ t: p.t, v: value(p, m, stat) })) }));
    }
    const by = new Map();
    for (const r of reps) {
      for (const p of r.rows) {
        const v = value(p, m, stat);
        if (v === null) continue;
        by.set(p.t, m[5] === 'max' ? Math.max(by.get(p.t) ?? v, v) : (by.get(p.t) || 0) + v);
      }
    }
    return [{ label: `all ${reps.length} servers`, points: gaps([...by.entries()].sort((a, b) => a[0] - b[0]).map(([t, v]) => ({ t, v })), d) }];
  };
  const lastOf = (r, m) => { for (let i = r.rows.length - 1; i >= 0; i--) { const v = value(r.rows[i], m, 'last'); if (v !== null) return v; } return null; };
  return html`<div>
    <${PageHead} title="System" sub=${`${f.num(d.replicaCount ?? reps.length)} broker processes`}><${Loading} show=${st.loading} />
      <${Range} value=${range} options=${['1h', '6h', '24h', '7d']} onChange=${setRange} /></${PageHead}>
    <${ErrorBox} error=${st.error} />
    <${Replicas} />
    <div class="grid2"><${Spool} /><${LongPolls} testid="card-system-longpolls" /></div>
    <${Card} title="Resources" testid="card-resources" actions=${html`<${Tabs} tabs=${['Per server', 'Aggregate']} value=${mode} onChange=${setMode} testid="resources-mode" />
      <${Tabs} tabs=${['avg', 'max', 'min']} value=${stat} onChange=${setStat} testid="resources-stat" />`}>
      <div class="grid2">${METRICS.map((m) => html`<div><h4>${m[0]}</h4><${Chart} series=${chart(m)} fmt=${m[4]} testid=${'chart-sys-' + m[0].toLowerCase().replace(/[^a-z]+/g, '-')} /></div>`)}</div>
      <h4>Servers</h4>
      <${Table} testid="table-servers" rows=${reps} rowKey=${(r) => r.id} empty="No broker reported metrics in this range."
        columns=${[{ key: 'id', label: 'Server', render: (r) => r.id }, ...METRICS.map((m) => ({ key: m[0], label: m[0], cls: 'num', render: (r) => m[4](lastOf(r, m)) }))]} />
    </${Card}>
    <${PostgresStats} />
  </div>`;
}
