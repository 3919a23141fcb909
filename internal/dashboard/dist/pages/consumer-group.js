// Consumer-group drill-down: every partition cursor of a group with per-partition skip,
// moving the group's subscription, and the group's lag over time.
import { html, useState } from '../lib/html.js';
import { api, enc, ok } from '../lib/api.js';
import { useLoader } from '../lib/data.js';
import { rangeWindow, series, gaps, toLocalInput } from '../lib/time.js';
import { Chart } from '../lib/chart.js';
import { Modal, ErrorBox, Table, Action, Card, Empty, Trunc } from '../lib/ui.js';
import * as f from '../lib/format.js';
import * as sev from '../lib/severity.js';

/** LastValue marks a group that conflates on a queue: each pop gets only the newest message of a partition. */
export function LastValue() {
  return html`<span class="tag" data-testid="group-last-value" title="Conflation: a pop gets only the newest message of each partition, and its ack moves the cursor past the older ones">last value</span>`;
}

// history keeps, per (group, queue), the lag seen by this tab while the broker has no lag
// history route: [{ t, totalLag, maxTimeLag }], at most a day of samples.
const history = new Map();

/** sample records the groups' lag as seen now. */
export function sample(groups) {
  const t = Date.now();
  for (const g of groups) {
    const k = `${g.name}|${g.queueName}`;
    const h = history.get(k) || [];
    if (!h.length || t - h[h.length - 1].t > 5000) h.push({ t, totalLag: g.totalLag, maxTimeLag: g.maxTimeLag });
    if (h.length > 1440) h.shift();
    history.set(k, h);
  }
}

function LagHistory({ group, queue }) {
  const st = useLoader(async () => {
    try {
      // The last hour: its buckets are the samples' own (a minute by default).
      return await api('/api/v1/analytics/consumer-lag', { query: { group, queue, ...rangeWindow('1h') } });
    } catch (err) {
      if (err.status === 404 || err.status === 405) return { session: true };
      throw err;
    }
  }, [group, queue], 60000);
  const d = st.data || {};
  const rows = d.session ? (history.get(`${group}|${queue}`) || [])
    : gaps(series((d.series || []).filter((r) => !queue || r.queue === queue), 'bucket', d), d);
  return html`<div data-testid="lag-history"><${ErrorBox} error=${st.error} />
    ${d.session && html`<div class="sub">Lag as sampled by this page since it opened (the broker keeps no lag history).</div>`}
    <${Chart} testid="chart-lag-history" series=${[{ label: 'unconsumed messages', points: rows.map((r) => ({ t: r.t, v: r.totalLag })) }]} />
    <${Chart} testid="chart-timelag-history" fmt=${f.secs} series=${[{ label: 'time lag', points: rows.map((r) => ({ t: r.t, v: r.maxTimeLag })), cls: 'warn' }]} /></div>`;
}

// lag, when the caller has the group's row of the consumers grid, is its unconsumed
// total on queue and the partitions that lag: cursors are listed only where the group
// has read, and it may lag elsewhere.
export function GroupDetail({ group, queue, lag, onClose, onChanged }) {
  const st = useLoader(() => api(`/api/v1/consumer-groups/${enc(group)}`), [group]);
  const [when, setWhen] = useState(toLocalInput(new Date(Date.now() - 3600000)));
  const d = st.data && typeof st.data === 'object' ? st.data : {};
  const queues = Object.keys(d).filter((q) => !queue || q === queue);
  const skip = (q, p) => ({
    need: 'read-write',
    ask: { title: `Skip partition ${p.partition} to its end?`, text: `The cursor of ${f.group(group)} on ${q}/${p.partition} moves past every message there now.`, confirmLabel: 'Skip' },
    run: async () => { ok(await api(`/api/v1/consumer-groups/${enc(group)}/queues/${enc(q)}/partitions/${enc(p.partition)}/seek`, { method: 'POST' })); await st.reload(true); if (onChanged) onChanged(); },
    done: `partition ${p.partition} skipped to its end`,
  });
  const move = {
    need: 'read-write',
    ask: () => ({ title: 'Move the subscription?', text: `Partitions ${f.group(group)} has no cursor on yet will start reading from ${when}.`, confirmLabel: 'Move' }),
    run: async () => { ok(await api(`/api/v1/consumer-groups/${enc(group)}/subscription`, { method: 'POST', body: { subscriptionTimestamp: new Date(when).toISOString() } })); },
    done: 'subscription moved',
  };
  return html`<${Modal} title=${`Consumer group ${f.group(group)}`} onClose=${onClose} testid="group-detail" wide>
    <${ErrorBox} error=${st.error} />
    ${lag && html`<p class="sub" data-testid="group-lag-summary">${f.num(lag.total)} unconsumed on ${queue}, ${f.num(lag.partitions)} partition${lag.partitions === 1 ? '' : 's'} lagging, those without a cursor included.</p>`}
    ${st.data && !queues.length && html`<${Empty} text="No cursors." />`}
    ${queues.map((q) => html`<${Card} title=${html`${q}${d[q] && d[q].conflation && html` <${LastValue} />`}`} testid="group-queue">
      <${Table} testid="table-group-partitions" rows=${(d[q] && d[q].partitions) || []} rowKey=${(p) => p.partition} empty="No cursor yet."
        columns=${[
          { key: 'partition', label: 'Partition', render: (p) => html`<${Trunc} text=${p.partition} />` },
          { key: 'offsetLag', label: 'Offset lag', cls: 'num', render: (p) => html`<span data-testid="offset-lag">${f.num(p.offsetLag)}</span>` },
          { key: 'timeLag', label: 'Time lag', cls: 'num', render: (p) => html`<span class=${sev.timeLag(p.timeLagSeconds)}>${f.secs(p.timeLagSeconds)}</span>` },
          { key: 'consumed', label: 'Consumed', cls: 'num', render: (p) => f.num(p.totalConsumed) },
          { key: 'last', label: 'Last consumed', render: (p) => f.age(p.lastConsumedAt) },
          { key: 'lease', label: 'Lease', render: (p) => (p.leaseActive ? html`<span class="tag ok">active</span>` : '') },
          { key: 'a', label: '', render: (p) => html`<${Action} ...${skip(q, p)} small testid="partition-skip">Skip to end</${Action}>` },
        ]} /></${Card}>`)}
    <${Card} title="Lag over time" testid="card-lag-history"><${LagHistory} group=${group} queue=${queue} /></${Card}>
    <div class="row-actions"><label>Subscription start <input type="datetime-local" step="1" value=${when} onInput=${(e) => setWhen(e.target.value)} data-testid="subscription-time" /></label>
      <${Action} ...${move} testid="subscription-move">Move subscription</${Action}></div>
  </${Modal}>`;
}
