// Loading data: a hook that runs a page's loader on mount, on a timer and on the top bar's
// Refresh, keeps the last good data when a call fails (the error is shown beside it), and
// never lets a stale answer overwrite a newer one.
import { useState, useEffect, useRef, useCallback } from './html.js';

const refreshers = new Set();

/** refreshAll re-runs every mounted loader (the top bar's Refresh). */
export function refreshAll() {
  refreshers.forEach((fn) => fn(true));
}

/**
 * useLoader runs fn(signal, forced) now, whenever deps change, every interval ms (0: never)
 * while the tab is visible, and on Refresh. Returns { data, error, loading, reload }.
 */
export function useLoader(fn, deps = [], interval = 0) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const seq = useRef(0);
  const fnRef = useRef(fn);
  fnRef.current = fn;

  const run = useCallback(async (forced = false) => {
    const my = ++seq.current;
    setState((s) => ({ ...s, loading: true }));
    try {
      const data = await fnRef.current(forced);
      if (my !== seq.current) return;
      setState((s) => {
        // A settle() answer whose parts failed keeps those parts' previous values.
        if (data && data.errors && s.data) {
          for (const k of Object.keys(data.errors)) if (data[k] === null) data[k] = s.data[k];
        }
        return { data, error: firstError(data), loading: false };
      });
    } catch (error) {
      if (my === seq.current) {
        setState((s) => ({ data: s.data, error: error && error.status === -1 ? null : error, loading: false }));
      }
    }
  }, []);

  useEffect(() => {
    run(false);
    refreshers.add(run);
    let timer = 0;
    if (interval > 0) {
      timer = setInterval(() => { if (!document.hidden) run(false); }, interval);
    }
    return () => {
      seq.current++;
      refreshers.delete(run);
      if (timer) clearInterval(timer);
    };
  }, deps); // eslint-disable-line react-hooks/exhaustive-deps

  return { ...state, reload: run };
}

const cache = new Map();

/** cached shares fn's answer under key for ttl ms; forced skips the cache. */
export async function cached(key, ttl, fn, forced = false) {
  const hit = cache.get(key);
  if (!forced && hit && Date.now() - hit.at < ttl) return hit.value;
  const value = await fn();
  cache.set(key, { at: Date.now(), value });
  return value;
}

/** invalidate drops a cached answer after a change (a queue deleted). */
export function invalidate(key) {
  cache.delete(key);
}

/** settle runs named calls in parallel; a failed one yields null and its error is kept. */
export async function settle(calls) {
  const names = Object.keys(calls);
  const results = await Promise.allSettled(names.map((n) => calls[n]()));
  const out = { errors: {} };
  results.forEach((r, i) => {
    if (r.status === 'fulfilled') out[names[i]] = r.value;
    else { out[names[i]] = null; out.errors[names[i]] = r.reason; }
  });
  return out;
}

/** firstError is the first error of a settle() result, or null. */
export function firstError(res) {
  if (!res || !res.errors) return null;
  const errs = Object.values(res.errors).filter((e) => e && e.status !== -1);
  return errs[0] || null;
}
