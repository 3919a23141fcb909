// Traces (/traces): trace events carrying a name, 50 a page, with a summary and details.
import { html, useState, useEffect } from '../lib/html.js';
import { api, enc } from '../lib/api.js';
import { useLoader } from '../lib/data.js';
import { setQuery } from '../lib/router.js';
import { Card, Stat, Stats, ErrorBox, Loading, PageHead, Table, KV, Pre, Modal, Empty, Trunc } from '../lib/ui.js';
import * as f from '../lib/format.js';

const PAGE = 50;

function dataText(data) {
  if (!data || typeof data !== 'object') return data === undefined || data === null ? '' : String(data);
  const { text, ...rest } = data;
  const extra = Object.keys(rest).length ? JSON.stringify(rest) : '';
  return [text, extra].filter(Boolean).join(' ');
}

export function TracesPage({ query }) {
  const name = query.get('name') || '';
  const offset = Number(query.get('offset')) || 0;
  const [draft, setDraft] = useState(name);
  useEffect(() => setDraft(name), [name]); // a name picked from the list, or Back
  const [open, setOpen] = useState(null);
  const names = useLoader(() => api('/api/v1/traces/names', { query: { limit: 50 } }), []);
  const st = useLoader(() => (name ? api(`/api/v1/traces/by-name/${enc(name)}`, { query: { limit: PAGE, offset } }) : Promise.resolve(null)), [name, offset]);
  const d = st.data || {};
  const rows = d.traces || [];
  const txs = new Set(rows.map((t) => t.transaction_id)).size;
  const queues = new Set(rows.map((t) => t.queue_name)).size;
  const known = (names.data && names.data.trace_names) || [];
  return html`<div>
    <${PageHead} title="Traces"><${Loading} show=${st.loading} /></${PageHead}>
    <form class="filters" onSubmit=${(e) => { e.preventDefault(); setQuery({ name: draft.trim(), offset: '' }); }}>
      <input placeholder="Trace name" value=${draft} list="trace-names" data-testid="traces-search" onInput=${(e) => setDraft(e.target.value)} />
      <datalist id="trace-names">${known.map((n) => html`<option value=${n.trace_name} />`)}</datalist>
      <button class="btn primary" type="submit" data-testid="traces-submit">Search</button>
    </form>
    <${ErrorBox} error=${st.error || names.error} />
    ${!name ? html`<${Card} title="Recent trace names" testid="card-trace-names">${known.length
      ? html`<div class="chips">${known.map((n) => html`<a class="chip" href=${'/traces?name=' + encodeURIComponent(n.trace_name)} data-testid="trace-name">${n.trace_name} <span class="dim">${f.num(n.trace_count)}</span></a>`)}</div>`
      : html`<${Empty} text="No traces recorded yet." />`}</${Card}>`
    : html`<div>
      <${Stats} testid="traces-summary">
        <${Stat} label="Events" value=${f.num(d.total ?? rows.length)} testid="stat-trace-events" />
        <${Stat} label="Messages (this page)" value=${f.num(txs)} testid="stat-trace-messages" />
        <${Stat} label="Queues (this page)" value=${f.num(queues)} testid="stat-trace-queues" />
      </${Stats}>
      <${Card} testid="card-traces">
        <${Table} testid="table-traces" rows=${rows} rowKey=${(t) => t.id} onRow=${setOpen} empty="No event carries this name."
          columns=${[
            { key: 'type', label: 'Event', render: (t) => html`<span class=${'tag ev-' + String(t.event_type).replace(/[^a-z0-9]/gi, '')}>${t.event_type}</span>` },
            { key: 'time', label: 'Time', render: (t) => f.date(t.created_at) },
            { key: 'queue', label: 'Queue', render: (t) => html`<${Trunc} text=${t.queue_name} />` },
            { key: 'partition', label: 'Partition', render: (t) => html`<${Trunc} text=${t.partition_name} />` },
            { key: 'tx', label: 'Transaction id', render: (t) => html`<a class="mono trunc" title=${t.transaction_id} href=${`/messages?queue=${encodeURIComponent(t.queue_name)}&open=${encodeURIComponent(t.partition_id + '/' + t.transaction_id)}`}>${t.transaction_id}</a>` },
            { key: 'names', label: 'Names', render: (t) => (t.trace_names || []).join(', ') },
            { key: 'data', label: 'Data', render: (t) => html`<span data-testid="trace-data">${dataText(t.data)}</span>` },
            { key: 'who', label: 'Worker / group', render: (t) => `${t.worker_id || f.dash} / ${f.group(t.consumer_group)}` },
          ]} />
        <div class="pager" data-testid="traces-pager">
          <button class="btn sm" disabled=${offset === 0} data-testid="page-prev" onClick=${() => setQuery({ offset: Math.max(0, offset - PAGE) || '' })}>Prev</button>
          <span class="sub">${rows.length ? `${offset + 1}–${offset + rows.length}` : '0'}${d.total !== undefined ? ` of ${f.num(d.total)}` : ''}</span>
          <button class="btn sm" disabled=${d.total !== undefined ? offset + rows.length >= d.total : rows.length < PAGE} data-testid="page-next" onClick=${() => setQuery({ offset: offset + PAGE })}>Next</button>
        </div></${Card}></div>`}
    ${open && html`<${Modal} title=${`Trace event ${open.event_type}`} onClose=${() => setOpen(null)} testid="trace-detail" wide>
      <${KV} items=${[['Transaction id', open.transaction_id], ['Partition id', open.partition_id], ['Queue', open.queue_name], ['Partition', open.partition_name],
        ['Group', f.group(open.consumer_group)], ['Worker', open.worker_id], ['Time', f.date(open.created_at)], ['Names', (open.trace_names || []).join(', ')]]} />
      <h4>Data</h4><${Pre} text=${f.json(open.data)} />
      ${open.message_payload !== undefined && html`<h4>Message payload</h4><${Pre} text=${f.json(open.message_payload)} testid="trace-payload" />`}
    </${Modal}>`}
  </div>`;
}
