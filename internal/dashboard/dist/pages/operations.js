// Queue Operations (/operations): broker-wide rates, latency, scheduler delay, pool,
// errors, DLQ and retention over time; top queues; per-queue series; the workers table.
import { html, useState } from '../lib/html.js';
import { api, list } from '../lib/api.js';
import { useLoader, settle } from '../lib/data.js';
import { rangeWindow, series, gaps, toLocalInput } from '../lib/time.js';
import { Chart, points, HBars } from '../lib/chart.js';
import { Card, ErrorBox, Loading, PageHead, Range, Table, Tabs } from '../lib/ui.js';
import * as f from '../lib/format.js';
import * as sev from '../lib/severity.js';

const TABS = ['Pop/s', 'Push/s', 'Ack/s', 'Empty/s', 'Fill %', 'Push−Pop', 'Trx', 'Parked'];
const TAB_KEY = { 'Pop/s': 'popPerSecond', 'Push/s': 'pushPerSecond', 'Ack/s': 'ackPerSecond', 'Empty/s': 'emptyPerSecond', Trx: 'transactions', Parked: 'parkedCount' };

function load(range, custom, perReplica) {
  const w = rangeWindow(range, custom);
  return settle({
    workers: () => api('/api/v1/analytics/worker-metrics', { query: w }),
    lag: () => api('/api/v1/analytics/queue-lag', { query: w }).then(list),
    ops: () => api('/api/v1/analytics/queue-ops', { query: w }),
    retention: () => api('/api/v1/analytics/retention', { query: w }),
    parked: () => (perReplica ? api('/api/v1/analytics/queue-parked-replicas', { query: w }) : Promise.resolve(null)),
  });
}

// perQueue is one line per queue of names; queue-ops has no row for a bucket in which
// nothing happened on a queue, so such buckets are gaps, not bridged.
export function perQueue(rows, key, names, answer) {
  return names.map((n, i) => ({
    label: n, cls: 's' + (i % 8),
    points: gaps(rows.filter((r) => r.queueName === n).map((r) => {
      let v;
      if (key === 'fill') v = r.popMessages + r.popEmpty > 0 ? (r.popMessages / (r.popMessages + r.popEmpty)) * 100 : null;
      else if (key === 'diff') v = (Number(r.pushPerSecond) || 0) - (Number(r.popPerSecond) || 0);
      else v = r[key];
      return { t: r.t, v };
    }), answer),
  }));
}

function top(rows, key, n = 5) {
  const m = new Map();
  for (const r of rows) m.set(r.queueName, (m.get(r.queueName) || 0) + (Number(r[key]) || 0));
  const count = new Set(rows.map((r) => r.t)).size || 1;
  return [...m.entries()].map(([label, v]) => ({ label, value: v / count })).sort((a, b) => b.value - a.value).slice(0, n);
}

export function OperationsPage() {
  const [range, setRange] = useState('1h');
  const now = new Date();
  const [custom, setCustom] = useState({ from: toLocalInput(new Date(now - 3600000)), to: toLocalInput(now) });
  const [tab, setTab] = useState('Pop/s');
  const [replica, setReplica] = useState(false);
  const [picked, setPicked] = useState([]);
  const st = useLoader(() => load(range, custom, tab === 'Parked' && replica), [range, custom.from, custom.to, tab === 'Parked' && replica]);
  const d = st.data || {};
  const wm = d.workers || {};
  // worker-metrics leaves out the buckets in which no broker ran: gaps, not zeros.
  const ts = gaps(series(wm.timeSeries, 'timestamp', wm), wm);
  const ops = d.ops ? series(d.ops.series, 'bucket', d.ops) : [];
  const ret = d.retention ? series(d.retention.series, 'bucket', d.retention) : [];
  const names = (d.ops && d.ops.queues) || [...new Set(ops.map((r) => r.queueName))];
  const shownNames = picked.length ? picked.filter((n) => names.includes(n)) : names.slice(0, 8);
  const key = tab === 'Fill %' ? 'fill' : tab === 'Push−Pop' ? 'diff' : TAB_KEY[tab];
  let perQ = perQueue(ops, key, shownNames, d.ops);
  if (tab === 'Parked' && replica && d.parked) {
    const pr = series(d.parked.series, 'bucket', d.parked).filter((r) => shownNames.includes(r.queueName));
    const keys = [...new Set(pr.map((r) => `${r.queueName}@${r.hostname}:${r.workerId}`))];
    perQ = keys.map((k, i) => ({ label: k, cls: 's' + (i % 8), points: pr.filter((r) => `${r.queueName}@${r.hostname}:${r.workerId}` === k).map((r) => ({ t: r.t, v: r.parkedCount })) }));
  }
  const lagRows = series(d.lag, 'bucketTime', d.ops || wm); // same window, same buckets
  const lagByQueue = shownNames.map((n, i) => ({ label: n, cls: 's' + (i % 8), points: gaps(lagRows.filter((r) => r.queueName === n).map((r) => ({ t: r.t, v: r.avgLagMs })), d.ops || wm) }));
  const totals = (d.retention && d.retention.totals) || {};
  const togglePick = (n) => setPicked(picked.includes(n) ? picked.filter((x) => x !== n) : [...picked, n]);
  const n2 = (v) => f.num(v, 2);
  return html`<div>
    <${PageHead} title="Queue Operations"><${Loading} show=${st.loading} />
      <${Range} value=${range} options=${['15m', '1h', '6h', '24h', 'custom']} onChange=${setRange} custom=${custom} onCustom=${setCustom} /></${PageHead}>
    <${ErrorBox} error=${st.error} />
    <div class="grid2">
      <${Card} title="Throughput (messages/s)" testid="card-ops-throughput"><${Chart} fmt=${n2} series=${[{ label: 'push', points: points(ts, 'pushPerSecond') }, { label: 'pop', points: points(ts, 'popPerSecond') }, { label: 'ack', points: points(ts, 'ackPerSecond') }]} /></${Card}>
      <${Card} title="Pop latency" testid="card-ops-latency"><${Chart} fmt=${f.ms} series=${[{ label: 'avg', points: points(ts, 'avgLagMs') }, { label: 'max', points: points(ts, 'maxLagMs') }]} /></${Card}>
      <${Card} title="Scheduler delay" testid="card-ops-scheduler"><${Chart} fmt=${f.ms} series=${[{ label: 'avg', points: points(ts, 'avgEventLoopLagMs') }, { label: 'max', points: points(ts, 'maxEventLoopLagMs') }]} /></${Card}>
      <${Card} title="Pool" testid="card-ops-pool"><${Chart} series=${[{ label: 'free slots', points: points(ts, 'avgFreeSlots') }, { label: 'DB connections', points: points(ts, 'dbConnections') }]} /></${Card}>
      <${Card} title="Parked long-polls" testid="card-ops-parked"><${Chart} fmt=${n2} series=${[{ label: 'parked (avg)', points: points(ts, 'backoffSize') }]} /></${Card}>
      <${Card} title="Errors" testid="card-ops-errors"><${Chart} series=${[{ label: 'DB errors', points: points(ts, 'dbErrors'), kind: 'bar', cls: 'bad' }, { label: 'ack failed', points: points(ts, 'ackFailed'), kind: 'bar', cls: 'warn' }, { label: 'DLQ', points: points(ts, 'dlqCount'), kind: 'bar', cls: 's5' }]} /></${Card}>
      <${Card} title="Dead-lettered" testid="card-ops-dlq"><${Chart} series=${[{ label: 'DLQ', points: points(ts, 'dlqCount'), kind: 'bar', cls: 'bad' }]} /></${Card}>
      <${Card} title="Retention & eviction" testid="card-ops-retention"
        actions=${html`<span class="sub" data-testid="retention-totals">retention ${f.num(totals.retentionMsgs)} · completed ${f.num(totals.completedRetentionMsgs)} · eviction ${f.num(totals.evictionMsgs)} · ${f.num(totals.eventCount)} runs</span>`}>
        <${Chart} series=${[{ label: 'retention', points: points(ret, 'retentionMsgs'), kind: 'bar' }, { label: 'completed retention', points: points(ret, 'completedRetentionMsgs'), kind: 'bar' }, { label: 'eviction', points: points(ret, 'evictionMsgs'), kind: 'bar' }]} /></${Card}>
    </div>
    <div class="grid4">
      <${Card} title="Top push/s" testid="card-top-push"><${HBars} items=${top(ops, 'pushPerSecond')} fmt=${n2} /></${Card}>
      <${Card} title="Top pop/s" testid="card-top-pop"><${HBars} items=${top(ops, 'popPerSecond')} fmt=${n2} /></${Card}>
      <${Card} title="Top parked" testid="card-top-parked"><${HBars} items=${top(ops, 'parkedCount')} fmt=${n2} /></${Card}>
      <${Card} title="Top lag" testid="card-top-lag"><${HBars} items=${top(ops, 'avgLagMs')} fmt=${f.ms} /></${Card}>
    </div>
    <${Card} title="Per queue" testid="card-per-queue" actions=${tab === 'Parked' && html`<label class="check"><input type="checkbox" checked=${replica} onChange=${(e) => setReplica(e.target.checked)} data-testid="per-replica" /> per replica</label>`}>
      <div class="chips" data-testid="queue-picker">${names.map((n) => html`<button class=${'chip' + (shownNames.includes(n) ? ' on' : '')} data-testid="queue-chip" data-name=${n} title=${n} onClick=${() => togglePick(n)}>${n}</button>`)}</div>
      <${Tabs} tabs=${TABS} value=${tab} onChange=${setTab} testid="per-queue-tabs" />
      <${Chart} series=${perQ} fmt=${n2} testid="chart-per-queue" />
      <h4>Latency by queue</h4><${Chart} series=${lagByQueue} fmt=${f.ms} testid="chart-lag-by-queue" />
    </${Card}>
    <div class="grid2">
      <${Card} title="Partitions per queue" testid="card-partition-count"><${Chart} series=${perQueue(ops, 'partitionCount', shownNames, d.ops)} /></${Card}>
      <${Card} title="Partitions created / deleted" testid="card-partition-churn"><${Chart} series=${[{ label: 'created', points: byT(ops, 'partitionsCreated'), kind: 'bar', cls: 'ok' }, { label: 'deleted', points: byT(ops, 'partitionsDeleted'), kind: 'bar', cls: 'bad' }]} /></${Card}>
    </div>
    <${Card} title="Workers" testid="card-workers">
      <${Table} testid="table-workers" rows=${wm.workers || []} rowKey=${(w) => `${w.hostname}:${w.workerId}`} empty="No worker reported in this range."
        columns=${[
          { key: 'id', label: 'Worker', render: (w) => w.workerId },
          { key: 'host', label: 'Host', render: (w) => w.hostname },
          { key: 'el', label: 'Scheduler delay avg / max', cls: 'num', render: (w) => html`<span class=${sev.eventLoop(w.maxEventLoopLagMs)}>${f.ms(w.avgEventLoopLagMs)} / ${f.ms(w.maxEventLoopLagMs)}</span>` },
          { key: 'free', label: 'Free slots', cls: 'num', render: (w) => f.num(w.freeSlots) },
          { key: 'db', label: 'DB conns', cls: 'num', render: (w) => f.num(w.dbConnections) },
          { key: 'parked', label: 'Parked', cls: 'num', render: (w) => f.num(w.backoffSize, 1) },
          { key: 'seen', label: 'Last seen', render: (w) => f.age(w.lastSeen) },
        ]} /></${Card}>
  </div>`;
}

function byT(rows, key) {
  const m = new Map();
  for (const r of rows) m.set(r.t, (m.get(r.t) || 0) + (Number(r[key]) || 0));
  return [...m.entries()].sort((a, b) => a[0] - b[0]).map(([t, v]) => ({ t, v }));
}
