// Package dashboard serves the operator dashboard: a single-page app of plain ES modules
// embedded in the binary from dist/ (committed, so a fresh clone builds it without Node or
// network), or read from a directory given at startup instead.
//
// # What the handler claims
//
// Only GET and HEAD requests, and only these paths; everything else goes to the next
// handler unchanged (the router's JSON 404 or 405), so the handler is meant to sit where
// the router answers "no route":
//
//	/ and /index.html          the app's index.html, rendered from its template
//	/assets/<hash>/<file>      a file of the app; <hash> names this build of the files
//	/favicon.ico               the app's icon, so browsers see no 404
//	any other path             index.html (a client route, for deep links and reloads)
//
// never claimed, whatever the method:
//
//	/api, /api/…, /streams…, /internal…, /ws…, /health…, /metrics…
//	a path with a ".." segment or an unknown /assets/… path
//	a path whose last segment has a dot (/app.js, /config.yaml, /.env), a missing file,
//	  except under /queues/, where the last segment is a queue name and may hold anything
//	  (no other route of the app has a name in its path: consumer groups, messages and
//	  traces take theirs in the query string)
//
// # Content-addressed URLs without a bundler
//
// At startup the handler hashes every file of the app but index.html (SHA-256 over names
// and bytes) and serves the whole tree under /assets/<first 12 hex digits>/. index.html
// points there, and modules import each other by relative URLs, so they resolve inside the
// same hashed directory. Any change to any file changes every URL at once. Files under
// /assets/ are cached for a year as immutable; index.html is sent with no-cache and a
// strong ETag, so a browser revalidates it on every load and picks up a new hash.
//
// # index.html as a template
//
// index.html carries placeholders the handler fills once at startup: {{assets}} (the
// hashed prefix), {{auth}} ("none" or "jwt"), {{version}}, and per request {{proxy}}
// ("1" when the request carries X-Proxy-User, a hint for the UI that an authenticating
// proxy sits in front; it is trusted for nothing).
//
// # Headers
//
// Every response of the handler carries the Content-Security-Policy
// "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'",
// X-Content-Type-Options nosniff and Referrer-Policy no-referrer. Text files are gzipped
// once at startup and sent compressed when Accept-Encoding allows it (Vary:
// Accept-Encoding); each representation has its own strong ETag, and If-None-Match
// answers 304.
//
// Static routes are public: the handler never reads a token.
package dashboard
