// The API client: same-origin relative URLs, JSON in and out, the bearer token on /api
// calls, and one error type. Nothing here throws anything but ApiError, and nothing logs.
import { token, authMode } from './auth.js';

/** ApiError is a failed call: status 0 means the broker could not be reached. */
export class ApiError extends Error {
  constructor(status, message, code = '', body = null) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

const listeners = { unauthorized: [], forbidden: [] };

/** onAuthFailure registers fn(kind, err) for 401 ("unauthorized") and 403 answers. */
export function onAuthFailure(kind, fn) {
  listeners[kind].push(fn);
  return () => { listeners[kind] = listeners[kind].filter((f) => f !== fn); };
}

/** enc percent-encodes one path segment. */
export const enc = (s) => encodeURIComponent(String(s));

/** url joins a path and the defined, non-empty query values. */
export function url(path, query) {
  if (!query) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

function messageOf(body, status, statusText) {
  if (body && typeof body === 'object') {
    if (typeof body.error === 'string') return body.error;
    if (body.error && typeof body.error.message === 'string') return body.error.message;
    if (typeof body.message === 'string') return body.message;
  }
  if (typeof body === 'string' && body.trim() && body.length < 300) return body.trim();
  return `HTTP ${status}${statusText ? ' ' + statusText : ''}`;
}

/**
 * api calls the broker and resolves to the decoded body (null for an empty one).
 * opts: method, body (JSON-encoded), query, signal, quiet401 (no auth listeners).
 */
export async function api(path, opts = {}) {
  const headers = { Accept: 'application/json' };
  const tok = token();
  if (tok && authMode === 'jwt' && path.startsWith('/api/')) headers.Authorization = `Bearer ${tok}`;
  let body;
  if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  let res;
  try {
    res = await fetch(url(path, opts.query), {
      method: opts.method || 'GET', headers, body, signal: opts.signal,
      credentials: 'same-origin', cache: 'no-store',
    });
  } catch (e) {
    if (e && e.name === 'AbortError') throw new ApiError(-1, 'aborted');
    throw new ApiError(0, 'broker unreachable');
  }
  let text = '';
  try { text = await res.text(); } catch { text = ''; }
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = text; }
  }
  if (!res.ok) {
    const code = data && typeof data === 'object' && typeof data.code === 'string' ? data.code : '';
    const err = new ApiError(res.status, messageOf(data, res.status, res.statusText), code, data);
    if (!opts.quiet401) {
      if (res.status === 401) listeners.unauthorized.forEach((f) => f(err));
      if (res.status === 403) listeners.forbidden.forEach((f) => f(err));
    }
    throw err;
  }
  return data;
}

/** ok rejects a 200 answer that says success:false, as some admin routes do. */
export function ok(res) {
  if (res && typeof res === 'object' && res.success === false) {
    throw new ApiError(200, messageOf(res, 200, ''), '', res);
  }
  return res;
}

/** list reads a top-level array answer (an empty body is []). */
export const list = (v) => (Array.isArray(v) ? v : []);
