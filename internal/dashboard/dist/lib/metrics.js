// Metric rows: a label, the current value coloured by severity, a sparkline, and a full
// chart that opens on click. Used by the Dashboard and Queue detail pages.
import { html, useState } from './html.js';
import { Chart, Spark } from './chart.js';
import { compact } from './format.js';

/**
 * MetricRows renders rows [{ id, label, now, sev, href, series: [{ label, points, kind }],
 * fmt }]; the sparkline follows the first series.
 */
export function MetricRows({ rows, testid = 'metric-rows' }) {
  const [open, setOpen] = useState(null);
  return html`<div class="metric-rows" data-testid=${testid}>${rows.map((r) => {
    const first = r.series && r.series[0];
    const isOpen = open === r.id;
    // A click on the value's link navigates (the router sees it): it does not toggle.
    const toggle = (e) => { if (!e.target.closest('a')) setOpen(isOpen ? null : r.id); };
    return html`<div class=${'metric-row' + (isOpen ? ' open' : '')} data-testid=${'metric-' + r.id}>
      <div class="metric-line" onClick=${toggle}>
        <span class="metric-l">${r.label}</span>
        <span class=${'metric-now ' + (r.sev || '')} data-testid="metric-now">${r.href
          ? html`<a href=${r.href}>${r.now}</a>` : r.now}</span>
        <${Spark} values=${first ? first.points.map((p) => p.v) : []} sev=${r.sev} />
        <span class="metric-x">${isOpen ? '▾' : '▸'}</span>
      </div>
      ${isOpen && html`<${Chart} series=${r.series} fmt=${r.fmt || compact} testid=${'chart-' + r.id} />`}
    </div>`;
  })}</div>`;
}
