// Queue detail's partition browser: partitions a page at a time with counters, oldest and
// newest message and the queue-mode cursor, and the queue's latest messages.
import { html, useState } from '../lib/html.js';
import { api, list } from '../lib/api.js';
import { useLoader } from '../lib/data.js';
import { Card, ErrorBox, Table, Loading, Trunc } from '../lib/ui.js';
import * as f from '../lib/format.js';

const PAGE = 50;

function Pager({ offset, count, total, onPage, testid }) {
  const hasMore = total !== undefined && total !== null ? offset + count < total : count === PAGE;
  return html`<div class="pager" data-testid=${testid}>
    <button class="btn sm" disabled=${offset === 0} data-testid="page-prev" onClick=${() => onPage(Math.max(0, offset - PAGE))}>Prev</button>
    <span class="sub">${count ? `${offset + 1}–${offset + count}` : '0'}${total !== undefined && total !== null ? ` of ${f.num(total)}` : ''}</span>
    <button class="btn sm" disabled=${!hasMore} data-testid="page-next" onClick=${() => onPage(offset + PAGE)}>Next</button></div>`;
}

export function PartitionBrowser({ queue }) {
  const [offset, setOffset] = useState(0);
  const st = useLoader(() => api('/api/v1/resources/partitions', { query: { queue, limit: PAGE, offset } }), [queue, offset], 30000);
  const rows = (st.data && st.data.partitions) || [];
  const pg = (st.data && st.data.pagination) || {};
  return html`<${Card} title="Partitions" testid="card-partitions" actions=${html`<${Loading} show=${st.loading} />`}>
    <${ErrorBox} error=${st.error} />
    <${Table} testid="table-partitions" rows=${rows} rowKey=${(p) => p.id || p.name} empty="No partitions."
      columns=${[
        { key: 'name', label: 'Partition', render: (p) => html`<a class="trunc" title=${p.name} href=${`/messages?queue=${encodeURIComponent(queue)}&partition=${encodeURIComponent(p.name)}`}>${p.name}</a>` },
        { key: 'pending', label: 'Pending', cls: 'num', render: (p) => f.num((p.messages || p.stats || {}).pending) },
        { key: 'processing', label: 'Processing', cls: 'num', render: (p) => f.num((p.messages || p.stats || {}).processing) },
        { key: 'completed', label: 'Completed', cls: 'num', render: (p) => f.num((p.messages || p.stats || {}).completed) },
        { key: 'dlq', label: 'DLQ', cls: 'num', render: (p) => f.num((p.messages || p.stats || {}).deadLetter) },
        { key: 'total', label: 'Total', cls: 'num', render: (p) => f.num((p.messages || p.stats || {}).total) },
        { key: 'consumed', label: 'Consumed', cls: 'num', render: (p) => f.num(p.cursor && p.cursor.totalConsumed) },
        { key: 'oldest', label: 'Oldest', render: (p) => f.date(p.oldestMessage) },
        { key: 'newest', label: 'Newest', render: (p) => f.date(p.newestMessage) },
        { key: 'activity', label: 'Last activity', render: (p) => f.age(p.lastActivity) },
      ]} />
    <${Pager} offset=${offset} count=${rows.length} total=${pg.total ?? st.data?.total} onPage=${setOffset} testid="partitions-pager" />
  </${Card}>`;
}

export function LatestMessages({ queue }) {
  const [offset, setOffset] = useState(0);
  const st = useLoader(() => api(`/api/v1/status/queues/${encodeURIComponent(queue)}/messages`, { query: { limit: PAGE, offset } }).then(list), [queue, offset], 30000);
  const rows = st.data || [];
  return html`<${Card} title="Latest messages" testid="card-latest-messages">
    <${ErrorBox} error=${st.error} />
    <${Table} testid="table-latest-messages" rows=${rows} rowKey=${(m) => m.partitionId + '/' + m.transactionId} empty="No messages."
      columns=${[
        { key: 'tx', label: 'Transaction', render: (m) => html`<a class="mono trunc" title=${m.transactionId} href=${`/messages?queue=${encodeURIComponent(queue)}&open=${encodeURIComponent(m.partitionId + '/' + m.transactionId)}`}>${m.transactionId}</a>` },
        { key: 'partition', label: 'Partition', render: (m) => html`<${Trunc} text=${m.partition} />` },
        { key: 'status', label: 'Status', render: (m) => html`<span class=${'tag st-' + m.status}>${m.status}</span>` },
        { key: 'created', label: 'Created', render: (m) => f.date(m.createdAt) },
      ]} />
    <${Pager} offset=${offset} count=${rows.length} onPage=${setOffset} testid="latest-pager" />
  </${Card}>`;
}
