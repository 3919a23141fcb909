package tracing

import (
	"context"
	"fmt"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Op is a traced broker operation.
type Op int

// The traced operations.
const (
	OpPush Op = iota
	OpPop
	OpAck
	OpTransaction
)

// name is the operation's messaging.operation.name and the first word of its span name.
func (o Op) name() string {
	return [...]string{OpPush: "push", OpPop: "pop", OpAck: "ack", OpTransaction: "transaction"}[o]
}

// kind is the operation's messaging.operation.type ("" for a transaction, which both
// settles and sends).
func (o Op) kind() string {
	return [...]string{OpPush: "send", OpPop: "receive", OpAck: "settle", OpTransaction: ""}[o]
}

// Attribute keys of the OpenTelemetry semantic conventions for messaging.
const (
	keySystem        = attribute.Key("messaging.system")
	keyOperation     = attribute.Key("messaging.operation.name")
	keyOperationType = attribute.Key("messaging.operation.type")
	keyDestination   = attribute.Key("messaging.destination.name")
	keyPartition     = attribute.Key("messaging.destination.partition.id")
	keyGroup         = attribute.Key("messaging.consumer.group.name")
	keyCount         = attribute.Key("messaging.batch.message_count")
	keyStatus        = attribute.Key("http.response.status_code")
)

// maxLinks bounds the links a pop span gets to the traces of the messages it delivered.
const maxLinks = 128

// Tracer records the broker's spans; nil means tracing is off.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	prop     propagation.TraceContext
}

// Shutdown exports the spans still buffered and stops the exporter; ctx bounds it.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	if err := t.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: shutdown: %w", err)
	}
	return nil
}

// spanKey is the context key of the request's Span.
type spanKey struct{}

// Start begins op's span for r, a child of the trace context r carries, and returns r
// with the span in its context (see SpanFrom). With t nil it returns r and an empty Span.
func (t *Tracer) Start(r *http.Request, op Op) (*http.Request, Span) {
	if t == nil {
		return r, Span{}
	}
	ctx := t.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	attrs := []attribute.KeyValue{keySystem.String("queen"), keyOperation.String(op.name())}
	if k := op.kind(); k != "" {
		attrs = append(attrs, keyOperationType.String(k))
	}
	ctx, s := t.tracer.Start(ctx, op.name(), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	sp := Span{s: s, op: op}
	return r.WithContext(context.WithValue(ctx, spanKey{}, sp)), sp
}

// SpanFrom returns the span Start put in ctx, or an empty Span.
func SpanFrom(ctx context.Context) Span {
	sp, _ := ctx.Value(spanKey{}).(Span)
	return sp
}

// Span is one operation's span. The zero Span (tracing off, or a request not traced)
// does nothing.
type Span struct {
	s  trace.Span
	op Op
}

// Recording reports whether the span is sampled and will be exported.
func (sp Span) Recording() bool { return sp.s != nil && sp.s.IsRecording() }

// SetDestination names the queue (and partition, "" for any) the operation touched;
// the span is renamed "<op> <queue>".
func (sp Span) SetDestination(queue, partition string) {
	if !sp.Recording() || queue == "" {
		return
	}
	sp.s.SetName(sp.op.name() + " " + queue)
	sp.s.SetAttributes(keyDestination.String(queue))
	if partition != "" {
		sp.s.SetAttributes(keyPartition.String(partition))
	}
}

// SetGroup names the consumer group ("" or the queue-mode group are not recorded).
func (sp Span) SetGroup(group string) {
	if !sp.Recording() || group == "" || group == "__QUEUE_MODE__" {
		return
	}
	sp.s.SetAttributes(keyGroup.String(group))
}

// SetCount records how many messages the operation carried.
func (sp Span) SetCount(n int) {
	if sp.Recording() {
		sp.s.SetAttributes(keyCount.Int(n))
	}
}

// Link links the span to the trace context a delivered message was pushed under (a
// pop delivers messages of many traces); past maxLinks links nothing is added.
func (sp Span) Link(traceparent, tracestate string, linked *int) {
	if !sp.Recording() || traceparent == "" || *linked >= maxLinks {
		return
	}
	carrier := propagation.MapCarrier{"traceparent": traceparent}
	if tracestate != "" {
		carrier["tracestate"] = tracestate
	}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
	if !sc.IsValid() {
		return
	}
	sp.s.AddLink(trace.Link{SpanContext: sc})
	*linked++
}

// Finish ends the span with the answer's HTTP status: 5xx marks it failed, with
// reason (a message safe for a client) as the description.
func (sp Span) Finish(status int, reason string) {
	if sp.s == nil {
		return
	}
	if sp.s.IsRecording() {
		sp.s.SetAttributes(keyStatus.Int(status))
		if status >= 500 {
			sp.s.SetStatus(codes.Error, reason)
		}
	}
	sp.s.End()
}

// Stored returns the trace context a push stores with its messages: the span's own
// when it is recorded (the consumer's work becomes a child of the broker's push), else
// the request's own (Incoming), so a consumer continues the producer's trace even when
// the broker does not export it.
func (sp Span) Stored(h http.Header) (traceparent, tracestate string) {
	if !sp.Recording() {
		return Incoming(h)
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpan(context.Background(), sp.s), carrier)
	traceparent, tracestate = carrier["traceparent"], carrier["tracestate"]
	if len(tracestate) > MaxTracestateBytes {
		tracestate = ""
	}
	return traceparent, tracestate
}
