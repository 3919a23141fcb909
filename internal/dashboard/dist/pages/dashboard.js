// Dashboard (/): cluster counts, the metric rows over the chosen range, the queues with
// the largest backlog and the most lagging consumer groups.
import { html, useState } from '../lib/html.js';
import { api, list } from '../lib/api.js';
import { useLoader, settle } from '../lib/data.js';
import { rangeWindow, series, latest, sum, byBucket } from '../lib/time.js';
import { points } from '../lib/chart.js';
import { MetricRows } from '../lib/metrics.js';
import { Card, Stat, Stats, ErrorBox, Loading, PageHead, Range, Table, Trunc } from '../lib/ui.js';
import * as f from '../lib/format.js';
import * as sev from '../lib/severity.js';

function load(range) {
  const w = rangeWindow(range);
  return settle({
    overview: () => api('/api/v1/resources/overview'),
    queues: () => api('/api/v1/resources/queues'),
    groups: () => api('/api/v1/consumer-groups').then(list),
    status: () => api('/api/v1/status', { query: w }),
    retention: () => api('/api/v1/analytics/retention', { query: w }),
    ops: () => api('/api/v1/analytics/queue-ops', { query: w }),
    system: () => api('/api/v1/analytics/system-metrics', { query: w }),
  });
}

/** cpuPerReplica turns system-metrics into one CPU % series per replica (µs per s ÷ 10 000). */
function cpuPerReplica(system) {
  return ((system && system.replicas) || []).map((r, i) => {
    const rows = series(r.timeSeries, 'timestamp', system).map((p) => {
      const cpu = (p.metrics && p.metrics.cpu) || {};
      const u = cpu.user_us ? cpu.user_us.avg : null;
      const s = cpu.system_us ? cpu.system_us.avg : null;
      return { t: p.t, v: u === null && s === null ? null : ((u || 0) + (s || 0)) / 10000 };
    });
    return { label: r.workerId ? `${r.hostname}:${r.workerId}` : r.hostname, points: rows, cls: 's' + (i % 8) };
  });
}

export function buildRows(d) {
  const st = d.status || {};
  const tp = series(st.throughput, 'timestamp', st);
  const ops = d.ops ? series(d.ops.series, 'bucket', d.ops) : [];
  const opsB = byBucket(ops, ['parkedCount', 'popMessages', 'popEmpty', 'partitionsCreated', 'partitionsDeleted']);
  const ret = d.retention ? series(d.retention.series, 'bucket', d.retention) : [];
  const ov = d.overview || {};
  const lag = (ov.lag && ov.lag.time) || {};
  const workers = st.workers || [];
  // /status zero-fills its series; these keep only the buckets in which a broker sampled
  // its gauges (minFreeSlots is null otherwise) or wrote a process sample (pool size > 0),
  // so a bucket without a broker is a gap, and "now" the latest bucket with data.
  const sampled = tp.map((r) => (r.minFreeSlots === null || r.minFreeSlots === undefined ? { t: r.t } : r));
  const sys = tp.map((r) => (Number(r.dbPoolSize) > 0 ? r : { t: r.t }));

  let acc = 0;
  const pend = tp.map((r) => { acc += (Number(r.ingested) || 0) - (Number(r.processed) || 0); return { t: r.t, v: acc }; });
  const fillPts = opsB.map((b) => ({ t: b.t, v: b.popMessages + b.popEmpty > 0 ? (b.popMessages / (b.popMessages + b.popEmpty)) * 100 : null }));
  const last5 = opsB.slice(-5);
  const pm = sum(last5, 'popMessages'); const pe = sum(last5, 'popEmpty');
  const fillNow = pm + pe > 0 ? pm / (pm + pe) : null;
  const errNow = sum(tp, 'dbErrors') + sum(tp, 'ackFailed') + (latest(tp, 'dlqCount') || 0);
  const elAvg = workers.length ? workers.reduce((a, w) => a + (Number(w.avgEventLoopLagMs) || 0), 0) / workers.length : latest(sampled, 'avgEventLoopLagMs');
  const elMax = workers.length ? Math.max(...workers.map((w) => Number(w.maxEventLoopLagMs) || 0)) : latest(sampled, 'maxEventLoopLagMs');
  const replicas = cpuPerReplica(d.system);
  const cpuNow = replicas.length > 1
    ? Math.max(...replicas.map((r) => { for (let i = r.points.length - 1; i >= 0; i--) if (r.points[i].v !== null) return r.points[i].v; return 0; }))
    : (latest(sys, 'queenCpuUserPct') || 0) + (latest(sys, 'queenCpuSysPct') || 0);
  const active = latest(sys, 'dbPoolActive'); const size = latest(sys, 'dbPoolSize');
  const retNow = sum(ret, 'retentionMsgs') + sum(ret, 'completedRetentionMsgs') + sum(ret, 'evictionMsgs');
  const num = (v) => f.num(v, 2);

  return [
    { id: 'throughput', label: 'Throughput', now: f.rate(ov.throughput ? ov.throughput.ingestedPerSecond : latest(tp, 'ingestedPerSecond')),
      fmt: num, series: [{ label: 'push/s', points: points(tp, 'ingestedPerSecond') }, { label: 'pop/s', points: points(tp, 'popPerSecond') }, { label: 'ack/s', points: points(tp, 'processedPerSecond') }] },
    { id: 'pending', label: 'Pending Δ', now: f.num(acc), sev: sev.pendingDelta(acc), series: [{ label: 'pending Δ', points: pend }] },
    { id: 'parked', label: 'Parked long-polls', now: f.num(opsB.length ? opsB[opsB.length - 1].parkedCount : null, 1),
      series: [{ label: 'parked', points: opsB.map((b) => ({ t: b.t, v: b.parkedCount })) }] },
    { id: 'fill', label: 'Fill ratio', now: f.ratioPct(fillNow), sev: sev.fill(fillNow), fmt: (v) => f.pct(v, 0),
      series: [{ label: 'pops with messages %', points: fillPts }] },
    { id: 'lag', label: 'Time lag', now: `${f.secs(lag.avg)} avg · ${f.secs(lag.max)} max`, sev: sev.timeLag(lag.max), fmt: f.ms,
      series: [{ label: 'avg', points: points(tp, 'avgLagMs') }, { label: 'max', points: points(tp, 'maxLagMs') }] },
    { id: 'errors', label: 'Errors', now: f.num(errNow), sev: sev.errors(errNow), href: '/dlq',
      series: [{ label: 'db errors', points: points(tp, 'dbErrors'), kind: 'bar', cls: 'bad' }, { label: 'ack failed', points: points(tp, 'ackFailed'), kind: 'bar', cls: 'warn' }] },
    { id: 'scheduler', label: 'Scheduler delay', now: `${f.ms(elAvg)} avg · ${f.ms(elMax)} max`, sev: sev.eventLoop(elMax), fmt: f.ms,
      series: [{ label: 'avg', points: points(sampled, 'avgEventLoopLagMs') }, { label: 'max', points: points(sampled, 'maxEventLoopLagMs') }] },
    { id: 'cpu', label: replicas.length > 1 ? 'Queen CPU (hottest)' : 'Queen CPU', now: f.pct(cpuNow), fmt: (v) => f.pct(v),
      series: replicas.length > 1 ? replicas : [{ label: 'user', points: points(sys, 'queenCpuUserPct') }, { label: 'sys', points: points(sys, 'queenCpuSysPct') }] },
    { id: 'pool', label: 'DB pool', now: `${f.num(active)} / ${f.num(size)}`, sev: sev.pool(active, size),
      series: [{ label: 'active', points: points(sys, 'dbPoolActive') }, { label: 'idle', points: points(sys, 'dbPoolIdle') }] },
    { id: 'partitions', label: 'Partitions', now: `+${f.num(sum(opsB, 'partitionsCreated'))} / −${f.num(sum(opsB, 'partitionsDeleted'))}`,
      series: [{ label: 'created', points: opsB.map((b) => ({ t: b.t, v: b.partitionsCreated })), kind: 'bar', cls: 'ok' }, { label: 'deleted', points: opsB.map((b) => ({ t: b.t, v: b.partitionsDeleted })), kind: 'bar', cls: 'bad' }] },
    { id: 'retention', label: 'Retention', now: f.num(retNow),
      series: [{ label: 'retention', points: points(ret, 'retentionMsgs'), kind: 'bar' }, { label: 'completed retention', points: points(ret, 'completedRetentionMsgs'), kind: 'bar' }, { label: 'eviction', points: points(ret, 'evictionMsgs'), kind: 'bar' }] },
  ];
}

export function DashboardPage() {
  const [range, setRange] = useState('1h');
  const st = useLoader(() => load(range), [range], 30000);
  const d = st.data || {};
  const ov = d.overview || {};
  const msgs = ov.messages || {};
  const queues = (d.queues && d.queues.queues) || [];
  const groups = d.groups || [];
  const eff = (d.status && d.status.messages && d.status.messages.batchEfficiency) || {};
  const worst = new Map();
  for (const g of groups) worst.set(g.queueName, Math.max(worst.get(g.queueName) || 0, Number(g.maxTimeLag) || 0));
  const topQueues = [...queues].sort((a, b) => ((b.messages && b.messages.pending) || 0) - ((a.messages && a.messages.pending) || 0)).slice(0, 6);
  const topGroups = [...groups].sort((a, b) => (Number(b.maxTimeLag) || 0) - (Number(a.maxTimeLag) || 0)).slice(0, 6);
  return html`<div>
    <${PageHead} title="Dashboard"><${Loading} show=${st.loading} /><${Range} value=${range} onChange=${setRange} /></${PageHead}>
    <${ErrorBox} error=${st.error} />
    <${Stats} testid="dashboard-counts">
      <${Stat} label="Messages" value=${f.num(msgs.total)} testid="stat-messages" />
      <${Stat} label="Queues" value=${f.num(ov.queues ?? (d.queues ? queues.length : null))} testid="stat-queues" />
      <${Stat} label="Partitions" value=${f.num(d.queues ? queues.reduce((a, q) => a + (Number(q.partitions) || 0), 0) : null)} testid="stat-partitions" />
      <${Stat} label="Consumer groups" value=${f.num(d.groups ? groups.length : null)} testid="stat-groups" />
      <${Stat} label="Pending" value=${f.num(msgs.pending)} sev=${sev.pending(msgs.pending)} testid="stat-pending" />
      <${Stat} label="Completed" value=${f.num(msgs.completed)} testid="stat-completed" />
      <${Stat} label="Batch efficiency" value=${`${f.num(eff.push, 1)} · ${f.num(eff.pop, 1)} · ${f.num(eff.ack, 1)}`}
        hint="messages per push · pop · ack request" testid="stat-batch" />
    </${Stats}>
    <${Card} title="Metrics" testid="card-metrics"><${MetricRows} rows=${buildRows(d)} /></${Card}>
    <div class="grid2">
      <${Card} title="Top queues by pending" testid="card-top-queues">
        <${Table} testid="table-top-queues" rows=${topQueues} rowKey=${(q) => q.name} empty="No queues."
          columns=${[
            { key: 'name', label: 'Queue', render: (q) => html`<a href=${'/queues/' + encodeURIComponent(q.name)}><${Trunc} text=${q.name} /></a>` },
            { key: 'pending', label: 'Pending', cls: 'num', render: (q) => html`<span class=${sev.pending(q.messages && q.messages.pending)}>${f.num(q.messages && q.messages.pending)}</span>` },
            { key: 'lag', label: 'Worst lag', cls: 'num', render: (q) => html`<span class=${sev.timeLag(worst.get(q.name))}>${worst.has(q.name) ? f.secs(worst.get(q.name)) : f.dash}</span>` },
            { key: 'partitions', label: 'Partitions', cls: 'num', render: (q) => f.num(q.partitions) },
          ]} /></${Card}>
      <${Card} title="Consumer groups by time lag" testid="card-top-groups">
        <${Table} testid="table-top-groups" rows=${topGroups} rowKey=${(g) => g.name + '@' + g.queueName} empty="No consumer groups."
          columns=${[
            { key: 'name', label: 'Group', render: (g) => html`<a href=${'/consumers?search=' + encodeURIComponent(g.name)}><${Trunc} text=${f.group(g.name)} /></a>` },
            { key: 'queue', label: 'Queue', render: (g) => html`<${Trunc} text=${g.queueName} />` },
            { key: 'members', label: 'Partitions', cls: 'num', render: (g) => f.num(g.members) },
            { key: 'lag', label: 'Time lag', cls: 'num', render: (g) => html`<span class=${sev.timeLag(g.maxTimeLag)}>${f.secs(g.maxTimeLag)}</span>` },
            { key: 'state', label: '', render: (g) => ((Number(g.maxTimeLag) || 0) >= 60 || g.partitionsWithLag > 0 ? html`<span class="tag warn">lagging</span>` : '') },
          ]} /></${Card}>
    </div>
  </div>`;
}
