// Package broker holds queen's use cases: push, pop (with long-polling), ack,
// lease extension, transactions and queue administration. It validates domain
// rules before any SQL, assigns message and lease ids, runs the store calls and
// wakes parked long-polls after a push commits.
//
// It knows nothing of HTTP: handlers in httpapi decode the wire format into queue
// types and call these methods. Every request is counted in the analytics service
// the broker holds (internal/analytics), which also builds the status and analytics
// reports; the broker builds none.
package broker
