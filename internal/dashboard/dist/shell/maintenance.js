// Maintenance flags and the spool: admins poll GET /api/v1/system/maintenance (it is
// admin-only); everyone polls the read-only GET /api/v1/status/buffers for this broker's
// spool. Both feed the banners; admins also get the Push and Pop toggles.
import { html } from '../lib/html.js';
import { api } from '../lib/api.js';
import { can } from '../lib/auth.js';
import { useLoader, settle } from '../lib/data.js';
import { Banner, Action } from '../lib/ui.js';
import { num, bytes, secs } from '../lib/format.js';

export function useMaintenance(level) {
  const admin = can(level, 'admin');
  return useLoader(() => settle({
    maint: () => (admin ? api('/api/v1/system/maintenance') : Promise.resolve(null)),
    buffers: () => api('/api/v1/status/buffers'),
  }), [admin], 30000);
}

export function MaintenanceToggles({ state }) {
  const m = state.data && state.data.maint;
  if (!m) return null;
  const toggle = (which, on) => ({
    need: 'admin',
    ask: {
      title: `${on ? 'Turn off' : 'Turn on'} ${which} maintenance?`,
      text: which === 'push'
        ? (on ? 'Pushes go to the database again; each broker replays its spool.'
          : 'Every push goes to the answering broker\'s disk spool until this is turned off.')
        : (on ? 'Pops deliver messages again.' : 'Every pop answers 204 at once, long-polls included.'),
      confirmLabel: on ? 'Turn off' : 'Turn on', danger: !on,
    },
    run: async () => {
      await api(which === 'push' ? '/api/v1/system/maintenance' : '/api/v1/system/maintenance/pop',
        { method: 'POST', body: { enabled: !on } });
      await state.reload(true);
    },
  });
  const push = !!m.maintenanceMode;
  const pop = !!m.popMaintenanceMode;
  return html`<div class="toggles">
    <${Action} ...${toggle('push', push)} cls=${push ? 'warn on' : ''} small testid="toggle-push-maintenance">Push ${push ? 'off' : 'on'}… </${Action}>
    <${Action} ...${toggle('pop', pop)} cls=${pop ? 'warn on' : ''} small testid="toggle-pop-maintenance">Pop ${pop ? 'off' : 'on'}…</${Action}>
  </div>`;
}

export function MaintenanceBanners({ state }) {
  const d = state.data || {};
  const m = d.maint;
  const b = d.buffers;
  const out = [];
  if (m && m.maintenanceMode) {
    out.push(html`<${Banner} kind="warn" testid="banner-push-maintenance">Push maintenance is on: pushes are
      written to the brokers' disk spools (${num(m.bufferedMessages)} buffered here).</${Banner}>`);
  }
  if (m && m.popMaintenanceMode) {
    out.push(html`<${Banner} kind="warn" testid="banner-pop-maintenance">Pop maintenance is on: every pop answers empty.</${Banner}>`);
  }
  const failed = m && m.bufferStats ? m.bufferStats.failedCount : b && b.failed;
  if (failed > 0) {
    const mb = m && m.bufferStats && m.bufferStats.failedFiles ? m.bufferStats.failedFiles.totalMB : null;
    out.push(html`<${Banner} kind="bad" testid="banner-buffer-failed">${num(failed)} spool records failed to replay and
      are quarantined${mb !== null ? ` (${num(mb, 2)} MB)` : ''}.</${Banner}>`);
  }
  const pending = b ? b.pending : m ? m.bufferedMessages : 0;
  if (b && b.dbHealthy === false) {
    out.push(html`<${Banner} kind=${b.healthy === false ? 'bad' : 'warn'} testid="banner-outage">PostgreSQL unreachable from
      this broker: ${num(pending)} pushes${b.pendingBytes !== undefined ? `, ${bytes(b.pendingBytes)}` : ''} spooled${b.oldestPendingAgeSeconds ? `, oldest ${secs(b.oldestPendingAgeSeconds)}` : ''}.
      ${b.healthy === false ? html` <b>Spool writes are failing${b.lastError ? `: ${b.lastError}` : ''}.</b>` : ''}</${Banner}>`);
  } else if (b && b.healthy === false) {
    out.push(html`<${Banner} kind="bad" testid="banner-spool-failing">Spool writes are failing${b.lastError ? `: ${b.lastError}` : ''}.</${Banner}>`);
  } else if (pending > 0 && !(m && m.maintenanceMode)) {
    out.push(html`<${Banner} kind="info" testid="banner-draining">${num(pending)} spooled pushes still draining into PostgreSQL.</${Banner}>`);
  }
  return out.length ? html`<div class="banners" data-testid="banners">${out}</div>` : null;
}
