// Authentication as the page sees it. index.html tells the mode the broker runs in
// (<meta name="queen-auth">: "none" or "jwt") and whether the request came through an
// authenticating proxy (<meta name="queen-proxy" content="1">, a hint only). In jwt mode
// the operator pastes a bearer token; it is kept in sessionStorage (this tab, until it
// closes) or, with "remember", in localStorage (every tab, until sign-out), and sent only
// on /api calls. What the token may do comes from GET /api/v1/auth/whoami.

const KEY = 'queen.token';
const LEVELS = ['read-only', 'read-write', 'admin'];

function meta(name) {
  const el = document.querySelector(`meta[name="${name}"]`);
  const v = el ? el.getAttribute('content') : '';
  return v && !v.startsWith('{{') ? v : '';
}

export const authMode = meta('queen-auth') === 'jwt' ? 'jwt' : 'none';
export const behindProxy = meta('queen-proxy') === '1';
export const version = meta('queen-version');

function storageGet(store) {
  try { return store.getItem(KEY) || ''; } catch { return ''; }
}

/** token is the stored bearer token, or '' when there is none. */
export function token() {
  return storageGet(window.sessionStorage) || storageGet(window.localStorage);
}

/** remembered reports whether the token is kept across tabs. */
export function remembered() {
  return storageGet(window.localStorage) !== '';
}

export function saveToken(tok, remember) {
  forgetToken();
  try {
    (remember ? window.localStorage : window.sessionStorage).setItem(KEY, tok);
  } catch { /* storage refused: the token lives until reload */ }
}

export function forgetToken() {
  for (const s of [window.sessionStorage, window.localStorage]) {
    try { s.removeItem(KEY); } catch { /* nothing stored */ }
  }
}

/** claims decodes a JWT's payload for display only; nothing is trusted from it. */
export function claims(tok) {
  try {
    const part = tok.split('.')[1];
    const b64 = part.replace(/-/g, '+').replace(/_/g, '/');
    const json = decodeURIComponent(Array.from(atob(b64), (c) =>
      '%' + c.charCodeAt(0).toString(16).padStart(2, '0')).join(''));
    const c = JSON.parse(json);
    return c && typeof c === 'object' ? c : null;
  } catch {
    return null;
  }
}

/** can reports whether level reaches need (read-only < read-write < admin). */
export function can(level, need) {
  return LEVELS.indexOf(level) >= LEVELS.indexOf(need);
}

export function normalLevel(v) {
  return LEVELS.includes(v) ? v : '';
}
