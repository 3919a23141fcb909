// Package authcache keeps the API keys this replica has looked up, and the misses,
// for a TTL. Changes announced on the auth channel evict at once ("key:<id>" the
// key, "tenant:<id>" every key of the tenant); when the listener's connection is
// lost, and again when it is back, every entry is marked expired, as notifications
// may have been missed, so the TTL bounds what is served stale. While the proxy
// database is unreachable, expired entries keep answering: keys that worked keep
// working through an outage.
package authcache
