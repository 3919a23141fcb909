// Time ranges and series: ranges go out as ISO-8601 UTC from/to computed here, series are
// sorted oldest first, and the newest bucket is dropped while it is still open.

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
 * series sorts rows by their time key, oldest first, and drops the newest bucket while it
 * is open (now < start + bucketMinutes). Each row gains t, its time in ms.
 */
export function series(rows, key, bucketMinutes) {
  if (!Array.isArray(rows)) return [];
  const out = rows.map((r) => ({ ...r, t: stamp(r[key]) })).filter((r) => r.t !== null);
  out.sort((a, b) => a.t - b.t);
  const width = (Number(bucketMinutes) || 1) * 60000;
  while (out.length && Date.now() < out[out.length - 1].t + width) {
    const last = out[out.length - 1].t;
    while (out.length && out[out.length - 1].t === last) out.pop();
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

/** toLocalInput formats a Date for <input type="datetime-local">. */
export function toLocalInput(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}
