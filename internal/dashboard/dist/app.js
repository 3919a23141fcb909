// The dashboard's entry point: finds out who the caller is, then mounts the shell and the
// page of the current route. Nothing here throws to the console: failures show inline.
import { html, render, useState, useEffect, useCallback } from './lib/html.js';
import { api, onAuthFailure } from './lib/api.js';
import { authMode, behindProxy, token, forgetToken, claims, normalLevel } from './lib/auth.js';
import { Session } from './lib/ui.js';
import { interceptLinks, navigate } from './lib/router.js';
import { Layout } from './shell/layout.js';
import { Connect, NoRole } from './shell/connect.js';

/** WHOAMI_RETRY_MS is how long a degraded start waits before it asks again. */
const WHOAMI_RETRY_MS = 5000;

/**
 * whoami resolves the session: { authEnabled, sub, level, exp }. A broker without the
 * route (404) is taken to have no authentication; in jwt mode the level then comes from
 * the token's role claim when it names one, else admin (the broker still checks).
 */
async function whoami() {
  try {
    const w = await api('/api/v1/auth/whoami', { quiet401: true });
    return {
      authEnabled: !!(w && w.authEnabled),
      sub: w && w.sub ? String(w.sub) : null,
      level: normalLevel(w && w.level) || 'admin',
      exp: w && Number.isFinite(w.exp) ? w.exp : null,
    };
  } catch (err) {
    if (err.status !== 404) throw err;
    const c = authMode === 'jwt' ? claims(token()) || {} : {};
    const role = normalLevel(c.role) || normalLevel(Array.isArray(c.roles) ? c.roles.find(normalLevel) : '');
    return { authEnabled: authMode === 'jwt', sub: c.sub || null, level: role || 'admin', exp: c.exp || null };
  }
}

/**
 * proxySession resolves the session behind queen-proxy: the signed-in user and their
 * role, from the proxy's GET /api/me (the broker's whoami would describe the token the
 * proxy mints, and the proxy does not forward it). A 401 means no session.
 */
async function proxySession() {
  const me = await api('/api/me', { quiet401: true });
  const user = me && me.username ? String(me.username) : null;
  return { authEnabled: true, sub: user, user, level: normalLevel(me && me.role) || 'read-only', exp: null };
}

function loginRedirect() {
  location.assign(`/login?redirect_uri=${encodeURIComponent(location.pathname + location.search)}`);
}

function App() {
  // phase: 'boot' | 'connect' | 'norole' | 'ready' | 'down'
  const [st, setSt] = useState({ phase: 'boot', session: null, error: null });

  const start = useCallback(async () => {
    if (authMode === 'jwt' && !behindProxy && !token()) {
      setSt({ phase: 'connect', session: null, error: null });
      return;
    }
    try {
      const session = behindProxy ? await proxySession() : await whoami();
      setSt({ phase: 'ready', session, error: null });
    } catch (err) {
      if (err.status === 401) {
        if (behindProxy) { loginRedirect(); return; }
        forgetToken();
        setSt({ phase: 'connect', session: null, error: err });
      } else if (err.status === 403) {
        setSt({ phase: 'norole', session: null, error: err });
      } else {
        // The broker is unreachable or failing: show the shell anyway, pages say why.
        setSt({ phase: 'ready', session: { authEnabled: authMode === 'jwt', level: 'read-only', sub: null, exp: null, degraded: err }, error: err });
      }
    }
  }, []);

  useEffect(() => { start(); }, [start]);

  // A start that could not learn what this session may do (the broker unreachable or
  // failing) shows the shell read-only and asks again every few seconds, so that the
  // controls come back without a reload once the broker answers.
  useEffect(() => {
    if (!(st.session && st.session.degraded)) return undefined;
    const retry = setTimeout(start, WHOAMI_RETRY_MS);
    return () => clearTimeout(retry);
  }, [st, start]);

  useEffect(() => onAuthFailure('unauthorized', (err) => {
    if (behindProxy) { loginRedirect(); return; }
    if (authMode !== 'jwt') return;
    forgetToken();
    setSt({ phase: 'connect', session: null, error: err });
  }), []);

  const signOut = useCallback(() => {
    forgetToken();
    setSt({ phase: 'connect', session: null, error: null });
  }, []);

  if (st.phase === 'boot') return html`<div class="boot" data-testid="boot">Loading…</div>`;
  if (st.phase === 'connect') {
    return html`<${Connect} error=${st.error} onConnected=${start} />`;
  }
  if (st.phase === 'norole') return html`<${NoRole} error=${st.error} onSignOut=${signOut} />`;
  return html`<${Session.Provider} value=${st.session}>
    <${Layout} session=${st.session} onSignOut=${signOut} /></${Session.Provider}>`;
}

interceptLinks(document);
render(html`<${App} />`, document.getElementById('app'));
export { navigate };
