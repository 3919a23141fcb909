// Queue detail's settings editor: the fifteen options of POST /api/v1/configure,
// pre-filled with the stored values, with a diff before saving. Only the changed options
// are sent: configure merges, so the others keep their stored values, and an option an
// upstream broker stored without applying it (not enforced) stays so until changed here.
import { html, useState } from '../lib/html.js';
import { api } from '../lib/api.js';
import { useLoader } from '../lib/data.js';
import { Card, ErrorBox, Action, Banner } from '../lib/ui.js';

/** OPTIONS lists each option: name, kind ('int'|'bool'), default, unit. */
export const OPTIONS = [
  ['leaseTime', 'int', 300, 's'], ['retryLimit', 'int', 3, ''], ['retryDelay', 'int', 0, 'ms'],
  ['priority', 'int', 0, ''], ['maxSize', 'int', 0, 'messages'], ['ttl', 'int', 0, 's'],
  ['delayedProcessing', 'int', 0, 's'], ['windowBuffer', 'int', 0, 's'],
  ['retentionSeconds', 'int', 0, 's'], ['completedRetentionSeconds', 'int', 0, 's'],
  ['maxWaitTimeSeconds', 'int', 0, 's'], ['retentionEnabled', 'bool', false, ''],
  ['encryptionEnabled', 'bool', false, ''], ['deadLetterQueue', 'bool', true, ''],
  ['dlqAfterMaxRetries', 'bool', true, ''],
];

/** stored reads the option set: the queue's options, else its config subset, else defaults. */
function stored(res, config) {
  const o = (res && res.options) || {};
  const c = config || {};
  const alias = { maxSize: c.maxQueueSize };
  return Object.fromEntries(OPTIONS.map(([k, kind, def]) => {
    const v = o[k] !== undefined ? o[k] : c[k] !== undefined ? c[k] : alias[k] !== undefined ? alias[k] : def;
    return [k, kind === 'bool' ? !!v : Number(v) || 0];
  }));
}

export function QueueSettings({ queue, config, namespace, task, onSaved }) {
  const st = useLoader(() => api(`/api/v1/resources/queues/${encodeURIComponent(queue)}`), [queue]);
  const base = stored(st.data, config);
  const enforced = (st.data && st.data.enforcedOptions) || {};
  // edit holds only the options the operator changed, so stored values that arrive
  // later never overwrite what was typed.
  const [edit, setEdit] = useState(null);
  const cur = { ...base, ...edit };
  const diff = OPTIONS.filter(([k]) => cur[k] !== base[k]);
  const set = (k, kind) => (e) => setEdit({ ...edit, [k]: kind === 'bool' ? e.target.checked : Number(e.target.value) });
  const save = {
    need: 'read-write',
    ask: () => ({
      title: `Configure ${queue}?`, confirmLabel: 'Save',
      text: `Changes: ${diff.map(([k]) => `${k} ${base[k]} → ${cur[k]}`).join(', ')}. Only these are sent; every other option keeps its stored value.`,
    }),
    run: async () => {
      const options = Object.fromEntries(diff.map(([k]) => [k, cur[k]]));
      await api('/api/v1/configure', { method: 'POST', body: { queue, namespace: namespace || null, task: task || null, options } });
      await st.reload(true);
      setEdit(null);
      if (onSaved) onSaved();
    },
    done: 'options saved',
  };
  return html`<${Card} title="Settings" testid="card-settings">
    <${ErrorBox} error=${st.error} what="stored options" />
    <${Banner} kind="info" testid="settings-warning">Saving sends only the options you change; every other option keeps its stored value.</${Banner}>
    <div class="form-grid">${OPTIONS.map(([k, kind, , unit]) => html`<label class=${'field' + (cur[k] !== base[k] ? ' changed' : '')}>
      <span>${k}${unit && html` <span class="dim">(${unit})</span>`}${enforced[k] === false ? html` <span class="tag warn" title="stored by upstream, not applied until configured through queen">not enforced</span>` : ''}</span>
      ${kind === 'bool'
        ? html`<input type="checkbox" checked=${cur[k]} data-testid=${'opt-' + k} onChange=${set(k, kind)} />`
        : html`<input type="number" min="0" value=${cur[k]} data-testid=${'opt-' + k} onInput=${set(k, kind)} />`}
    </label>`)}</div>
    <div class="diff" data-testid="settings-diff">${diff.length
      ? diff.map(([k]) => html`<div><code>${k}</code>: ${String(base[k])} → <b>${String(cur[k])}</b></div>`)
      : html`<span class="dim">No changes.</span>`}</div>
    <div class="row-actions">
      <button class="btn" disabled=${!diff.length} onClick=${() => setEdit(null)} data-testid="settings-reset">Reset</button>
      ${diff.length ? html`<${Action} ...${save} cls="primary" testid="settings-save">Save</${Action}>` : html`<button class="btn primary" disabled data-testid="settings-save">Save</button>`}
    </div>
  </${Card}>`;
}
