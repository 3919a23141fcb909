// Live long-poll waiters: pops parked right now, by (queue, group, partition or "*"), from
// GET /api/v1/system/longpolls. A broker without the route shows the minute averages only.
import { html } from '../../lib/html.js';
import { api } from '../../lib/api.js';
import { useLoader } from '../../lib/data.js';
import { can } from '../../lib/auth.js';
import { Card, ErrorBox, Table, Empty, useLevel } from '../../lib/ui.js';
import * as f from '../../lib/format.js';

export function LongPolls({ queue, testid = 'card-longpolls' }) {
  const admin = can(useLevel(), 'admin'); // an admin route, like all of /api/v1/system/
  const st = useLoader(async () => {
    if (!admin) return { forbidden: true };
    try {
      return await api('/api/v1/system/longpolls', { query: { queue } });
    } catch (err) {
      if (err.status === 404 || err.status === 405) return { unsupported: true };
      throw err;
    }
  }, [queue, admin], 10000);
  const d = st.data || {};
  const rows = d.waiters || [];
  return html`<${Card} title="Parked long-polls (live)" testid=${testid}>
    <${ErrorBox} error=${st.error} />
    ${d.forbidden ? html`<${Empty} text="Live waiters are listed for admin tokens only; see the parked averages of Queue Operations." />`
      : d.unsupported ? html`<${Empty} text="This broker does not report live waiters; see the parked averages of Queue Operations." />`
      : html`<${Table} testid="table-longpolls" rows=${rows} empty="No pop is waiting right now."
        rowKey=${(w) => `${w.queue}|${w.consumerGroup}|${w.partition}`}
        columns=${[
          !queue && { key: 'queue', label: 'Queue', render: (w) => html`<a href=${'/queues/' + encodeURIComponent(w.queue)}>${w.queue}</a>` },
          { key: 'group', label: 'Group', render: (w) => f.group(w.consumerGroup) },
          { key: 'partition', label: 'Partition', render: (w) => (w.partition === '*' ? 'any' : w.partition) },
          { key: 'count', label: 'Waiting', cls: 'num', render: (w) => f.num(w.count) },
          { key: 'oldest', label: 'Oldest', cls: 'num', render: (w) => f.secs(w.oldestParkedSeconds) },
        ].filter(Boolean)} />`}
  </${Card}>`;
}
