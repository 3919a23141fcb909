// Ctrl/⌘-K search over queue and consumer-group names.
import { html, useState, useEffect, useRef } from '../lib/html.js';
import { api, list } from '../lib/api.js';
import { cached } from '../lib/data.js';
import { navigate } from '../lib/router.js';
import { Modal, ErrorBox } from '../lib/ui.js';
import { group } from '../lib/format.js';

export function queuesCached(forced) {
  return cached('queues', 30000, () => api('/api/v1/resources/queues'), forced);
}

export function Search({ onClose }) {
  const [q, setQ] = useState('');
  const [items, setItems] = useState([]);
  const [error, setError] = useState(null);
  const [sel, setSel] = useState(0);
  const input = useRef(null);
  useEffect(() => {
    if (input.current) input.current.focus();
    Promise.all([queuesCached(false), api('/api/v1/consumer-groups')]).then(([qs, gs]) => {
      const queues = ((qs && qs.queues) || []).map((x) => ({ kind: 'queue', name: x.name, sub: `${x.partitions} partitions`, to: `/queues/${encodeURIComponent(x.name)}` }));
      const seen = new Set();
      const groups = list(gs).filter((g) => !seen.has(g.name) && seen.add(g.name))
        .map((g) => ({ kind: 'group', name: g.name, label: group(g.name), sub: `${g.queueName}, ${g.members} partitions`, to: `/consumers?search=${encodeURIComponent(g.name)}` }));
      setItems([...queues, ...groups]);
    }, setError);
  }, []);
  const needle = q.trim().toLowerCase();
  const shown = items.filter((i) => !needle || i.name.toLowerCase().includes(needle)).slice(0, 30);
  const go = (i) => { if (i) { onClose(); navigate(i.to); } };
  const key = (e) => {
    if (e.key === 'ArrowDown') { e.preventDefault(); setSel(Math.min(sel + 1, shown.length - 1)); }
    if (e.key === 'ArrowUp') { e.preventDefault(); setSel(Math.max(sel - 1, 0)); }
    if (e.key === 'Enter') go(shown[sel]);
  };
  return html`<${Modal} title="Search queues and consumer groups" onClose=${onClose} testid="search-dialog">
    <input ref=${input} class="search-input" placeholder="Name…" value=${q} data-testid="search-input"
      onInput=${(e) => { setQ(e.target.value); setSel(0); }} onKeyDown=${key} />
    <${ErrorBox} error=${error} />
    <ul class="search-results">${shown.map((i, n) => html`<li class=${n === sel ? 'on' : ''} data-testid="search-result"
      data-kind=${i.kind} data-name=${i.name} onClick=${() => go(i)}><span class="tag">${i.kind}</span> ${i.label || i.name} <span class="sub">${i.sub}</span></li>`)}
      ${shown.length === 0 && html`<li class="sub" data-testid="empty-state">No match.</li>`}</ul>
  </${Modal}>`;
}
