// Messages (/messages): the message listing with filters and real paging, and a drawer
// with one message's details, payload and consumer groups, retry (of a dead letter) and
// delete.
import { html, useState } from '../lib/html.js';
import { api, enc, ok } from '../lib/api.js';
import { useLoader, settle } from '../lib/data.js';
import { setQuery } from '../lib/router.js';
import { toLocalInput } from '../lib/time.js';
import { Card, ErrorBox, Loading, PageHead, Table, Action, Banner, KV, Pre, Modal, Trunc } from '../lib/ui.js';
import { queuesCached } from '../shell/search.js';
import * as f from '../lib/format.js';

const STATUSES = ['pending', 'processing', 'completed', 'dead_letter'];

// splitKey splits a message key "<partition id>/<transaction id>" at its first "/":
// the partition id is a UUID, the transaction id may hold any character, "/" included.
export function splitKey(key) {
  const i = key.indexOf('/');
  return i < 0 ? [key, ''] : [key.slice(0, i), key.slice(i + 1)];
}

function Drawer({ id, onClose, onDeleted, onChanged }) {
  const [pid, tid] = splitKey(id);
  const st = useLoader(() => api(`/api/v1/messages/${enc(pid)}/${enc(tid)}`), [id]);
  const m = st.data || {};
  const qc = m.queueConfig || {};
  const del = {
    need: 'read-write',
    ask: { title: 'Delete this message?', text: 'The message, its dead-letter entries and traces are deleted; cursors stay where they are.', confirmLabel: 'Delete', danger: true },
    run: async () => { ok(await api(`/api/v1/messages/${enc(pid)}/${enc(tid)}`, { method: 'DELETE' })); onDeleted(id); onClose(); },
    done: 'message deleted',
  };
  // Retry moves the newest dead-letter entry: a copy goes to the end of the partition
  // under the transaction id dlq:<entry id>; a move already made is answered duplicate
  // and writes nothing.
  const retry = {
    need: 'read-write',
    ask: { title: 'Retry this message?', text: 'Its newest dead-letter entry is removed and a copy of the message is pushed to the end of its partition; every consumer group of the partition receives the copy. The message itself stays.', confirmLabel: 'Retry' },
    run: async () => {
      const r = await api(`/api/v1/messages/${enc(pid)}/${enc(tid)}/retry`, { method: 'POST' });
      await st.reload(true);
      onChanged();
      return r;
    },
    done: (r) => (r && r.result === 'duplicate' ? 'already retried: its copy is stored' : 'retried: a copy is at the end of its partition'),
  };
  return html`<${Modal} title=${`Message ${tid}`} onClose=${onClose} testid="message-drawer" wide>
    <${ErrorBox} error=${st.error} />
    ${st.data && html`<div>
      <${KV} testid="message-fields" items=${[
        ['Transaction id', html`<span class="mono">${m.transactionId}</span>`], ['Message id', html`<span class="mono">${m.id}</span>`],
        ['Partition id', html`<span class="mono">${m.partitionId}</span>`], ['Queue', html`<a href=${'/queues/' + enc(m.queue)}>${m.queue}</a>`],
        ['Partition', m.partition], ['Status', html`<span class=${'tag st-' + m.status} data-testid="message-status">${m.status}</span>`],
        ['Created', f.date(m.createdAt)], ['Trace id', m.traceId || f.dash], ['Retries', f.num(m.retryCount)],
        m.errorMessage && ['Error', html`<span class="bad">${m.errorMessage}</span>`],
        ['Queue config', `lease ${f.secs(qc.leaseTime)}, ttl ${qc.ttl ? f.secs(qc.ttl) : 'off'}, retry limit ${f.num(qc.retryLimit)}, retry delay ${f.ms(qc.retryDelay)}`],
      ]} />
      <h4>Payload</h4><${Pre} text=${f.json(m.payload)} />
      <h4>Consumer groups</h4>
      <${Table} testid="table-message-groups" rows=${m.consumerGroups || []} rowKey=${(g) => g.name} empty="No consumer group."
        columns=${[{ key: 'n', label: 'Group', render: (g) => f.group(g.name) }, { key: 'c', label: 'Consumed', render: (g) => (g.consumed ? 'yes' : 'no') }]} />
      <div class="row-actions">
        ${m.status === 'dead_letter' && html`<${Action} ...${retry} cls="primary" testid="message-retry">Retry</${Action}>`}
        <${Action} ...${del} cls="danger" testid="message-delete">Delete</${Action}>
      </div>
    </div>`}
  </${Modal}>`;
}

export function MessagesPage({ query }) {
  const now = new Date();
  const queue = query.get('queue') || '';
  const partition = query.get('partition') || '';
  const status = query.get('status') || '';
  const limit = Number(query.get('limit')) || 100;
  const offset = Number(query.get('offset')) || 0;
  const from = query.get('from') || '';
  const to = query.get('to') || '';
  const open = query.get('open') || '';
  const [draft, setDraft] = useState({ from: from || toLocalInput(new Date(now - 3600000)), to: to || toLocalInput(now) });
  const [search, setSearch] = useState('');
  // gone hides a deleted row at once; the list is then loaded again for the total.
  const [gone, setGone] = useState(new Set());
  const st = useLoader((forced) => settle({
    list: () => api('/api/v1/messages', { query: { queue, partition, status, limit, offset, from: from && new Date(from).toISOString(), to: to && new Date(to).toISOString() } }),
    queues: () => queuesCached(forced),
  }), [queue, partition, status, limit, offset, from, to]);
  const d = st.data || {};
  const l = d.list || {};
  const all = (l.messages || []).filter((m) => !gone.has(`${m.partitionId}/${m.transactionId}`));
  const rows = search ? all.filter((m) => [m.id, m.transactionId, m.partitionId].some((x) => String(x).includes(search))) : all;
  const total = l.total;
  const names = ((d.queues && d.queues.queues) || []).map((q) => q.name).sort();
  return html`<div>
    <${PageHead} title="Messages" sub=${total !== undefined ? html`<span data-testid="messages-total">${f.num(total)} matching</span>` : ''}><${Loading} show=${st.loading} /></${PageHead}>
    <${ErrorBox} error=${st.error} />
    ${l.mode && l.mode.type === 'bus' && html`<${Banner} kind="info" testid="banner-bus">Bus mode: ${f.num(l.mode.busGroupsCount)} consumer groups read these partitions; a message is completed once every group has passed it.</${Banner}>`}
    <div class="filters">
      <input placeholder="Filter ids on this page" value=${search} data-testid="messages-search" onInput=${(e) => setSearch(e.target.value)} />
      <select value=${queue} data-testid="messages-queue" onChange=${(e) => setQuery({ queue: e.target.value, offset: '' })}><option value="">All queues</option>${names.map((n) => html`<option value=${n}>${n}</option>`)}</select>
      <input placeholder="Partition" value=${partition} data-testid="messages-partition" onChange=${(e) => setQuery({ partition: e.target.value, offset: '' })} />
      <select value=${status} data-testid="messages-status" onChange=${(e) => setQuery({ status: e.target.value, offset: '' })}><option value="">Any status</option>${STATUSES.map((s) => html`<option value=${s}>${s}</option>`)}</select>
      <select value=${limit} data-testid="messages-limit" onChange=${(e) => setQuery({ limit: e.target.value, offset: '' })}>${[50, 100, 200, 500, 1000].map((n) => html`<option value=${n}>${n} per page</option>`)}</select>
      <input type="datetime-local" step="1" value=${draft.from} data-testid="messages-from" onInput=${(e) => setDraft({ ...draft, from: e.target.value })} />
      <input type="datetime-local" step="1" value=${draft.to} data-testid="messages-to" onInput=${(e) => setDraft({ ...draft, to: e.target.value })} />
      <button class="btn" data-testid="messages-apply" onClick=${() => setQuery({ from: draft.from, to: draft.to, offset: '' })}>Apply</button>
    </div>
    <${Card} testid="card-messages">
      <${Table} testid="table-messages" rows=${rows} rowKey=${(m) => `${m.partitionId}/${m.transactionId}`} empty="No messages in this window."
        onRow=${(m) => setQuery({ open: `${m.partitionId}/${m.transactionId}` })}
        columns=${[
          { key: 'queue', label: 'Queue', render: (m) => html`<${Trunc} text=${m.queue} />` },
          { key: 'pid', label: 'Partition id', render: (m) => html`<span class="mono dim">${String(m.partitionId).slice(0, 8)}</span>` },
          { key: 'partition', label: 'Partition', render: (m) => html`<${Trunc} text=${m.partition} />` },
          { key: 'tx', label: 'Transaction id', render: (m) => html`<span class="mono trunc" data-testid="message-tx" title=${m.transactionId}>${m.transactionId}</span>` },
          { key: 'created', label: 'Created', render: (m) => f.date(m.createdAt) },
          { key: 'status', label: 'Status', render: (m) => html`<span class=${'tag st-' + m.status} data-testid="message-row-status">${m.status}</span>${m.busStatus && m.busStatus.totalGroups > 0 ? html` <span class="dim">${m.busStatus.consumedBy}/${m.busStatus.totalGroups}</span>` : ''}` },
        ]} />
      <div class="pager" data-testid="messages-pager">
        <button class="btn sm" disabled=${offset === 0} data-testid="page-prev" onClick=${() => setQuery({ offset: Math.max(0, offset - limit) || '' })}>Prev</button>
        <span class="sub" data-testid="messages-shown">${all.length ? `${offset + 1}–${offset + all.length}` : '0'}${total !== undefined ? ` of ${f.num(total)}` : ''}</span>
        <button class="btn sm" disabled=${total !== undefined ? offset + all.length >= total : all.length < limit} data-testid="page-next" onClick=${() => setQuery({ offset: offset + limit })}>Next</button>
      </div>
    </${Card}>
    ${open && html`<${Drawer} id=${open} onClose=${() => setQuery({ open: '' })} onDeleted=${(id) => { setGone(new Set([...gone, id])); st.reload(); }} onChanged=${() => st.reload()} />`}
  </div>`;
}
