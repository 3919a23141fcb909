package httpapi

import (
	"net/http"

	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/tracing"
)

// traced runs h inside op's span when tracing is on (Options.Tracer): the span is a
// child of the request's traceparent and ends with the answer's status. Off, h runs
// as it is.
func (s *Server) traced(op tracing.Op, h handlerFunc) handlerFunc {
	if s.opts.Tracer == nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		r, sp := s.opts.Tracer.Start(r, op)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		err := h(sw, r)
		if err != nil {
			status, body := classify(err)
			sp.Finish(status, body.Error)
			return err
		}
		sp.Finish(sw.status, "")
		return nil
	}
}

// statusWriter remembers the status a traced handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the status and writes it.
func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// span is the request's span: the empty Span when tracing is off (no context lookup).
func (s *Server) span(r *http.Request) tracing.Span {
	if s.opts.Tracer == nil {
		return tracing.Span{}
	}
	return tracing.SpanFrom(r.Context())
}

// pushTraceContext stamps items with the trace context they are stored under (see
// tracing.Span.Stored) and names the push's destination on its span.
func (s *Server) pushTraceContext(r *http.Request, items []queue.PushItem) {
	sp := s.span(r)
	if sp.Recording() {
		queueName, partition := commonDestination(items)
		sp.SetDestination(queueName, partition)
		sp.SetCount(len(items))
	}
	parent, state := sp.Stored(r.Header)
	if parent == "" {
		return
	}
	for i := range items {
		items[i].Traceparent, items[i].Tracestate = parent, state
	}
}

// commonDestination is the queue (and partition) every item names, "" where they differ.
func commonDestination(items []queue.PushItem) (queueName, partition string) {
	if len(items) == 0 {
		return "", ""
	}
	queueName, partition = items[0].Queue, items[0].Partition
	for _, it := range items[1:] {
		if it.Queue != queueName {
			return "", ""
		}
		if it.Partition != partition {
			partition = ""
		}
	}
	return queueName, partition
}

// tracePop describes a pop's answer on its span: destination, group, count, and a link
// to the trace each delivered message was pushed under.
func (s *Server) tracePop(r *http.Request, req queue.PopRequest, res queue.PopResult) {
	sp := s.span(r)
	if !sp.Recording() {
		return
	}
	sp.SetDestination(res.Queue, req.Partition)
	sp.SetGroup(res.ConsumerGroup)
	sp.SetCount(len(res.Messages))
	linked := 0
	for i := range res.Messages {
		sp.Link(res.Messages[i].Traceparent, res.Messages[i].Tracestate, &linked)
	}
}

// traceAck describes an ack on its span: the group and how many acknowledgments.
func (s *Server) traceAck(r *http.Request, group string, n int) {
	sp := s.span(r)
	if !sp.Recording() {
		return
	}
	sp.SetGroup(group)
	sp.SetCount(n)
}

// txTraceContext stamps the push items of a transaction with the trace context they
// are stored under, and counts the operations on its span (and names the queue its
// pushes go to, when they all go to one).
func (s *Server) txTraceContext(r *http.Request, ops []queue.TxOp) {
	sp := s.span(r)
	if sp.Recording() {
		sp.SetCount(len(ops))
		var pushed []queue.PushItem
		for i := range ops {
			pushed = append(pushed, ops[i].Push...)
		}
		sp.SetDestination(commonDestination(pushed))
	}
	parent, state := sp.Stored(r.Header)
	if parent == "" {
		return
	}
	for i := range ops {
		for j := range ops[i].Push {
			ops[i].Push[j].Traceparent, ops[i].Push[j].Tracestate = parent, state
		}
	}
}
