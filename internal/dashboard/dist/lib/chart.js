// Charts drawn as SVG by this module (no chart library): time-series lines and bars with
// gaps for missing values (a point alone between gaps is a dot), a hover read-out and a
// legend; sparklines; horizontal bars; a doughnut. Colours come from the series' class
// (s0…s7, or ok/warn/bad) in app.css.
import { html, useState, useRef, useEffect } from './html.js';
import { compact, clock, date } from './format.js';

const PAD = { l: 52, r: 10, t: 10, b: 22 };

function useWidth(initial = 600) {
  const ref = useRef(null);
  const [w, setW] = useState(initial);
  useEffect(() => {
    if (!ref.current || typeof ResizeObserver === 'undefined') return undefined;
    const ro = new ResizeObserver((es) => {
      const cw = Math.floor(es[0].contentRect.width);
      if (cw > 0) setW(cw);
    });
    ro.observe(ref.current);
    return () => ro.disconnect();
  }, []);
  return [ref, w];
}

const finite = (v) => v !== null && v !== undefined && Number.isFinite(Number(v));

function niceMax(v) {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  const m = v / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/**
 * Chart draws series [{ label, points: [{ t, v }], kind: 'line'|'bar', cls }] over time.
 * Bars of several series stack. fmt formats values on the axis and the read-out.
 */
export function Chart({ series, height = 170, fmt = compact, testid = 'chart', empty = 'No data in this range.' }) {
  const [ref, width] = useWidth();
  const [hover, setHover] = useState(null);
  const all = (series || []).filter((s) => s && s.points && s.points.length);
  const ts = [...new Set(all.flatMap((s) => s.points.map((p) => p.t)))].sort((a, b) => a - b);
  if (!ts.length) {
    return html`<div class="chart" ref=${ref} data-testid=${testid}><div class="chart-empty" data-testid="chart-empty">${empty}</div></div>`;
  }
  const bars = all.filter((s) => s.kind === 'bar');
  const lines = all.filter((s) => s.kind !== 'bar');
  const stackTop = new Map();
  for (const s of bars) for (const p of s.points) if (finite(p.v)) stackTop.set(p.t, (stackTop.get(p.t) || 0) + Number(p.v));
  let hi = Math.max(0, ...stackTop.values(), ...lines.flatMap((s) => s.points.filter((p) => finite(p.v)).map((p) => Number(p.v))));
  let lo = Math.min(0, ...lines.flatMap((s) => s.points.filter((p) => finite(p.v)).map((p) => Number(p.v))));
  hi = niceMax(hi);
  if (lo < 0) lo = -niceMax(-lo);
  const t0 = ts[0];
  const t1 = ts.length > 1 ? ts[ts.length - 1] : t0 + 60000;
  // Axis labels carry seconds when the chart spans under ten minutes.
  const pw = Math.max(10, width - PAD.l - PAD.r);
  const ph = height - PAD.t - PAD.b;
  // Bars are centred on their bucket, so with bars the time axis is inset by half a bar
  // on each side: the first and last bars stay inside the plot, off the axis labels.
  // bw is 0.7 of the inset slot: 0.7 * (pw - bw) / gaps, solved for bw.
  const gaps = Math.max(1, ts.length - 1);
  const bw = Math.max(1, Math.min(24, (0.7 * pw) / (gaps + 0.7)));
  const inset = bars.length ? bw / 2 : 0;
  const x = (t) => PAD.l + inset + ((t - t0) / (t1 - t0 || 1)) * (pw - 2 * inset);
  const y = (v) => PAD.t + ph - ((v - lo) / (hi - lo || 1)) * ph;

  const linePath = (pts) => {
    let d = '';
    let pen = false;
    for (const p of pts) {
      if (!finite(p.v)) { pen = false; continue; }
      d += `${pen ? 'L' : 'M'}${x(p.t).toFixed(1)},${y(Number(p.v)).toFixed(1)}`;
      pen = true;
    }
    return d;
  };
  // A point between two gaps draws no line: it gets a dot.
  const alone = (pts) => pts.filter((p, i) => finite(p.v) && !(i > 0 && finite(pts[i - 1].v))
    && !(i < pts.length - 1 && finite(pts[i + 1].v)));
  const base = new Map();
  const rects = [];
  bars.forEach((s, si) => {
    for (const p of s.points) {
      if (!finite(p.v) || Number(p.v) === 0) continue;
      const b = base.get(p.t) || 0;
      const v = Number(p.v);
      base.set(p.t, b + v);
      rects.push(html`<rect class=${'bar ' + (s.cls || 's' + si)} x=${x(p.t) - bw / 2} width=${bw}
        y=${y(b + v)} height=${Math.max(0.5, y(b) - y(b + v))} />`);
    }
  });
  const ticks = [lo, (lo + hi) / 2, hi];
  const xt = ts.length > 2 ? [ts[0], ts[Math.floor(ts.length / 2)], ts[ts.length - 1]] : ts;
  const move = (e) => {
    const box = e.currentTarget.getBoundingClientRect();
    const px = e.clientX - box.left;
    let best = ts[0];
    for (const t of ts) if (Math.abs(x(t) - px) < Math.abs(x(best) - px)) best = t;
    setHover(best);
  };
  const at = (s, t) => { const p = s.points.find((q) => q.t === t); return p ? p.v : null; };
  const last = (s) => { for (let i = s.points.length - 1; i >= 0; i--) if (finite(s.points[i].v)) return s.points[i].v; return null; };

  return html`<div class="chart" ref=${ref} data-testid=${testid}>
    <svg width=${width} height=${height} onMouseMove=${move} onMouseLeave=${() => setHover(null)}>
      ${ticks.map((v) => html`<g><line class="grid" x1=${PAD.l} x2=${PAD.l + pw} y1=${y(v)} y2=${y(v)} />
        <text class="axis" x=${PAD.l - 6} y=${y(v) + 4} text-anchor="end">${fmt(v)}</text></g>`)}
      ${xt.map((t, i) => html`<text class="axis" x=${x(t)} y=${height - 6}
        text-anchor=${xt.length > 1 && i === xt.length - 1 ? 'end' : 'middle'}>${clock(t, t1 - t0 < 600000)}</text>`)}
      ${rects}
      ${lines.map((s, i) => html`<path class=${'line ' + (s.cls || 's' + (i + bars.length))} d=${linePath(s.points)} />`)}
      ${lines.map((s, i) => alone(s.points).map((p) => html`<circle class=${'line dot ' + (s.cls || 's' + (i + bars.length))}
        cx=${x(p.t)} cy=${y(Number(p.v))} r="2.5" />`))}
      ${hover !== null && html`<line class="cursor" x1=${x(hover)} x2=${x(hover)} y1=${PAD.t} y2=${PAD.t + ph} />`}
    </svg>
    ${hover !== null && html`<div class="readout" data-testid="chart-readout"><b>${date(hover)}</b>
      ${all.map((s) => html`<div><i class=${'sw ' + (s.cls || '')}></i>${s.label}: ${fmt(at(s, hover))}</div>`)}</div>`}
    <div class="legend">${all.map((s, i) => html`<span class="lg" data-testid="legend-item" title=${s.label}><i class=${'sw ' + (s.cls || 's' + (s.kind === 'bar' ? bars.indexOf(s) : i))}></i>${s.label} <b>${fmt(last(s))}</b></span>`)}</div>
  </div>`;
}

/** points maps an oldest-first series of rows to chart points of one key. */
export const points = (rows, key, scale = 1) => (rows || []).map((r) => ({
  t: r.t, v: finite(r[key]) ? Number(r[key]) * scale : null,
}));

/** Spark is a small line of values (nulls are gaps), coloured by severity. */
export function Spark({ values, sev = '' }) {
  const vs = (values || []).map((v) => (finite(v) ? Number(v) : null));
  const nums = vs.filter((v) => v !== null);
  if (nums.length < 2) return html`<svg class="spark" viewBox="0 0 100 24" preserveAspectRatio="none"></svg>`;
  const hi = Math.max(...nums); const lo = Math.min(...nums, 0);
  let d = ''; let pen = false;
  vs.forEach((v, i) => {
    if (v === null) { pen = false; return; }
    const px = (i / (vs.length - 1)) * 100;
    const py = 22 - ((v - lo) / (hi - lo || 1)) * 20;
    d += `${pen ? 'L' : 'M'}${px.toFixed(1)},${py.toFixed(1)}`;
    pen = true;
  });
  return html`<svg class=${'spark ' + sev} viewBox="0 0 100 24" preserveAspectRatio="none"><path d=${d} vector-effect="non-scaling-stroke" /></svg>`;
}

/** HBars lists labelled values as horizontal bars scaled to the largest. */
export function HBars({ items, fmt = compact, testid = 'hbars' }) {
  const max = Math.max(1, ...items.map((i) => Number(i.value) || 0));
  return html`<div class="hbars" data-testid=${testid}>${items.map((it, i) => html`<div class="hbar" data-testid="hbar">
    <div class="hbar-l" title=${it.label}>${it.label}</div>
    <div class="hbar-t"><div class=${'hbar-f ' + (it.cls || 's' + (i % 8))} style=${{ width: `${((Number(it.value) || 0) / max) * 100}%` }}></div></div>
    <div class="hbar-v">${fmt(it.value)}</div></div>`)}</div>`;
}

/** Stacked is one horizontal bar per row split into parts [{ value, cls, label }]. */
export function Stacked({ rows, testid = 'stacked' }) {
  const max = Math.max(1, ...rows.map((r) => r.parts.reduce((a, p) => a + (Number(p.value) || 0), 0)));
  return html`<div class="hbars" data-testid=${testid}>${rows.map((r) => html`<div class="hbar" data-testid="hbar">
    <div class="hbar-l" title=${r.label}>${r.label}</div>
    <div class="hbar-t">${r.parts.map((p) => html`<div class=${'hbar-f ' + p.cls} title=${`${p.label}: ${p.value}`}
      style=${{ width: `${((Number(p.value) || 0) / max) * 100}%` }}></div>`)}</div>
    <div class="hbar-v">${compact(r.parts.reduce((a, p) => a + (Number(p.value) || 0), 0))}</div></div>`)}</div>`;
}

/**
 * Doughnut shows shares of a whole [{ label, value, cls }] with a legend. The centre shows
 * the sum of the parts, with caption under it when given.
 */
export function Doughnut({ parts, caption = '', testid = 'doughnut' }) {
  const total = parts.reduce((a, p) => a + (Number(p.value) || 0), 0);
  const r = 15.9155; // circumference 100
  let off = 25;
  return html`<div class="doughnut" data-testid=${testid}>
    <svg viewBox="0 0 42 42" width="140" height="140"><circle class="ring" cx="21" cy="21" r=${r} />
      ${total > 0 && parts.map((p) => {
        const share = ((Number(p.value) || 0) / total) * 100;
        const el = html`<circle class=${'seg ' + p.cls} cx="21" cy="21" r=${r} stroke-dasharray=${`${share} ${100 - share}`} stroke-dashoffset=${off} />`;
        off -= share;
        return el;
      })}
      <text x="21" y=${caption ? 22 : 23} text-anchor="middle" class="ring-t" data-testid="doughnut-sum">${compact(total)}</text>
      ${caption && html`<text x="21" y="26.5" text-anchor="middle" class="ring-c" data-testid="doughnut-caption">${caption}</text>`}</svg>
    <div class="legend col">${parts.map((p) => html`<span class="lg"><i class=${'sw ' + p.cls}></i>${p.label} <b>${compact(p.value)}</b></span>`)}</div>
  </div>`;
}
