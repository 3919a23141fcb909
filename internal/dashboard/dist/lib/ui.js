// Shared view pieces: cards, stats, tables, errors, modals, confirmations, toasts, range
// pickers and level-aware action buttons. Test hooks are data-testid attributes.
import { html, useState, useEffect, useRef, useContext, createContext } from './html.js';
import { can } from './auth.js';

/** Session carries the caller's access level ('read-only' | 'read-write' | 'admin'). */
export const Session = createContext({ level: 'admin' });

export const useLevel = () => useContext(Session).level;

export function Card({ title, actions, children, testid, cls = '' }) {
  return html`<section class=${'card ' + cls} data-testid=${testid}>
    ${(title || actions) && html`<header class="card-h"><h3>${title}</h3><div class="card-actions">${actions}</div></header>`}
    <div class="card-b">${children}</div>
  </section>`;
}

export function Stat({ label, value, sev = '', hint, testid, href }) {
  const body = html`<div class="stat-v">${value}</div><div class="stat-l">${label}</div>${hint && html`<div class="stat-h">${hint}</div>`}`;
  return href
    ? html`<a class=${'stat ' + sev} href=${href} data-testid=${testid}>${body}</a>`
    : html`<div class=${'stat ' + sev} data-testid=${testid}>${body}</div>`;
}

export function Stats({ children, testid }) {
  return html`<div class="stats" data-testid=${testid}>${children}</div>`;
}

/** ErrorBox shows a failed call inline; the page keeps what it had. */
export function ErrorBox({ error, what }) {
  if (!error) return null;
  const msg = error.message || String(error);
  const extra = error.status > 0 ? ` (HTTP ${error.status})` : '';
  return html`<div class="inline-error" role="alert" data-testid="inline-error">
    ${what ? `${what}: ` : ''}${msg}${extra}</div>`;
}

export function Loading({ show }) {
  return show ? html`<span class="loading" data-testid="loading" aria-label="loading"></span>` : null;
}

export function Empty({ text = 'Nothing here.' }) {
  return html`<div class="empty" data-testid="empty-state">${text}</div>`;
}

export function Banner({ kind = 'warn', testid, children }) {
  return html`<div class=${'banner ' + kind} role="status" data-testid=${testid}>${children}</div>`;
}

/**
 * Table renders rows with columns [{ key, label, render(row), cls, sort(row) }]; sortable
 * columns sort on click. rowKey(row) names each row (data-key), onRow opens it.
 */
/** Trunc shows a name (up to 255 characters) cut with an ellipsis, whole in its tooltip. */
export function Trunc({ text, cls = '' }) {
  const s = text === undefined || text === null ? '' : String(text);
  return html`<span class=${'trunc ' + cls} title=${s}>${s}</span>`;
}

export function Table({ columns, rows, rowKey, onRow, testid, empty = 'No rows.', rowCls }) {
  const [sort, setSort] = useState(null);
  let shown = Array.isArray(rows) ? rows : [];
  if (sort) {
    const col = columns.find((c) => c.key === sort.key);
    if (col && col.sort) {
      shown = [...shown].sort((a, b) => {
        const x = col.sort(a); const y = col.sort(b);
        return (x > y ? 1 : x < y ? -1 : 0) * sort.dir;
      });
    }
  }
  const head = (c) => {
    if (!c.sort) return html`<th class=${c.cls}>${c.label}</th>`;
    const on = sort && sort.key === c.key;
    const next = () => setSort({ key: c.key, dir: on ? -sort.dir : -1 });
    return html`<th class=${(c.cls || '') + ' sortable'} onClick=${next}>${c.label}${on ? (sort.dir > 0 ? ' ▲' : ' ▼') : ''}</th>`;
  };
  return html`<div class="table-wrap"><table class="tbl" data-testid=${testid}>
    <thead><tr>${columns.map(head)}</tr></thead>
    <tbody>
      ${shown.length === 0 && html`<tr class="empty-row"><td colspan=${columns.length}><${Empty} text=${empty} /></td></tr>`}
      ${shown.map((r, i) => html`<tr key=${rowKey ? rowKey(r) : i} data-key=${rowKey ? rowKey(r) : i}
          data-testid="row" class=${(onRow ? 'clickable ' : '') + (rowCls ? rowCls(r) : '')}
          onClick=${onRow ? (e) => { if (!e.target.closest('button,a,input,select')) onRow(r); } : undefined}>
        ${columns.map((c) => html`<td class=${c.cls}>${c.render ? c.render(r) : r[c.key]}</td>`)}
      </tr>`)}
    </tbody></table></div>`;
}

export function Modal({ title, onClose, children, testid = 'modal', wide }) {
  useEffect(() => {
    const onKey = (e) => { if (e.key === 'Escape') onClose(); };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [onClose]);
  return html`<div class="modal-bg" onClick=${(e) => { if (e.target === e.currentTarget) onClose(); }}>
    <div class=${'modal' + (wide ? ' wide' : '')} role="dialog" aria-label=${title} data-testid=${testid}>
      <header class="modal-h"><h3>${title}</h3>
        <button class="btn ghost" onClick=${onClose} aria-label="close" data-testid="modal-close">✕</button></header>
      <div class="modal-b">${children}</div>
    </div></div>`;
}

// Confirmations and toasts are rendered by one host each, mounted by the shell.
const hosts = { confirm: null, toast: null };

/**
 * confirm asks before an action: resolves to false, or to true (or the checked options
 * when opts.options lists checkboxes [{ name, label, checked }]).
 */
export function confirm(opts) {
  return new Promise((resolve) => {
    if (!hosts.confirm) { resolve(false); return; }
    hosts.confirm({ ...opts, resolve });
  });
}

export function ConfirmHost() {
  const [req, setReq] = useState(null);
  const [opts, setOpts] = useState({});
  useEffect(() => {
    hosts.confirm = (r) => {
      setOpts(Object.fromEntries((r.options || []).map((o) => [o.name, !!o.checked])));
      setReq(r);
    };
    return () => { hosts.confirm = null; };
  }, []);
  if (!req) return null;
  const done = (v) => { setReq(null); req.resolve(v && req.options ? opts : v); };
  return html`<${Modal} title=${req.title || 'Are you sure?'} onClose=${() => done(false)} testid="confirm-dialog">
    <p class="confirm-text">${req.text}</p>
    ${(req.options || []).map((o) => html`<label class="check"><input type="checkbox" checked=${opts[o.name]}
        data-testid=${'confirm-opt-' + o.name}
        onChange=${(e) => setOpts({ ...opts, [o.name]: e.target.checked })} /> ${o.label}</label>`)}
    <div class="modal-actions">
      <button class="btn" onClick=${() => done(false)} data-testid="confirm-cancel">Cancel</button>
      <button class=${'btn ' + (req.danger ? 'danger' : 'primary')} onClick=${() => done(true)}
        data-testid="confirm-accept">${req.confirmLabel || 'Confirm'}</button>
    </div></${Modal}>`;
}

/** toast shows a short message: kind 'ok' or 'bad'. */
export function toast(text, kind = 'ok') {
  if (hosts.toast) hosts.toast({ text, kind, id: Math.random() });
}

export function ToastHost() {
  const [items, setItems] = useState([]);
  useEffect(() => {
    hosts.toast = (t) => {
      setItems((xs) => [...xs.slice(-3), t]);
      setTimeout(() => setItems((xs) => xs.filter((x) => x.id !== t.id)), t.kind === 'bad' ? 8000 : 4000);
    };
    return () => { hosts.toast = null; };
  }, []);
  return html`<div class="toasts">${items.map((t) => html`<div key=${t.id} class=${'toast ' + t.kind}
    role="status" data-testid=${'toast-' + t.kind}>${t.text}</div>`)}</div>`;
}

const needLabel = { 'read-write': 'read-write', admin: 'admin' };

/**
 * Action is a button for a change: disabled (with the reason) below the level it needs
 * or while off names why it cannot run,
 * asks first when ask is given, shows progress, and reports the outcome as a toast.
 */
export function Action({ need = 'read-write', run, ask, children, testid, cls = '', done, small, off }) {
  const level = useLevel();
  const [busy, setBusy] = useState(false);
  const allowed = can(level, need) && !off;
  const click = async (e) => {
    e.stopPropagation();
    if (!allowed || busy) return;
    let answer = true;
    if (ask) {
      answer = await confirm(typeof ask === 'function' ? ask() : ask);
      if (!answer) return;
    }
    setBusy(true);
    try {
      const res = await run(answer);
      if (done) toast(typeof done === 'function' ? done(res) : done, 'ok');
    } catch (err) {
      toast(err && err.message ? err.message : 'failed', 'bad');
    } finally {
      setBusy(false);
    }
  };
  return html`<button class=${'btn ' + cls + (small ? ' sm' : '')} disabled=${!allowed || busy}
    title=${off || (allowed ? '' : `needs ${needLabel[need]} access`)} data-testid=${testid}
    onClick=${click}>${busy ? '…' : children}</button>`;
}

/** Range picks a time range key; 'custom' shows two datetime inputs. */
export function Range({ value, options = ['1h', '6h', '24h'], onChange, custom, onCustom }) {
  return html`<div class="range" data-testid="range">
    ${options.map((o) => html`<button class=${'btn seg' + (o === value ? ' on' : '')}
      data-testid=${'range-' + o} onClick=${() => onChange(o)}>${o}</button>`)}
    ${value === 'custom' && html`<span class="custom-range">
      <input type="datetime-local" step="1" value=${custom.from} data-testid="range-from"
        onChange=${(e) => onCustom({ ...custom, from: e.target.value })} />
      <input type="datetime-local" step="1" value=${custom.to} data-testid="range-to"
        onChange=${(e) => onCustom({ ...custom, to: e.target.value })} /></span>`}
  </div>`;
}

export function Tabs({ tabs, value, onChange, testid = 'tabs' }) {
  return html`<div class="tabs" data-testid=${testid}>${tabs.map((t) => html`<button
    class=${'tab' + (t === value ? ' on' : '')} data-testid=${'tab-' + t.toLowerCase().replace(/[^a-z0-9]+/g, '-')}
    onClick=${() => onChange(t)}>${t}</button>`)}</div>`;
}

/** PageHead is the title row of a page with its controls on the right. */
export function PageHead({ title, sub, children }) {
  return html`<div class="page-head"><div><h2>${title}</h2>${sub && html`<div class="sub">${sub}</div>`}</div>
    <div class="page-controls">${children}</div></div>`;
}

/** Pre shows JSON or text with a Copy button. */
export function Pre({ text, testid = 'payload' }) {
  const ref = useRef(null);
  const copy = () => {
    // The Clipboard API exists only in secure contexts (HTTPS, localhost); over plain
    // HTTP the text is selected for the user's own Ctrl+C instead.
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(() => toast('copied'), () => toast('copy refused', 'bad'));
      return;
    }
    const sel = window.getSelection();
    const range = document.createRange();
    range.selectNodeContents(ref.current);
    sel.removeAllRanges();
    sel.addRange(range);
    toast('selected: press Ctrl+C to copy (the browser allows copying from a script over HTTPS only)');
  };
  return html`<div class="pre-wrap"><button class="btn sm copy" onClick=${copy} data-testid="copy">Copy</button>
    <pre data-testid=${testid} ref=${ref}>${text}</pre></div>`;
}

/** KV is a definition list of [label, value] pairs. */
export function KV({ items, testid }) {
  return html`<dl class="kv" data-testid=${testid}>${items.filter(Boolean).map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>`;
}
