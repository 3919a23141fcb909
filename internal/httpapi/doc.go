// Package httpapi is queen's HTTP API v1: the chi router, the middleware (request id,
// access log, panic recovery, CORS, authentication, body size limit), the handlers of
// every route, and the single table that maps errors to HTTP
// statuses and stable error codes. Which access level each route needs is the table in
// auth_routes.go; verification itself is package auth.
//
// The wire contract is upstream Queen's HTTP API (docs/api.md lists what queen serves
// and where it differs); the response types come from package api, the use cases
// from package broker, and the status, analytics and overview reports, already in
// their wire types, from the broker's analytics service (package analytics). Handlers
// have the shape
// func(w, r) error (caddy's idea): they decode the request, call the
// broker and encode the answer, and return any error to [Server.handle], which hands it
// to writeError, the only place where an error becomes a status code and a body.
//
// Request bodies are decoded by hand from a map of raw JSON values rather than into
// structs, because the contract has exact messages for wrong types (for example
// "Queue must be a string" or "items array is required") and treats JSON null as
// "absent" everywhere. Each rejected field is named in the error body's "field".
//
// Status codes are the ones upstream's handlers intend (201 for push, 204 for an empty
// pop, 404 for an unknown queue, ...), never the upstream wire's blanket 200. Outcomes of
// acks, lease extensions and transactions are reported in the body with 200, and a push
// whose items were partly refused (a full queue) is still 201 with those items
// "failed", so a handler never turns a committed change into a 5xx that clients would
// retry.
//
// The hot routes (push, ack, pop) decode their bodies with a single-pass scanner and
// render their answers with append functions (scan*.go, encode*.go); anything the
// scanner does not handle goes to the general decoder, which owns every error message.
package httpapi
