// Package queue is queen's domain core: queues, partitions, messages, leases and
// acknowledgements as plain Go values, their validation rules and limits, the
// message-id generator, and the sentinel errors every other layer speaks.
//
// It imports only the standard library. Storage translates PostgreSQL errors into
// these sentinels once (store.interpretError); the HTTP layer maps them to statuses.
package queue
