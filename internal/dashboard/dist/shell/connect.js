// The Connect screen of jwt mode: the operator pastes a bearer token, optionally kept
// across tabs; and the notice for a valid token that carries no queen role.
import { html, useState } from '../lib/html.js';
import { saveToken, claims } from '../lib/auth.js';
import { date, secs } from '../lib/format.js';

export function Connect({ error, onConnected }) {
  const [tok, setTok] = useState('');
  const [remember, setRemember] = useState(false);
  const c = tok.trim() ? claims(tok.trim()) : null;
  const expired = c && c.exp && c.exp * 1000 < Date.now();
  const submit = (e) => {
    e.preventDefault();
    if (!tok.trim()) return;
    saveToken(tok.trim(), remember);
    onConnected();
  };
  return html`<div class="connect" data-testid="connect-screen">
    <form class="card connect-card" onSubmit=${submit}>
      <h2>Connect to Queen</h2>
      <p class="sub">This broker checks a bearer token (JWT) on every API call. Paste one to continue; it is sent only to this broker's /api routes.</p>
      ${error && html`<div class="inline-error" role="alert" data-testid="connect-error">${error.message}</div>`}
      <textarea rows="5" placeholder="eyJhbGciOi…" value=${tok} spellcheck="false" autocomplete="off"
        data-testid="connect-token" onInput=${(e) => setTok(e.target.value)}></textarea>
      ${c && html`<div class="sub" data-testid="connect-claims">subject <b>${c.sub || '—'}</b>${c.exp ? html`, expires ${date(c.exp * 1000)}
        ${expired ? html` <span class="bad">(expired)</span>` : ` (in ${secs(c.exp - Date.now() / 1000)})`}` : ''}</div>`}
      <label class="check"><input type="checkbox" checked=${remember} data-testid="connect-remember"
        onChange=${(e) => setRemember(e.target.checked)} /> Remember on this browser (every tab, until sign-out)</label>
      <button class="btn primary" type="submit" data-testid="connect-submit" disabled=${!tok.trim()}>Connect</button>
    </form></div>`;
}

export function NoRole({ error, onSignOut }) {
  return html`<div class="connect" data-testid="no-role">
    <div class="card connect-card"><h2>No queen role</h2>
      <p>The token is valid but grants no queen access level (read-only, read-write or admin).</p>
      ${error && html`<div class="inline-error" data-testid="no-role-error">${error.message}</div>`}
      <button class="btn" onClick=${onSignOut} data-testid="sign-out">Use another token</button></div></div>`;
}
