// Time ranges and series: ranges go out as ISO-8601 UTC from/to computed here, series are
// sorted oldest first, the newest bucket is dropped while it is still open, and missing
// buckets can be turned into gaps.

export const RANGES = {
  '15m': 15, '1h': 60, '6h': 360, '24h': 1440, '7d': 10080,
};

/** rangeWindow turns a range key (or {from,to} of a custom range) into ISO from/to. */
export function rangeWindow(range, custom) {
  if (range === 'custom' && custom && custom.from && custom.to) {
    return { from: new Date(custom.from).toISOString(), to: new Date(custom.to).toISOString() };
  }
  const minutes = RANGES[range] || 60;
  const to = new Date();
  const from = new Date(to.getTime() - minutes * 60000);
  return { from: from.toISOString(), to: to.toISOString() };
}

const stamp = (v) => {
  const t = new Date(v).getTime();
  return Number.isNaN(t) ? null : t;
};

/**
 * bucketMs is the bucket width of a series answer in ms: its bucketSeconds (exact, also
 * under a minute), else its bucketMinutes, else a minute.
 */
export function bucketMs(answer) {
  const a = answer || {};
  if (Number(a.bucketSeconds) > 0) return Number(a.bucketSeconds) * 1000;
  return (Number(a.bucketMinutes) || 1) * 60000;
}

/**
 * series sorts rows by their time key, oldest first, and drops the newest bucket while it
 * is open (now < start + the answer's bucket width). Each row gains t, its time in ms.
 */
export function series(rows, key, answer) {
  if (!Array.isArray(rows)) return [];
  const out = rows.map((r) => ({ ...r, t: stamp(r[key]) })).filter((r) => r.t !== null);
  out.sort((a, b) => a.t - b.t);
  const width = bucketMs(answer);
  while (out.length && Date.now() < out[out.length - 1].t + width) {
    const last = out[out.length - 1].t;
    while (out.length && out[out.length - 1].t === last) out.pop();
  }
  return out;
}

/**
 * gaps adds an empty row (t only) after every bucket that the next row does not follow
 * directly, in an oldest-first series: buckets the broker left out because no broker
 * ran then become gaps in the charts instead of lines joined across the outage.
 */
export function gaps(rows, answer) {
  const width = bucketMs(answer);
  const out = [];
  for (const r of rows) {
    const prev = out.length ? out[out.length - 1].t : null;
    if (prev !== null && r.t - prev > width) out.push({ t: prev + width });
    out.push(r);
  }
  return out;
}

/** latest is the newest non-null value of key in an oldest-first series. */
export function latest(rows, key) {
  for (let i = rows.length - 1; i >= 0; i--) {
    const v = rows[i][key];
    if (v !== null && v !== undefined && Number.isFinite(Number(v))) return Number(v);
  }
  return null;
}

/** sum adds key over rows, skipping missing values. */
export const sum = (rows, key) => rows.reduce((a, r) => a + (Number(r[key]) || 0), 0);

/** byBucket groups rows with a t by that time, summing the numeric keys given. */
export function byBucket(rows, keys) {
  const m = new Map();
  for (const r of rows) {
    let b = m.get(r.t);
    if (!b) { b = { t: r.t }; keys.forEach((k) => { b[k] = 0; }); m.set(r.t, b); }
    keys.forEach((k) => { b[k] += Number(r[k]) || 0; });
  }
  return [...m.values()].sort((a, b) => a.t - b.t);
}

/**
 * toLocalInput formats a Date for <input type="datetime-local" step="1">, to the second:
 * a range that ends "now" must not end at the start of the current minute.
 */
export function toLocalInput(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}
