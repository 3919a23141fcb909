// Package client is a Go client for the Queen HTTP API v1. It speaks the wire the way
// the upstream Go client does, so that it can drive both our broker and an upstream
// one, and so that tests written with it observe what real clients send:
//
//   - Every request carries Content-Type: application/json (even GET and DELETE, which
//     never have a body) and Accept: application/json, plus Authorization: Bearer <token>
//     when a token is configured and any extra headers.
//   - Path segments are escaped with url.PathEscape; pops use the wildcard route when the
//     partition is unset or "Default", and always send batch, wait and timeout.
//   - Routes that answer a top-level array (push, ack, ack/batch, lease extend) are decoded
//     as arrays; an empty body decodes to the zero value.
//   - Any status >= 400 is an [*Error]. Upstream answers many failures with 200 and an
//     {"error":...} body; typed methods whose success shape cannot carry an
//     error (configure, push, ack, resources) turn such a body into an [*Error] too, while
//     pop and transaction report it in their result as upstream clients do.
//
// Retries are off by default (see [WithRetries]): the client exists first for tests,
// which must see the broker's raw answer to every request. Production callers opt in.
package client
