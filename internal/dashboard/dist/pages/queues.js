// Queues (/queues): every queue with density, pop and push rates of the last 15 minutes,
// lag, partitions, a health verdict per row, and delete.
import { html, useState } from '../lib/html.js';
import { api, enc } from '../lib/api.js';
import { useLoader, settle, invalidate } from '../lib/data.js';
import { series } from '../lib/time.js';
import { setQuery } from '../lib/router.js';
import { Card, ErrorBox, Loading, PageHead, Table, Action, Empty, Trunc } from '../lib/ui.js';
import { queuesCached } from '../shell/search.js';
import * as f from '../lib/format.js';
import { queueHealth, rank } from '../lib/severity.js';

function load(forced) {
  const to = new Date();
  const from = new Date(to.getTime() - 15 * 60000);
  return settle({
    queues: () => queuesCached(forced),
    ops: () => api('/api/v1/analytics/queue-ops', { query: { from: from.toISOString(), to: to.toISOString() } }),
  });
}

/** rates sums the last 15 minutes of queue-ops per queue into per-second rates and max lag. */
function rates(ops) {
  const m = new Map();
  const rows = ops ? series(ops.series, 'bucket', ops) : [];
  for (const r of rows) {
    const q = m.get(r.queueName) || { push: 0, pop: 0, lagMs: 0 };
    q.push += Number(r.pushMessages) || 0;
    q.pop += Number(r.popMessages) || 0;
    q.lagMs = Math.max(q.lagMs, Number(r.maxLagMs) || 0);
    m.set(r.queueName, q);
  }
  for (const q of m.values()) { q.pushRate = q.push / 900; q.popRate = q.pop / 900; }
  return m;
}

const SORTS = { worst: 'Worst first', lag: 'Lag', density: 'Density', partitions: 'Partitions', name: 'Name' };

export function QueuesPage({ query }) {
  const st = useLoader((forced) => load(forced), [], 0);
  const [removed, setRemoved] = useState(new Set());
  const search = query.get('q') || '';
  const ns = query.get('namespace') || '';
  const task = query.get('task') || '';
  const sort = query.get('sort') || 'worst';
  const d = st.data || {};
  const all = ((d.queues && d.queues.queues) || []).filter((q) => !removed.has(q.name));
  const r = rates(d.ops);
  const rows = all.map((q) => {
    const x = r.get(q.name) || { pushRate: 0, popRate: 0, lagMs: 0 };
    const msgs = q.messages || {};
    return {
      ...q, ...x, density: q.partitions ? (msgs.total || 0) / q.partitions : 0,
      health: queueHealth({ pushRate: x.pushRate, popRate: x.popRate, lagMs: x.lagMs, pendingCount: msgs.pending }),
    };
  }).filter((q) => (!search || q.name.toLowerCase().includes(search.toLowerCase()))
    && (!ns || q.namespace === ns) && (!task || q.task === task));
  const by = {
    worst: (a, b) => rank[b.health] - rank[a.health] || b.lagMs - a.lagMs,
    lag: (a, b) => b.lagMs - a.lagMs,
    density: (a, b) => b.density - a.density,
    partitions: (a, b) => b.partitions - a.partitions,
    name: (a, b) => a.name.localeCompare(b.name),
  };
  rows.sort(by[sort] || by.worst);
  const namespaces = [...new Set(all.map((q) => q.namespace).filter(Boolean))].sort();
  const tasks = [...new Set(all.map((q) => q.task).filter(Boolean))].sort();
  const del = (q) => ({
    need: 'admin',
    ask: { title: `Delete queue ${q.name}?`, text: 'Its partitions, messages, cursors and consumer-group state are deleted. This cannot be undone.', confirmLabel: 'Delete', danger: true },
    run: async () => {
      const r = await api(`/api/v1/resources/queues/${enc(q.name)}`, { method: 'DELETE' });
      invalidate('queues');
      setRemoved(new Set([...removed, q.name]));
      return r;
    },
    done: (r) => (r && r.existed === false ? `queue ${q.name} was already gone` : `queue ${q.name} deleted`),
  });
  return html`<div>
    <${PageHead} title="Queues" sub=${`${rows.length} of ${all.length}`}><${Loading} show=${st.loading} /></${PageHead}>
    <${ErrorBox} error=${st.error} />
    <div class="filters">
      <input placeholder="Search queues" value=${search} data-testid="queues-search" onInput=${(e) => setQuery({ q: e.target.value })} />
      <select value=${ns} data-testid="queues-namespace" onChange=${(e) => setQuery({ namespace: e.target.value })}>
        <option value="">All namespaces</option>${namespaces.map((n) => html`<option value=${n}>${n}</option>`)}</select>
      <select value=${task} data-testid="queues-task" onChange=${(e) => setQuery({ task: e.target.value })}>
        <option value="">All tasks</option>${tasks.map((n) => html`<option value=${n}>${n}</option>`)}</select>
      <select value=${sort} data-testid="queues-sort" onChange=${(e) => setQuery({ sort: e.target.value })}>
        ${Object.entries(SORTS).map(([k, v]) => html`<option value=${k}>${v}</option>`)}</select>
    </div>
    <${Card} testid="card-queues">
      ${d.queues && rows.length === 0 ? html`<${Empty} text=${all.length ? 'No queue matches the filters.' : 'No queues yet.'} />` : html`<${Table} testid="table-queues" rows=${rows} rowKey=${(q) => q.name}
        rowCls=${(q) => 'health-' + q.health}
        columns=${[
          { key: 'name', label: 'Queue', sort: (q) => q.name, render: (q) => { const [p, rest] = f.splitName(q.name); return html`<a href=${'/queues/' + enc(q.name)} data-testid="queue-link" class="trunc" title=${q.name}><span class="dim">${p}</span>${rest}</a>`; } },
          { key: 'health', label: '', render: (q) => html`<span class=${'tag ' + q.health}>${q.health}</span>` },
          { key: 'density', label: 'Density', cls: 'num', sort: (q) => q.density, render: (q) => html`<span title="messages per partition">${f.num(q.density, 1)}</span>` },
          { key: 'pending', label: 'Pending', cls: 'num', sort: (q) => (q.messages || {}).pending || 0, render: (q) => f.num((q.messages || {}).pending) },
          { key: 'pop', label: 'Pop/s', cls: 'num', sort: (q) => q.popRate, render: (q) => html`${f.num(q.popRate, 2)} <span class=${q.popRate >= q.pushRate ? 'ok' : 'warn'}>${q.popRate >= q.pushRate ? '▲' : '▼'}</span> <span class="dim">${f.num(q.pushRate, 2)} in</span>` },
          { key: 'lag', label: 'Lag p99', cls: 'num', sort: (q) => q.lagMs, render: (q) => f.ms(q.lagMs) },
          { key: 'partitions', label: 'Partitions', cls: 'num', sort: (q) => q.partitions, render: (q) => f.num(q.partitions) },
          { key: 'actions', label: '', render: (q) => html`<${Action} ...${del(q)} small cls="danger" testid="queue-delete">Delete</${Action}>` },
        ]} />`}
    </${Card}></div>`;
}
