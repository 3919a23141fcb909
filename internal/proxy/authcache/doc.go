// Package authcache keeps the API keys and login sessions this replica has looked
// up, and the misses, for a TTL. Changes announced on the auth channel evict at once
// ("key:<id>" the key, "tenant:<id>" every key and session of the tenant,
// "session:<id>" the session, "user:<name>" the user's sessions); when the
// listener's connection is lost, and again when it is back, every entry is marked
// expired, as notifications may have been missed, so the TTL bounds what is served
// stale. While the proxy database is unreachable, expired entries keep answering:
// keys and sessions that worked keep working through an outage (a session never
// past its own expiry).
package authcache
