// History-mode routing: the page list, path matching, and navigation without reloads.
import { useState, useEffect } from './html.js';

const subscribers = new Set();

function current() {
  return { path: location.pathname, query: new URLSearchParams(location.search) };
}

function notify() {
  const c = current();
  subscribers.forEach((fn) => fn(c));
}

window.addEventListener('popstate', notify);

/** navigate moves to a client route; replace keeps the history entry. */
export function navigate(to, replace = false) {
  if (to === location.pathname + location.search) return;
  history[replace ? 'replaceState' : 'pushState'](null, '', to);
  window.scrollTo(0, 0);
  notify();
}

/** setQuery updates the query string in place (filters belong in the URL). */
export function setQuery(values) {
  const q = new URLSearchParams(location.search);
  for (const [k, v] of Object.entries(values)) {
    if (v === undefined || v === null || v === '' || v === false) q.delete(k);
    else q.set(k, String(v));
  }
  const s = q.toString();
  history.replaceState(null, '', location.pathname + (s ? `?${s}` : ''));
  notify();
}

/** useLocation re-renders on every navigation. */
export function useLocation() {
  const [loc, setLoc] = useState(current());
  useEffect(() => {
    subscribers.add(setLoc);
    return () => subscribers.delete(setLoc);
  }, []);
  return loc;
}

/** match finds the route of path: { route, params } or null. */
export function match(routes, path) {
  const clean = path.length > 1 ? path.replace(/\/+$/, '') : path;
  for (const route of routes) {
    const names = [];
    const re = new RegExp('^' + route.path.replace(/:(\w+)/g, (_, n) => {
      names.push(n);
      return '([^/]+)';
    }) + '$');
    const m = re.exec(clean);
    if (m) {
      const params = {};
      names.forEach((n, i) => {
        try { params[n] = decodeURIComponent(m[i + 1]); } catch { params[n] = m[i + 1]; }
      });
      return { route, params };
    }
  }
  return null;
}

/** interceptLinks turns clicks on same-origin <a href="/…"> into client navigation. */
export function interceptLinks(root) {
  root.addEventListener('click', (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = e.target.closest && e.target.closest('a[href]');
    if (!a || a.target || a.hasAttribute('download')) return;
    const href = a.getAttribute('href');
    if (!href || !href.startsWith('/') || href.startsWith('//')) return;
    e.preventDefault();
    navigate(href);
  });
}
