// Analytics (/analytics): message flow, the largest queues, status shares, leases, DLQ
// and workers over a range, filtered by queue, namespace or task.
import { html, useState } from '../lib/html.js';
import { api } from '../lib/api.js';
import { useLoader, settle } from '../lib/data.js';
import { rangeWindow, series, toLocalInput } from '../lib/time.js';
import { Chart, points, Stacked, Doughnut, HBars } from '../lib/chart.js';
import { Card, Stat, Stats, ErrorBox, Loading, PageHead, Range, KV } from '../lib/ui.js';
import * as f from '../lib/format.js';
import * as sev from '../lib/severity.js';

export function AnalyticsPage() {
  const [range, setRange] = useState('1h');
  const now = new Date();
  const [custom, setCustom] = useState({ from: toLocalInput(new Date(now - 3600000)), to: toLocalInput(now) });
  const [flt, setFlt] = useState({ queue: '', namespace: '', task: '' });
  const st = useLoader(() => settle({
    status: () => api('/api/v1/status', { query: { ...rangeWindow(range, custom), ...flt } }),
    queues: () => api('/api/v1/status/queues', { query: { limit: 500, namespace: flt.namespace, task: flt.task } }),
    namespaces: () => api('/api/v1/resources/namespaces'),
    tasks: () => api('/api/v1/resources/tasks'),
  }), [range, custom.from, custom.to, flt.queue, flt.namespace, flt.task]);
  const d = st.data || {};
  const s = d.status || {};
  const tp = series(s.throughput, 'timestamp', s);
  const allQ = (d.queues && d.queues.queues) || [];
  const qs = allQ.filter((q) => !flt.queue || q.name === flt.queue);
  const filtered = flt.queue || flt.namespace || flt.task;
  // The status counters honour the filters; without them (an older broker), a filter
  // sums the filtered queues' counters, which lack completed, failed and dead letter.
  const m = s.messages ? s.messages : !filtered ? {} : qs.reduce((a, q) => { const x = q.messages || {}; ['total', 'pending', 'processing', 'completed', 'failed', 'deadLetter'].forEach((k) => { a[k] = (a[k] || 0) + (Number(x[k]) || 0); }); return a; }, {});
  const top = [...qs].sort((a, b) => ((b.messages || {}).total || 0) - ((a.messages || {}).total || 0)).slice(0, 8);
  const leases = s.leases || {};
  const dq = s.deadLetterQueue || {};
  // The Status doughnut has no "failed" slice: failed and dead letter count the same
  // messages (those that exhausted their retries), and both slices would count them twice.
  // Its centre is the sum of its slices, captioned so: the states can overlap (a dead
  // letter the cursor has not passed also counts as pending or processing), so that sum
  // need not be the Total card.
  const workers = s.workers || [];
  const sel = (k, items, label) => html`<select value=${flt[k]} data-testid=${'analytics-' + k} onChange=${(e) => setFlt({ ...flt, [k]: e.target.value })}>
    <option value="">${label}</option>${items.map((n) => html`<option value=${n}>${n}</option>`)}</select>`;
  return html`<div>
    <${PageHead} title="Analytics"><${Loading} show=${st.loading} />
      <${Range} value=${range} options=${['1h', '6h', '24h', '7d', 'custom']} onChange=${setRange} custom=${custom} onCustom=${setCustom} /></${PageHead}>
    <div class="filters">
      ${sel('queue', allQ.map((q) => q.name).sort(), 'All queues')}
      ${sel('namespace', ((d.namespaces && d.namespaces.namespaces) || []).map((n) => n.namespace), 'All namespaces')}
      ${sel('task', ((d.tasks && d.tasks.tasks) || []).map((t) => t.task), 'All tasks')}
    </div>
    <${ErrorBox} error=${st.error} />
    <${Stats} testid="analytics-counts">
      <${Stat} label="Total" value=${f.num(m.total)} testid="stat-total" />
      <${Stat} label="Pending" value=${f.num(m.pending)} sev=${sev.pending(m.pending)} testid="stat-pending" />
      <${Stat} label="Processing" value=${f.num(m.processing)} testid="stat-processing" />
      <${Stat} label="Completed" value=${f.num(m.completed)} testid="stat-completed" />
      <${Stat} label="Failed" value=${f.num(m.failed)} testid="stat-failed" />
      <${Stat} label="Dead letter" value=${f.num(m.deadLetter)} testid="stat-dlq" />
    </${Stats}>
    <div class="grid2">
      <${Card} title="Flow (messages per bucket)" testid="card-flow"><${Chart} series=${[{ label: 'ingested', points: points(tp, 'ingested') }, { label: 'processed', points: points(tp, 'processed') }]} /></${Card}>
      <${Card} title="Top queues by messages" testid="card-top8"><${Stacked} rows=${top.map((q) => ({ label: q.name, parts: [
        { label: 'pending', value: (q.messages || {}).pending, cls: 'warn' }, { label: 'processing', value: (q.messages || {}).processing, cls: 's0' },
        { label: 'completed', value: (q.messages || {}).completed, cls: 'ok' }] }))} /></${Card}>
      <${Card} title="Status" testid="card-status"><${Doughnut} caption="sum of states" parts=${[
        { label: 'pending', value: m.pending, cls: 'warn' }, { label: 'processing', value: m.processing, cls: 's0' },
        { label: 'completed', value: m.completed, cls: 'ok' }, { label: 'dead letter', value: m.deadLetter, cls: 'bad' }]} /></${Card}>
      <${Card} title="Leases" testid="card-leases"><${KV} items=${[['Active leases', f.num(leases.active)], ['Partitions with leases', f.num(leases.partitionsWithLeases)],
        ['Messages leased', f.num(leases.totalBatchSize)], ['Acked of those', f.num(leases.totalAcked)]]} /></${Card}>
      <${Card} title="Dead letter" testid="card-analytics-dlq"><${KV} items=${[['Failed in range', f.num(dq.totalMessages)], ['Affected partitions', f.num(dq.affectedPartitions)]]} />
        <${HBars} items=${(dq.topErrors || []).map((e) => ({ label: e.error, value: e.count }))} /></${Card}>
      <${Card} title="Workers" testid="card-analytics-workers"><${KV} items=${workers.flatMap((w) => [
        [`${w.hostname}:${w.workerId}`, html`scheduler delay <span class=${sev.eventLoop(w.avgEventLoopLagMs)}>${f.ms(w.avgEventLoopLagMs)}</span> · free slots ${f.num(w.freeSlots)} / ${f.num(w.dbConnections)} connections`]])} /></${Card}>
    </div>
  </div>`;
}
