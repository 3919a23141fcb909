// Dead letter (/dlq): failed messages with server-side filters and paging, the top
// errors, purge of one message, and requeue or bulk purge of a selection or a filter.
import { html, useState } from '../lib/html.js';
import { api, enc, ok } from '../lib/api.js';
import { useLoader, settle } from '../lib/data.js';
import { setQuery } from '../lib/router.js';
import { HBars } from '../lib/chart.js';
import { Card, Stat, Stats, ErrorBox, Loading, PageHead, Table, Action, KV, Pre, Modal, Trunc } from '../lib/ui.js';
import * as f from '../lib/format.js';

const key = (m) => `${m.partitionId}/${m.transactionId}/${m.consumerGroup || ''}`;

function Detail({ m, onClose }) {
  return html`<${Modal} title=${`Dead letter ${m.transactionId}`} onClose=${onClose} testid="dlq-detail" wide>
    <${KV} items=${[['Transaction id', m.transactionId], ['Message id', m.id], ['Partition id', m.partitionId], ['Queue', m.queue],
      ['Partition', m.partition], ['Group', f.group(m.consumerGroup)], ['Created', f.date(m.createdAt)], ['Failed', f.date(m.failedAt)],
      ['Retries', f.num(m.retryCount)], ['Error', html`<span class="bad">${m.errorMessage}</span>`]]} />
    <h4>Payload</h4><${Pre} text=${f.json(m.data)} /></${Modal}>`;
}

export function DLQPage({ query }) {
  const queue = query.get('queue') || '';
  const group = query.get('consumerGroup') || '';
  const offset = Number(query.get('offset')) || 0;
  const limit = 100;
  const [sel, setSel] = useState(new Set());
  const [open, setOpen] = useState(null);
  const st = useLoader(() => settle({
    dlq: () => api('/api/v1/dlq', { query: { queue, consumerGroup: group, limit, offset } }),
    status: () => api('/api/v1/status', { query: { queue } }),
  }), [queue, group, offset], 30000);
  const d = st.data || {};
  const rows = (d.dlq && d.dlq.messages) || [];
  const total = d.dlq ? d.dlq.total : undefined;
  const dq = (d.status && d.status.deadLetterQueue) || {};
  const errs = (dq.topErrors || []).map((e) => ({ label: e.error, value: e.count }));
  const affected = new Set(rows.map((m) => m.partitionId)).size;
  const chosen = rows.filter((m) => sel.has(key(m)));
  const filter = { queue: queue || undefined, consumerGroup: group || undefined };
  const after = async () => { setSel(new Set()); await st.reload(true); };
  const purgeOne = (m) => ({
    need: 'read-write',
    ask: { title: 'Purge this message?', text: 'This deletes the message itself, with every dead-letter entry and trace of it.', confirmLabel: 'Purge', danger: true },
    run: async () => { ok(await api(`/api/v1/messages/${enc(m.partitionId)}/${enc(m.transactionId)}`, { method: 'DELETE' })); await after(); },
    done: 'message purged',
  });
  const requeue = {
    need: 'read-write',
    ask: () => ({ title: chosen.length ? `Requeue ${chosen.length} messages?` : `Requeue every dead letter${queue ? ` of ${queue}` : ''}${group ? ` for ${group}` : ''}?`,
      text: 'Each payload is pushed again to its partition under a new transaction id and its dead-letter entry is dropped, in one transaction.', confirmLabel: 'Requeue' }),
    // A filter requeue moves a bounded batch per call and says whether more match.
    run: async () => {
      if (chosen.length) {
        const r = await api('/api/v1/dlq/requeue', { method: 'POST', body: { items: chosen.map((m) => ({ partitionId: m.partitionId, transactionId: m.transactionId, consumerGroup: m.consumerGroup })) } });
        await after();
        return (r && r.requeued) || 0;
      }
      let requeued = 0;
      let more = false;
      try {
        for (let i = 0; i < 100; i++) {
          const r = await api('/api/v1/dlq/requeue', { method: 'POST', body: { filter } });
          requeued += (r && r.requeued) || 0;
          more = !!(r && r.more);
          if (!more || !r.requeued) break;
        }
      } finally {
        await after(); // what moved before a failure shows too
      }
      return more ? { requeued, more } : requeued;
    },
    done: (n) => (typeof n === 'object' ? `${f.num(n.requeued)} requeued; more match: requeue again` : `${f.num(n)} requeued`),
  };
  const purgeAll = {
    need: 'admin',
    ask: { title: `Purge every dead letter${queue ? ` of ${queue}` : ''}${group ? ` for ${group}` : ''}?`, text: 'The dead-letter entries matching the filter are deleted. This cannot be undone.', confirmLabel: 'Purge', danger: true },
    // The broker deletes a bounded batch per call and says whether more match.
    run: async () => {
      let deleted = 0;
      let more = false;
      try {
        for (let i = 0; i < 100; i++) {
          const r = await api('/api/v1/dlq', { method: 'DELETE', query: filter });
          deleted += (r && r.deleted) || 0;
          more = !!(r && r.more);
          if (!more || !r.deleted) break;
        }
      } finally {
        await after(); // what was deleted before a failure shows too
      }
      return more ? { deleted, more } : deleted;
    },
    done: (n) => (typeof n === 'object' ? `${f.num(n.deleted)} dead letters purged; more match: purge again` : `${f.num(n)} dead letters purged`),
  };
  // Bulk requeue and purge act on one queue at a time (the broker requires it).
  const bulkOff = 'filter by a queue first';
  const toggle = (m) => { const s = new Set(sel); if (s.has(key(m))) s.delete(key(m)); else s.add(key(m)); setSel(s); };
  const groups = [...new Set(rows.map((m) => m.consumerGroup).filter(Boolean))];
  return html`<div>
    <${PageHead} title="Dead letter" sub=${total !== undefined ? html`<span data-testid="dlq-count">${rows.length} of ${f.num(total)}</span>` : ''}><${Loading} show=${st.loading} /></${PageHead}>
    <${ErrorBox} error=${st.error} />
    <div class="grid-main">
      <${Stats} testid="dlq-counts">
        <${Stat} label="Dead letters" value=${f.num(total)} sev=${total > 0 ? 'bad' : ''} testid="stat-dlq-total" />
        <${Stat} label="Failed in the last hour" value=${f.num(dq.totalMessages)} testid="stat-dlq-hour" />
        <${Stat} label="Partitions failing in the last hour" value=${f.num(dq.affectedPartitions ?? affected)} testid="stat-dlq-partitions" />
      </${Stats}>
      <${Card} title="Top errors (last hour)" testid="card-top-errors"><${HBars} items=${errs} testid="top-errors" /></${Card}>
    </div>
    <div class="filters">
      <input placeholder="Queue" value=${queue} data-testid="dlq-queue" onChange=${(e) => setQuery({ queue: e.target.value, offset: '' })} />
      <input placeholder="Consumer group" value=${group} list="dlq-groups" data-testid="dlq-group" onChange=${(e) => setQuery({ consumerGroup: e.target.value, offset: '' })} />
      <datalist id="dlq-groups">${groups.map((g) => html`<option value=${g} />`)}</datalist>
      <${Action} ...${requeue} off=${!chosen.length && !queue && bulkOff} testid="dlq-requeue">${chosen.length ? `Requeue ${chosen.length}` : 'Requeue all matching'}</${Action}>
      <${Action} ...${purgeAll} off=${!queue && bulkOff} cls="danger" testid="dlq-purge-all">Purge all matching</${Action}>
    </div>
    <${Card} testid="card-dlq">
      <${Table} testid="table-dlq" rows=${rows} rowKey=${key} onRow=${setOpen} empty=${queue || group ? 'No dead letter matches the filters.' : 'The dead-letter queue is empty.'}
        columns=${[
          { key: 'sel', label: '', render: (m) => html`<input type="checkbox" checked=${sel.has(key(m))} onChange=${() => toggle(m)} data-testid="dlq-select" />` },
          { key: 'tx', label: 'Transaction id', render: (m) => html`<span class="mono">${m.transactionId}</span>` },
          { key: 'queue', label: 'Queue', render: (m) => html`<${Trunc} text=${m.queue} />` },
          { key: 'group', label: 'Group', render: (m) => html`<${Trunc} text=${f.group(m.consumerGroup)} />` },
          { key: 'err', label: 'Error', render: (m) => html`<span class="bad" data-testid="dlq-error">${m.errorMessage}</span>` },
          { key: 'retries', label: 'Retries', cls: 'num', render: (m) => f.num(m.retryCount) },
          { key: 'failed', label: 'Failed', render: (m) => f.age(m.failedAt) },
          { key: 'a', label: '', render: (m) => html`<${Action} ...${purgeOne(m)} small cls="danger" testid="dlq-purge">Purge</${Action}>` },
        ]} />
      <div class="pager" data-testid="dlq-pager">
        <button class="btn sm" disabled=${offset === 0} data-testid="page-prev" onClick=${() => setQuery({ offset: Math.max(0, offset - limit) || '' })}>Prev</button>
        <button class="btn sm" disabled=${total === undefined || offset + rows.length >= total} data-testid="page-next" onClick=${() => setQuery({ offset: offset + limit })}>Next</button>
      </div>
    </${Card}>
    ${open && html`<${Detail} m=${open} onClose=${() => setOpen(null)} />`}
  </div>`;
}
