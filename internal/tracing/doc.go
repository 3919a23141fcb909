// Package tracing carries the W3C trace context of a push to the messages it stores
// and, when OTLP export is on, records the broker's spans for push, pop, ack and
// transactions and exports them over OTLP, HTTP or gRPC (docs/tracing.md).
//
// Off (the default), a *Tracer is nil: starting a span is a nil check, and a [Span]
// is an empty value whose methods do nothing, so the request paths allocate nothing
// more than without tracing. The trace context a producer sent is stored with its
// messages either way: it is data the consumer needs, not telemetry of the broker.
package tracing
