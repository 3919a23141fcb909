// Severity thresholds shared by every page: each returns 'ok', 'warn' or 'bad' ('' when
// the value is missing), used as a CSS class.

const has = (v) => v !== null && v !== undefined && Number.isFinite(Number(v));

/** timeLag in seconds: < 60 ok, < 300 warn, else bad. */
export const timeLag = (s) => (!has(s) ? '' : s < 60 ? 'ok' : s < 300 ? 'warn' : 'bad');

/** pending messages: < 1 000 ok, < 10 000 warn, else bad. */
export const pending = (n) => (!has(n) ? '' : n < 1000 ? 'ok' : n < 10000 ? 'warn' : 'bad');

/** pendingDelta, the growth of the backlog over the range: > 1 000 warn, > 100 000 bad. */
export const pendingDelta = (n) => (!has(n) ? '' : n > 100000 ? 'bad' : n > 1000 ? 'warn' : 'ok');

/** eventLoop (the scheduler delay) in ms: < 50 ok, < 100 warn, else bad. */
export const eventLoop = (v) => (!has(v) ? '' : v < 50 ? 'ok' : v < 100 ? 'warn' : 'bad');

/** pool use active/size: > 0.8 warn, all connections busy bad. */
export function pool(active, size) {
  if (!has(active) || !has(size) || size <= 0) return '';
  const r = active / size;
  return r >= 1 ? 'bad' : r > 0.8 ? 'warn' : 'ok';
}

/** fill ratio of pops (0…1): below 30 % of pops returning messages warns. */
export const fill = (r) => (!has(r) ? '' : r < 0.3 ? 'warn' : 'ok');

/** errors: any is bad. */
export const errors = (n) => (!has(n) ? '' : n > 0 ? 'bad' : 'ok');

/**
 * queueHealth rates a queue row: bad if pops keep up with less than 65 % of pushes or the
 * lag reaches 60 s, warn below 85 % or from 10 s, idle when both rates are under 5/s and
 * nothing is pending.
 */
export function queueHealth({ pushRate, popRate, lagMs, pendingCount }) {
  const ratio = pushRate > 0 ? popRate / pushRate : 1;
  const lag = (lagMs || 0) / 1000;
  if (pushRate < 5 && popRate < 5 && !pendingCount) return 'idle';
  if (ratio < 0.65 || lag >= 60) return 'bad';
  if (ratio < 0.85 || lag >= 10) return 'warn';
  return 'ok';
}

export const rank = { bad: 3, warn: 2, ok: 1, idle: 0, '': 0 };
