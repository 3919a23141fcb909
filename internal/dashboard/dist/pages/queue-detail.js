// Queue detail (/queues/:queueName): header, counters, the queue's metric rows, its
// configuration, and tabs for partitions, latest messages, live waiters and settings.
import { html, useState } from '../lib/html.js';
import { api, enc } from '../lib/api.js';
import { useLoader, settle, invalidate } from '../lib/data.js';
import { rangeWindow, series, latest, sum, byBucket } from '../lib/time.js';
import { points } from '../lib/chart.js';
import { navigate } from '../lib/router.js';
import { MetricRows } from '../lib/metrics.js';
import { Card, Stat, Stats, ErrorBox, Loading, PageHead, Range, Action, Banner, KV, Tabs, Empty, Table, Trunc } from '../lib/ui.js';
import { PartitionBrowser, LatestMessages } from './queue-partitions.js';
import { QueueSettings } from './queue-settings.js';
import { LongPolls } from './parts/longpolls.js';
import { LastValue } from './consumer-group.js';
import * as f from '../lib/format.js';
import * as sev from '../lib/severity.js';

// loadQueue reads the queue's status view without its partition list (the Partitions
// tab pages them): the totals, partition count and consumed count cover every
// partition, so nothing is downloaded per partition to sum them.
async function loadQueue(name) {
  try {
    return { source: 'status', ...(await api(`/api/v1/status/queues/${enc(name)}`, { query: { partitionLimit: 0 } })) };
  } catch (err) {
    if (err.status === -1) throw err;
    try {
      const r = await api(`/api/v1/resources/queues/${enc(name)}`);
      // The resource view has the same counters under partitions[].stats and totals.
      const parts = r.partitions || [];
      return { source: 'resources', queue: r, partitionCount: parts.length, totals: { messages: r.totals || {} }, consumerGroups: r.consumerGroups };
    } catch (err2) {
      if (err2.status === 404 || err.status === 404) return { notFound: true };
      throw err2;
    }
  }
}

function rowsOf(ops, consumed) {
  const s = ops ? series(ops.series, 'bucket', ops) : [];
  const b = byBucket(s, ['pushPerSecond', 'popPerSecond', 'ackPerSecond', 'pushMessages', 'popMessages', 'popEmpty', 'ackFailed', 'parkedCount', 'partitionsCreated', 'partitionsDeleted']);
  const lagAvg = s.map((r) => ({ t: r.t, v: r.avgLagMs })); const lagMax = s.map((r) => ({ t: r.t, v: r.maxLagMs }));
  let acc = 0;
  const pend = b.map((r) => { acc += r.pushMessages - r.popMessages; return { t: r.t, v: acc }; });
  const fill = b.map((r) => ({ t: r.t, v: r.popMessages + r.popEmpty > 0 ? (r.popMessages / (r.popMessages + r.popEmpty)) * 100 : null }));
  const l5 = b.slice(-5); const pm = sum(l5, 'popMessages'); const pe = sum(l5, 'popEmpty');
  const fillNow = pm + pe > 0 ? pm / (pm + pe) : null;
  const maxLag = latest(s, 'maxLagMs');
  const failed = sum(b, 'ackFailed');
  const n2 = (v) => f.num(v, 2);
  return {
    now: { push: latest(b, 'pushPerSecond'), pop: latest(b, 'popPerSecond'), ack: latest(b, 'ackPerSecond'), parked: latest(b, 'parkedCount'), failed },
    rows: [
      { id: 'throughput', label: 'Throughput', now: f.rate(latest(b, 'pushPerSecond')), fmt: n2, series: [{ label: 'push/s', points: points(b, 'pushPerSecond') }, { label: 'pop/s', points: points(b, 'popPerSecond') }, { label: 'ack/s', points: points(b, 'ackPerSecond') }] },
      { id: 'pending', label: 'Pending Δ (push − pop)', now: f.num(acc), sev: sev.pendingDelta(acc), series: [{ label: 'pending Δ', points: pend }] },
      { id: 'lag', label: 'Time lag', now: f.ms(maxLag), sev: sev.timeLag(maxLag === null ? null : maxLag / 1000), fmt: f.ms, series: [{ label: 'avg', points: lagAvg }, { label: 'max', points: lagMax }] },
      { id: 'fill', label: 'Fill ratio', now: f.ratioPct(fillNow), sev: sev.fill(fillNow), fmt: (v) => f.pct(v, 0), series: [{ label: 'pops with messages %', points: fill }] },
      { id: 'errors', label: 'Ack failures', now: f.num(failed), sev: sev.errors(failed), series: [{ label: 'ack failed', points: points(b, 'ackFailed'), kind: 'bar', cls: 'bad' }] },
      { id: 'parked', label: 'Parked long-polls', now: f.num(latest(b, 'parkedCount'), 1), series: [{ label: 'parked', points: points(b, 'parkedCount') }] },
      { id: 'partitions', label: 'Partitions Δ', now: `+${f.num(sum(b, 'partitionsCreated'))} / −${f.num(sum(b, 'partitionsDeleted'))}`, series: [{ label: 'created', points: points(b, 'partitionsCreated'), kind: 'bar', cls: 'ok' }, { label: 'deleted', points: points(b, 'partitionsDeleted'), kind: 'bar', cls: 'bad' }] },
      { id: 'consumed', label: 'Consumed (queue mode)', now: f.num(consumed), series: [] },
    ],
  };
}

const TABS = ['Overview', 'Partitions', 'Messages', 'Long-polls', 'Settings'];

// GroupLag lists how far each consumer group (queue mode included) is behind on the
// queue, from its cursors and leases: the numbers of the queen_consumer_group_* gauges.
// A group that conflates on the queue is marked "last value".
function GroupLag({ groups }) {
  return html`<${Card} title="Consumer groups" testid="card-queue-groups">
    <${Table} testid="table-queue-groups" rows=${groups} rowKey=${(g) => g.group} empty="Nobody consumes this queue yet."
      columns=${[
        { key: 'group', label: 'Group', render: (g) => html`<a href=${'/consumers?search=' + encodeURIComponent(g.group)} data-testid="group-name"><${Trunc} text=${f.group(g.group)} /></a>${g.conflation && html` <${LastValue} />`}` },
        { key: 'lag', label: 'Unconsumed', cls: 'num', sort: (g) => g.lag, render: (g) => html`<span data-testid="group-lag">${f.num(g.lag)}</span>` },
        { key: 'pending', label: 'Pending', cls: 'num', sort: (g) => g.pending, render: (g) => html`<span data-testid="group-pending">${f.num(g.pending)}</span>` },
        { key: 'inFlight', label: 'In flight', cls: 'num', sort: (g) => g.inFlight, render: (g) => html`<span data-testid="group-in-flight">${f.num(g.inFlight)}</span>` },
        { key: 'age', label: 'Oldest', cls: 'num', sort: (g) => g.lagSeconds, render: (g) => html`<span class=${sev.timeLag(g.lagSeconds)}>${f.secs(g.lagSeconds)}</span>` },
        { key: 'parts', label: 'Lagging partitions', cls: 'num', render: (g) => html`<span data-testid="group-lagging-partitions">${f.num(g.partitionsWithLag)}</span>` },
      ]} />
  </${Card}>`;
}

export function QueueDetailPage({ params, query }) {
  const name = params.queueName;
  const [range, setRange] = useState('1h');
  const tab = TABS.includes(query.get('tab')) ? query.get('tab') : 'Overview';
  const st = useLoader(() => settle({
    q: () => loadQueue(name),
    ops: () => api('/api/v1/analytics/queue-ops', { query: { ...rangeWindow(range), queue: name } }),
    // The banner counts what its link lists: every group's dead-letter entries.
    dlq: () => api('/api/v1/dlq', { query: { queue: name, limit: 1 } }),
  }), [name, range], 30000);
  const d = st.data || {};
  if (d.q && d.q.notFound) {
    return html`<div><${PageHead} title=${name} /><${Empty} text=${`Queue not found: ${name}`} />
      <div data-testid="queue-not-found"><a href="/queues">Back to queues</a></div></div>`;
  }
  const q = (d.q && d.q.queue) || {};
  const partCount = d.q ? d.q.partitionCount : null;
  const t = (d.q && d.q.totals && (d.q.totals.messages || d.q.totals)) || {};
  const cfg = q.config || {};
  const dlqTotal = d.dlq ? Number(d.dlq.total) || 0 : 0;
  const groups = (d.q && d.q.consumerGroups) || null;
  // The counters above the tabs are queue mode's (as upstream's); say so when named
  // groups consume the queue too.
  const named = (groups || []).some((g) => g.group !== '__QUEUE_MODE__');
  const qm = named ? ' (queue mode)' : '';
  const mostPending = (groups || []).reduce((a, g) => Math.max(a, g.pending), 0);
  const consumed = d.q && d.q.totals ? d.q.totals.totalConsumed : null;
  const m = rowsOf(d.ops, consumed ?? null);
  const qs = `?queue=${enc(name)}`;
  const del = {
    need: 'admin',
    ask: { title: `Delete queue ${name}?`, text: 'Its partitions, messages, cursors and consumer-group state are deleted. This cannot be undone.', confirmLabel: 'Delete', danger: true },
    run: async () => {
      const r = await api(`/api/v1/resources/queues/${enc(name)}`, { method: 'DELETE' });
      invalidate('queues');
      navigate('/queues');
      return r;
    },
    done: (r) => (r && r.existed === false ? `queue ${name} was already gone` : `queue ${name} deleted`),
  };
  const setTab = (x) => navigate(`/queues/${enc(name)}${x === 'Overview' ? '' : `?tab=${encodeURIComponent(x)}`}`, true);
  return html`<div>
    <${PageHead} title=${name} sub=${html`<span data-testid="queue-meta">${q.namespace ? `namespace ${q.namespace}` : 'no namespace'} · ${q.task ? `task ${q.task}` : 'no task'} · ${f.num(partCount)} partitions · priority ${f.num(q.priority ?? cfg.priority)} · created ${f.age(q.createdAt)}</span>`}>
      <${Loading} show=${st.loading} />
      <${Range} value=${range} onChange=${setRange} />
      <a class="btn" href=${'/messages' + qs} data-testid="queue-browse">Browse messages</a>
      <a class="btn" href=${'/dlq' + qs} data-testid="queue-dlq">DLQ</a>
      <${Action} ...${del} cls="danger" testid="queue-delete">Delete queue</${Action}>
    </${PageHead}>
    <${ErrorBox} error=${st.error} />
    ${dlqTotal > 0 && html`<${Banner} kind="bad" testid="banner-queue-dlq">${f.num(dlqTotal)} ${dlqTotal === 1 ? 'entry' : 'entries'} in the dead-letter queue (every consumer group). <a href=${'/dlq' + qs}>Open</a></${Banner}>`}
    ${m.now.failed > 0 && html`<${Banner} kind="warn" testid="banner-queue-ack-failed">${f.num(m.now.failed)} failed ack${m.now.failed === 1 ? '' : 's'} in this range.</${Banner}>`}
    ${(groups ? mostPending : t.pending) > 10000 && html`<${Banner} kind="warn" testid="banner-queue-pending">${f.num(groups ? mostPending : t.pending)} messages pending${groups ? ' for a consumer group' : ''}.</${Banner}>`}
    <${Stats} testid="queue-counts">
      <${Stat} label=${'Pending' + qm} value=${f.num(t.pending)} sev=${named ? '' : sev.pending(t.pending)} testid="stat-pending" />
      <${Stat} label=${'Processing' + qm} value=${f.num(t.processing)} testid="stat-processing" />
      <${Stat} label="Completed" value=${f.num(t.completed)} testid="stat-completed" />
      <${Stat} label="Failed" value=${f.num(t.failed)} testid="stat-failed" />
      <${Stat} label="Dead letter" value=${f.num(t.deadLetter)} sev=${t.deadLetter > 0 ? 'bad' : ''} testid="stat-dlq" href=${'/dlq' + qs} />
      <${Stat} label="Total" value=${f.num(t.total)} testid="stat-total" />
      <${Stat} label="Partitions" value=${f.num(partCount)} testid="stat-partitions" />
      <${Stat} label="Push/s" value=${f.num(m.now.push, 2)} testid="stat-push-rate" />
      <${Stat} label="Pop/s" value=${f.num(m.now.pop, 2)} testid="stat-pop-rate" />
      <${Stat} label="Ack/s" value=${f.num(m.now.ack, 2)} testid="stat-ack-rate" />
      <${Stat} label="Parked" value=${f.num(m.now.parked, 1)} testid="stat-parked" />
    </${Stats}>
    <${Tabs} tabs=${TABS} value=${tab} onChange=${setTab} testid="queue-tabs" />
    ${tab === 'Overview' && groups && html`<${GroupLag} groups=${groups} />`}
    ${tab === 'Overview' && html`<div class="grid-main">
      <${Card} title="Metrics" testid="card-queue-metrics"><${MetricRows} rows=${m.rows} /></${Card}>
      <${Card} title="Configuration" testid="card-queue-config"><${KV} testid="queue-config" items=${[
        ['Lease', f.secs(cfg.leaseTime)], ['TTL', cfg.ttl ? f.secs(cfg.ttl) : 'off'],
        ['Max size', cfg.maxQueueSize ? f.num(cfg.maxQueueSize) : 'unlimited'], ['Retry limit', f.num(cfg.retryLimit)],
        ['Retry delay', f.ms(cfg.retryDelay)], ['Dead-letter queue', cfg.deadLetterQueue ? 'on' : 'off'],
        ['Priority', f.num(q.priority ?? cfg.priority)],
      ]} /></${Card}></div>`}
    ${tab === 'Partitions' && html`<${PartitionBrowser} queue=${name} />`}
    ${tab === 'Messages' && html`<${LatestMessages} queue=${name} />`}
    ${tab === 'Long-polls' && html`<${LongPolls} queue=${name} />`}
    ${tab === 'Settings' && html`<${QueueSettings} queue=${name} config=${cfg} namespace=${q.namespace} task=${q.task} onSaved=${() => st.reload(true)} />`}
  </div>`;
}
