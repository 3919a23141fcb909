// The shell around every page: sidebar (navigation, version, health, who is signed in),
// top bar (breadcrumb, search, refresh, maintenance toggles) and banners.
import { html, useState, useEffect, useLayoutEffect } from '../lib/html.js';
import { api } from '../lib/api.js';
import { version, authMode, behindProxy, can } from '../lib/auth.js';
import { useLoader, refreshAll } from '../lib/data.js';
import { useLocation, match } from '../lib/router.js';
import { ConfirmHost, ToastHost, Banner } from '../lib/ui.js';
import { secs, clock, date } from '../lib/format.js';
import { routes, groups } from './routes.js';
import { Search } from './search.js';
import { useMaintenance, MaintenanceToggles, MaintenanceBanners } from './maintenance.js';

function Health() {
  const st = useLoader(() => api('/health'), [], 30000);
  // The broker answers "healthy"; queen-proxy, in front of it, answers its own "ok".
  const healthy = st.data && (st.data.status === 'healthy' || st.data.status === 'ok') && !st.error;
  const cls = st.loading && !st.data ? '' : healthy ? 'ok' : 'bad';
  const text = st.error ? `unhealthy: ${st.error.message}`
    : st.data ? `${st.data.status}${st.data.database ? `, database ${st.data.database}` : ''}` : 'checking';
  return html`<span class=${'dot ' + cls} title=${text} data-testid="health-dot" data-status=${healthy ? 'healthy' : 'unhealthy'}></span>`;
}

function Who({ session, onSignOut }) {
  if (behindProxy && session.user) {
    const logout = async () => {
      try { await api('/api/logout', { method: 'POST', quiet401: true }); } catch { /* gone either way */ }
      location.assign('/login');
    };
    return html`<div class="who" data-testid="who"><span data-testid="who-user">${session.user}</span>
      <button class="btn sm ghost" onClick=${logout} data-testid="logout">Log out</button></div>`;
  }
  if (authMode !== 'jwt' || behindProxy) return null;
  return html`<div class="who" data-testid="who"><span data-testid="who-sub">${session.sub || 'token'}</span>
    <span class="tag" data-testid="who-level">${session.level}</span><${Expiry} exp=${session.exp} />
    <button class="btn sm ghost" onClick=${onSignOut} data-testid="sign-out">Sign out</button></div>`;
}

/**
 * Expiry shows when the token expires (decoded, for display only): the local time within
 * a day, else the date; the full date as its tooltip.
 */
function Expiry({ exp }) {
  if (!exp) return null;
  const at = exp * 1000;
  const left = at - Date.now();
  const when = Math.abs(left) < 86400000 ? clock(at) : date(at).slice(0, 16);
  return html`<span class="dim" data-testid="who-exp" title=${date(at)}>${left > 0 ? 'expires' : 'expired'} ${when}</span>`;
}

function Sidebar({ session, onSignOut, active }) {
  return html`<nav class="sidebar" data-testid="sidebar">
    <a class="brand" href="/"><span class="logo">♛</span> Queen</a>
    ${groups.map((g) => html`<div class="nav-group"><div class="nav-h">${g}</div>
      ${routes.filter((r) => r.group === g).map((r) => html`<a href=${r.path} data-testid=${'nav-' + r.id}
        class=${'nav' + (active === r.id || (active === 'queue' && r.id === 'queues') ? ' on' : '')}>${r.title}</a>`)}</div>`)}
    <div class="side-foot"><${Who} session=${session} onSignOut=${onSignOut} />
      <div class="ver"><${Health} /> <span data-testid="version">${version || 'dev'}</span></div></div>
  </nav>`;
}

function ExpiryWarning({ session }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => { const t = setInterval(() => setNow(Date.now()), 30000); return () => clearInterval(t); }, []);
  if (!session.exp) return null;
  const left = session.exp - now / 1000;
  if (left > 600) return null;
  return html`<${Banner} kind=${left <= 0 ? 'bad' : 'warn'} testid="banner-token-expiry">${left <= 0
    ? 'The token has expired: calls will be refused. Sign out and paste a new one.'
    : `The token expires in ${secs(left)}.`}</${Banner}>`;
}

export function Layout({ session, onSignOut }) {
  const loc = useLocation();
  const m = match(routes, loc.path);
  const [searching, setSearching] = useState(false);
  const maint = useMaintenance(session.level);
  const route = m ? m.route : null;
  const params = m ? m.params : {};
  const title = route ? (route.id === 'queue' ? params.queueName : route.title) : 'Not found';
  // Set with the render, not after the next frame: a page on screen has its title.
  useLayoutEffect(() => { document.title = `${title} | Queen Dashboard`; }, [title]);
  useEffect(() => {
    const onKey = (e) => {
      if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'k') { e.preventDefault(); setSearching(true); }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
  const Page = route ? route.page : null;
  const parent = route && route.parent ? routes.find((r) => r.id === route.parent) : null;
  return html`<div class="layout">
    <${Sidebar} session=${session} onSignOut=${onSignOut} active=${route && route.id} />
    <div class="main">
      <header class="topbar" data-testid="topbar">
        <div class="crumbs" data-testid="breadcrumb"><a href="/">Queen</a>
          ${parent && html` › <a href=${parent.path}>${parent.title}</a>`} › <span>${title}</span></div>
        <button class="btn search-btn" onClick=${() => setSearching(true)} data-testid="search-open">Search <kbd>Ctrl K</kbd></button>
        <button class="btn" onClick=${() => { refreshAll(); }} data-testid="refresh">Refresh</button>
        ${can(session.level, 'admin') && html`<${MaintenanceToggles} state=${maint} />`}
      </header>
      <${ExpiryWarning} session=${session} />
      <${MaintenanceBanners} state=${maint} />
      <main class="page" data-testid=${'page-' + (route ? route.id : 'not-found')}>
        ${Page ? html`<${Page} key=${loc.path} params=${params} query=${loc.query} />`
          : html`<div class="empty" data-testid="not-found">No page at ${loc.path}. <a href="/">Go to the dashboard</a>.</div>`}
      </main>
    </div>
    ${searching && html`<${Search} onClose=${() => setSearching(false)} />`}
    <${ConfirmHost} /><${ToastHost} />
  </div>`;
}
