// The broker replicas from their heartbeat rows (GET /api/v1/system/replicas), and this
// broker's disk spool (GET /api/v1/status/buffers).
import { html } from '../../lib/html.js';
import { api } from '../../lib/api.js';
import { useLoader } from '../../lib/data.js';
import { can } from '../../lib/auth.js';
import { Card, ErrorBox, Table, Empty, KV, useLevel } from '../../lib/ui.js';
import * as f from '../../lib/format.js';
import * as sev from '../../lib/severity.js';

export function Replicas() {
  const admin = can(useLevel(), 'admin'); // an admin route, like all of /api/v1/system/
  const st = useLoader(async () => {
    if (!admin) return { forbidden: true };
    try {
      const r = await api('/api/v1/system/replicas');
      return { replicas: Array.isArray(r) ? r : (r && r.replicas) || [] };
    } catch (err) {
      if (err.status === 404 || err.status === 405) return { unsupported: true };
      throw err;
    }
  }, [admin], 15000);
  const d = st.data || {};
  return html`<${Card} title="Replicas" testid="card-replicas"><${ErrorBox} error=${st.error} />
    ${d.forbidden ? html`<${Empty} text="Replicas are listed for admin tokens only." />`
      : d.unsupported ? html`<${Empty} text="This broker does not list replicas; the resource table below shows every broker that reported metrics." />`
      : html`<${Table} testid="table-replicas" rows=${d.replicas || []} rowKey=${(r) => r.instance} empty="No replica heartbeat."
        columns=${[
          { key: 'instance', label: 'Instance', render: (r) => html`<b>${r.instance}</b> <span class="dim">${r.version || ''}</span>` },
          { key: 'state', label: 'State', render: (r) => html`<span class=${'tag ' + (r.draining ? 'warn' : r.ready ? 'ok' : 'bad')}>${r.draining ? 'draining' : r.ready ? 'ready' : 'not ready'}</span>` },
          { key: 'seen', label: 'Last seen', render: (r) => f.age(r.lastSeenAt) },
          { key: 'up', label: 'Started', render: (r) => f.age(r.startedAt) },
          { key: 'parked', label: 'Parked pops', cls: 'num', render: (r) => f.num(r.parkedLongPolls) },
          { key: 'pool', label: 'Pool', cls: 'num', render: (r) => html`<span class=${sev.pool(r.pool && r.pool.inUse, r.pool && r.pool.max)}>${f.num(r.pool && r.pool.inUse)} / ${f.num(r.pool && r.pool.max)}</span>` },
          { key: 'spool', label: 'Spool', render: (r) => (r.spool ? html`<span class=${r.spool.healthy === false ? 'bad' : r.spool.pending > 0 ? 'warn' : ''}>${f.num(r.spool.pending)} pending${r.spool.oldestPendingAgeSeconds ? `, oldest ${f.secs(r.spool.oldestPendingAgeSeconds)}` : ''}</span>` : f.dash) },
          { key: 'jobs', label: 'Jobs', render: (r) => (r.jobs || []).map((j) => html`<span class=${'tag ' + (j.lastResult === 'ok' || j.lastResult === 'success' ? 'ok' : j.lastResult ? 'warn' : '')} title=${`${j.lastResult || ''} ${j.lastSuccessAt ? 'last success ' + f.date(j.lastSuccessAt) : ''}`}>${j.name}</span> `) },
          { key: 'systemd', label: 'systemd', render: (r) => (r.systemd ? `${r.systemd.socketActivated ? 'socket' : 'plain'}${r.systemd.watchdogSec ? `, watchdog ${r.systemd.watchdogSec}s` : ''}` : f.dash) },
        ]} />`}
  </${Card}>`;
}

export function Spool() {
  const st = useLoader(() => api('/api/v1/status/buffers'), [], 15000);
  const b = st.data || {};
  return html`<${Card} title="Disk spool (this broker)" testid="card-spool"><${ErrorBox} error=${st.error} />
    ${st.data && html`<${KV} testid="spool-fields" items=${[
      ['Database', b.dbHealthy === false ? html`<span class="bad">unreachable</span>` : html`<span class="ok">reachable</span>`],
      ['Spool writes', b.healthy === false ? html`<span class="bad">failing${b.lastError ? `: ${b.lastError}` : ''}</span>` : 'ok'],
      ['Pending records', f.num(b.pending)], ['Pending bytes', f.bytes(b.pendingBytes)], ['Oldest pending', f.secs(b.oldestPendingAgeSeconds)],
      ['Segments', f.num(b.segments)], ['Quarantined', f.num(b.failed)], ['Corrupt regions', `${f.num(b.corruptRegions)} (${f.bytes(b.corruptBytes)})`],
      ['Appended / replayed', `${f.num(b.appended)} / ${f.num(b.replayed)}`],
    ]} />`}</${Card}>`;
}
