// Consumers (/consumers): one row per (group, queue) with lag, the lagging partitions
// panel, and the group actions: view, move to now, seek to a time, delete.
import { html, useState } from '../lib/html.js';
import { api, enc, list, ok } from '../lib/api.js';
import { useLoader, settle } from '../lib/data.js';
import { setQuery } from '../lib/router.js';
import { toLocalInput } from '../lib/time.js';
import { Card, ErrorBox, Loading, PageHead, Table, Action, Modal, Empty, useLevel, Trunc } from '../lib/ui.js';
import { can } from '../lib/auth.js';
import { queuesCached } from '../shell/search.js';
import { GroupDetail, LastValue, sample } from './consumer-group.js';
import * as f from '../lib/format.js';
import * as sev from '../lib/severity.js';

const THRESHOLDS = [['1m', 60], ['5m', 300], ['15m', 900], ['1h', 3600], ['6h', 21600], ['24h', 86400]];
const gpath = (g, q) => `/api/v1/consumer-groups/${enc(g)}/queues/${enc(q)}`;

// LAG_SINCE is the lagging card's default threshold; another is kept in the URL (lagSince).
const LAG_SINCE = 3600;

function Lagging({ min, onChanged }) {
  const [open, setOpen] = useState(false);
  const setMin = (s) => setQuery({ lagSince: s === LAG_SINCE ? '' : s });
  const st = useLoader(() => api('/api/v1/consumer-groups/lagging', { query: { minLagSeconds: min } }).then(list), [min]);
  const rows = st.data || [];
  const skip = (r) => ({
    need: 'read-write',
    ask: { title: `Skip ${r.queue_name}/${r.partition_name} to its end?`, text: `${f.group(r.consumer_group)} moves past ${f.num(r.offset_lag)} unconsumed messages.`, confirmLabel: 'Skip' },
    run: async () => { ok(await api(`${gpath(r.consumer_group, r.queue_name)}/partitions/${enc(r.partition_name)}/seek`, { method: 'POST' })); await st.reload(true); onChanged(); },
    done: 'partition skipped to its end',
  });
  return html`<${Card} testid="card-lagging" title=${html`<button class="btn ghost" onClick=${() => setOpen(!open)} data-testid="lagging-toggle">${open ? '▾' : '▸'} Lagging partitions <span class=${'badge ' + (rows.length ? 'warn' : '')} data-testid="lagging-count">${rows.length}</span></button>`}
    actions=${html`<select value=${min} data-testid="lagging-threshold" onChange=${(e) => setMin(Number(e.target.value))}>${THRESHOLDS.map(([l, s]) => html`<option value=${s}>older than ${l}</option>`)}</select>`}>
    <${ErrorBox} error=${st.error} />
    ${open && html`<${Table} testid="table-lagging" rows=${rows} rowKey=${(r) => `${r.consumer_group}|${r.partition_id}`} empty="No partition lags that much."
      columns=${[
        { key: 'g', label: 'Group', render: (r) => html`<${Trunc} text=${f.group(r.consumer_group)} />` },
        { key: 'q', label: 'Queue', render: (r) => html`<${Trunc} text=${r.queue_name} />` },
        { key: 'p', label: 'Partition', render: (r) => html`<${Trunc} text=${r.partition_name} />` },
        { key: 'w', label: 'Worker', render: (r) => r.worker_id || f.dash },
        { key: 'o', label: 'Offset lag', cls: 'num', render: (r) => f.num(r.offset_lag) },
        { key: 't', label: 'Time lag', cls: 'num', render: (r) => html`<span class=${sev.timeLag(r.time_lag_seconds)}>${f.secs(r.time_lag_seconds)}</span>` },
        { key: 'u', label: 'Oldest unconsumed', render: (r) => f.date(r.oldest_unconsumed_at) },
        { key: 'a', label: '', render: (r) => html`<${Action} ...${skip(r)} small testid="lagging-skip">Skip to end</${Action}>` },
      ]} />`}
  </${Card}>`;
}

function SeekDialog({ row, onClose, onDone }) {
  const [when, setWhen] = useState(toLocalInput(new Date(Date.now() - 3600000)));
  const seek = {
    need: 'read-write',
    run: async () => {
      ok(await api(`${gpath(row.name, row.queueName)}/seek`, { method: 'POST', body: { timestamp: new Date(when).toISOString() } }));
      onDone(); onClose();
    },
    done: (r) => `cursors moved to ${when}`,
  };
  return html`<${Modal} title=${`Seek ${f.group(row.name)} on ${row.queueName}`} onClose=${onClose} testid="seek-dialog">
    <p>Every partition's cursor moves to the newest message at or before this time; later messages are delivered again.</p>
    <input type="datetime-local" step="1" value=${when} onInput=${(e) => setWhen(e.target.value)} data-testid="seek-time" />
    <div class="modal-actions"><button class="btn" onClick=${onClose}>Cancel</button>
      <${Action} ...${seek} cls="primary" testid="seek-accept">Seek</${Action}></div></${Modal}>`;
}

export function ConsumersPage({ query }) {
  const st = useLoader((forced) => settle({
    groups: () => api('/api/v1/consumer-groups').then(list).then((g) => { sample(g); return g; }),
    queues: () => queuesCached(forced),
  }), [], 30000);
  const rw = can(useLevel(), 'read-write');
  const [view, setView] = useState(null);
  const [seek, setSeek] = useState(null);
  const [gone, setGone] = useState(new Set());
  const search = query.get('search') || '';
  const ns = query.get('namespace') || '';
  const task = query.get('task') || '';
  const queue = query.get('queue') || '';
  const laggingOnly = query.get('lagging') === '1';
  const sort = query.get('sort') || 'lag';
  const d = st.data || {};
  const qinfo = new Map(((d.queues && d.queues.queues) || []).map((q) => [q.name, q]));
  const all = (d.groups || []).filter((g) => !gone.has(`${g.name}|${g.queueName}`));
  const lagging = (g) => (Number(g.maxTimeLag) || 0) >= 60 || g.partitionsWithLag > 0;
  const rows = all.filter((g) => {
    const qi = qinfo.get(g.queueName) || {};
    return (!search || g.name.toLowerCase().includes(search.toLowerCase()) || g.queueName.toLowerCase().includes(search.toLowerCase()))
      && (!ns || qi.namespace === ns) && (!task || qi.task === task) && (!queue || g.queueName === queue) && (!laggingOnly || lagging(g));
  });
  const by = { lag: (a, b) => (b.maxTimeLag || 0) - (a.maxTimeLag || 0), total: (a, b) => (b.totalLag || 0) - (a.totalLag || 0), name: (a, b) => a.name.localeCompare(b.name) || a.queueName.localeCompare(b.queueName) };
  rows.sort(by[sort] || by.lag);
  const opts = (key) => [...new Set([...qinfo.values()].map((q) => q[key]).filter(Boolean))].sort();
  const toNow = (g) => ({
    need: 'read-write',
    ask: { title: `Move ${f.group(g.name)} to now on ${g.queueName}?`, text: 'Every cursor moves past the newest message: what is unconsumed now is skipped.', confirmLabel: 'Move to now' },
    run: async () => { ok(await api(`${gpath(g.name, g.queueName)}/seek`, { method: 'POST', body: { toEnd: true } })); await st.reload(true); },
    done: 'moved to now',
  });
  const del = (g) => ({
    need: 'admin',
    ask: { title: `Delete ${f.group(g.name)} on ${g.queueName}?`, text: 'Its cursors, leases and watermarks on this queue are deleted; the next pop starts the group over.', confirmLabel: 'Delete', danger: true,
      options: [{ name: 'metadata', label: 'Also delete the subscription metadata', checked: true }] },
    run: async (o) => {
      ok(await api(gpath(g.name, g.queueName), { method: 'DELETE', query: { deleteMetadata: o && o.metadata ? 'true' : 'false' } }));
      setGone(new Set([...gone, `${g.name}|${g.queueName}`]));
    },
    done: 'consumer group deleted',
  });
  return html`<div>
    <${PageHead} title="Consumers" sub=${d.groups ? `${rows.length} of ${all.length}` : ''}><${Loading} show=${st.loading} /></${PageHead}>
    <${ErrorBox} error=${st.error} />
    <div class="filters">
      <input placeholder="Search groups or queues" value=${search} data-testid="consumers-search" onInput=${(e) => setQuery({ search: e.target.value })} />
      <select value=${ns} data-testid="consumers-namespace" onChange=${(e) => setQuery({ namespace: e.target.value })}><option value="">All namespaces</option>${opts('namespace').map((n) => html`<option value=${n}>${n}</option>`)}</select>
      <select value=${task} data-testid="consumers-task" onChange=${(e) => setQuery({ task: e.target.value })}><option value="">All tasks</option>${opts('task').map((n) => html`<option value=${n}>${n}</option>`)}</select>
      <select value=${queue} data-testid="consumers-queue" onChange=${(e) => setQuery({ queue: e.target.value })}><option value="">All queues</option>${[...qinfo.keys()].sort().map((n) => html`<option value=${n}>${n}</option>`)}</select>
      <label class="check"><input type="checkbox" checked=${laggingOnly} data-testid="consumers-lagging-only" onChange=${(e) => setQuery({ lagging: e.target.checked ? '1' : '' })} /> lagging only</label>
      <select value=${sort} data-testid="consumers-sort" onChange=${(e) => setQuery({ sort: e.target.value })}><option value="lag">Time lag</option><option value="total">Unconsumed</option><option value="name">Name</option></select>
    </div>
    <${Lagging} min=${THRESHOLDS.some(([, s]) => s === Number(query.get('lagSince'))) ? Number(query.get('lagSince')) : LAG_SINCE} onChanged=${() => st.reload(true)} />
    <${Card} testid="card-consumers">
      ${!d.groups ? '' : !rows.length ? html`<${Empty} text=${all.length ? 'No group matches the filters.' : 'No consumer groups yet.'} />` : html`<${Table} testid="table-consumers" rows=${rows} rowKey=${(g) => `${g.name}|${g.queueName}`}
        columns=${[
          { key: 'name', label: 'Group', render: (g) => html`<b data-testid="group-name"><${Trunc} text=${f.group(g.name)} /></b>${g.conflation && html` <${LastValue} />`}` },
          { key: 'queue', label: 'Queue', render: (g) => html`<a href=${'/queues/' + enc(g.queueName)}><${Trunc} text=${g.queueName} /></a>` },
          { key: 'members', label: 'Partitions', cls: 'num', render: (g) => f.num(g.members) },
          { key: 'lagging', label: 'Lagging', cls: 'num', render: (g) => f.num(g.partitionsWithLag) },
          { key: 'total', label: 'Unconsumed', cls: 'num', render: (g) => html`<span data-testid="total-lag">${f.num(g.totalLag)}</span>` },
          { key: 'time', label: 'Time lag', cls: 'num', render: (g) => html`<span class=${sev.timeLag(g.maxTimeLag)}>${f.secs(g.maxTimeLag)}</span>` },
          { key: 'state', label: 'State', render: (g) => html`<span class=${'tag ' + (g.state === 'Lagging' ? 'warn' : g.state === 'Dead' ? 'idle' : 'ok')}>${g.state}</span>` },
          { key: 'a', label: '', render: (g) => html`<div class="row-actions">
            <button class="btn sm" onClick=${() => setView(g)} data-testid="group-view">View</button>
            <${Action} ...${toNow(g)} small testid="group-move-now">Move to now</${Action}>
            <button class="btn sm" disabled=${!rw} title=${rw ? '' : 'needs read-write access'} onClick=${() => setSeek(g)} data-testid="group-seek">Seek…</button>
            <${Action} ...${del(g)} small cls="danger" testid="group-delete">Delete</${Action}></div>` },
        ]} />`}
    </${Card}>
    ${view && html`<${GroupDetail} group=${view.name} queue=${view.queueName} lag=${{ total: view.totalLag, partitions: view.partitionsWithLag }} onClose=${() => setView(null)} onChanged=${() => st.reload(true)} />`}
    ${seek && html`<${SeekDialog} row=${seek} onClose=${() => setSeek(null)} onDone=${() => st.reload(true)} />`}
  </div>`;
}
