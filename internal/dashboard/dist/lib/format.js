// Number, time and name formatting shared by every page. Missing values show as "—".

const DASH = '—';
const missing = (v) => v === null || v === undefined || (typeof v === 'number' && !Number.isFinite(v));

export function num(v, digits = 0) {
  if (missing(v)) return DASH;
  return Number(v).toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

/** compact: 1234 → 1.2k, 5600000 → 5.6M. */
export function compact(v) {
  if (missing(v)) return DASH;
  const n = Number(v);
  const a = Math.abs(n);
  if (a >= 1e9) return (n / 1e9).toFixed(1).replace(/\.0$/, '') + 'G';
  if (a >= 1e6) return (n / 1e6).toFixed(1).replace(/\.0$/, '') + 'M';
  if (a >= 1e4) return (n / 1e3).toFixed(1).replace(/\.0$/, '') + 'k';
  return num(n, a < 10 ? 2 : 1);
}

export const rate = (v) => (missing(v) ? DASH : `${compact(v)}/s`);
export const pct = (v, digits = 1) => (missing(v) ? DASH : `${Number(v).toFixed(digits)}%`);
export const ratioPct = (v) => (missing(v) ? DASH : pct(v * 100));

export function ms(v) {
  if (missing(v)) return DASH;
  if (v >= 1000) return secs(v / 1000);
  return `${num(v, v < 10 ? 1 : 0)} ms`;
}

/** secs: a duration in seconds as "4s", "3m 20s", "2h 5m", "3d 4h". */
export function secs(v) {
  if (missing(v)) return DASH;
  let s = Math.max(0, Number(v));
  if (s < 10) return `${num(s, 1)}s`;
  // Round once, then split: rounding the remainder last would print "1m 60s".
  s = Math.round(s);
  if (s < 60) return `${s}s`;
  const d = Math.floor(s / 86400); s -= d * 86400;
  const h = Math.floor(s / 3600); s -= h * 3600;
  const m = Math.floor(s / 60); s -= m * 60;
  if (d) return `${d}d ${h}h`;
  if (h) return `${h}h ${m}m`;
  return `${m}m ${s}s`;
}

export function bytes(v) {
  if (missing(v)) return DASH;
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let n = Number(v);
  let i = 0;
  while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${num(n, i ? 1 : 0)} ${units[i]}`;
}

function toDate(v) {
  if (missing(v) || v === '') return null;
  const d = v instanceof Date ? v : new Date(v);
  return Number.isNaN(d.getTime()) ? null : d;
}

const pad = (n) => String(n).padStart(2, '0');

/** date: local "2026-04-26 10:59:03". */
export function date(v) {
  const d = toDate(v);
  if (!d) return DASH;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** clock: local "10:59" for chart axes, "10:59:30" with seconds. */
export function clock(v, seconds = false) {
  const d = toDate(v);
  if (!d) return '';
  return `${pad(d.getHours())}:${pad(d.getMinutes())}${seconds ? ':' + pad(d.getSeconds()) : ''}`;
}

/** age: "3m 20s ago" from a timestamp. */
export function age(v) {
  const d = toDate(v);
  if (!d) return DASH;
  return `${secs((Date.now() - d.getTime()) / 1000)} ago`;
}

export const QUEUE_MODE = '__QUEUE_MODE__';

/** group names a consumer group for people: the queue-mode pseudo-group reads "queue mode". */
export const group = (name) => (name === QUEUE_MODE ? 'queue mode' : name || DASH);

/** splitName splits "ns.rest" for dimming the prefix; no dot → ['', name]. */
export function splitName(name) {
  const i = String(name).indexOf('.');
  return i > 0 ? [name.slice(0, i + 1), name.slice(i + 1)] : ['', String(name)];
}

export function json(v) {
  try { return JSON.stringify(v, null, 2); } catch { return String(v); }
}

export const dash = DASH;
