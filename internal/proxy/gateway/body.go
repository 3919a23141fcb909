package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/queenmq/queen/internal/proxy/tenant"
)

// parsedBody is what the proxy learns from a decoded body.
type parsedBody struct {
	// messages is the number of items pushed (push, transaction pushes).
	messages int
	// payloadBytes is the raw JSON length of every pushed payload.
	payloadBytes int64
	// queues are the queue names named by a push, transaction or configure.
	queues []string
	// acks is the number of ack items (ack, ack/batch).
	acks int
	// spans says the body selects by id, or by a filter without a queue name the
	// proxy can read: it reaches any of the tenant's queues.
	spans bool
}

// requestBody is a decoded body's original bytes, forwarded unchanged.
type requestBody struct {
	raw    []byte
	parsed *parsedBody
}

// bodyLimit is the smaller of the proxy's and the tenant's body limit.
func (s *Server) bodyLimit(p *principal) int64 {
	limit := s.opts.MaxBodyBytes
	if p.tenant == nil {
		return limit
	}
	if l := p.tenant.Limits.MaxRequestBytes; l > 0 && l < limit {
		limit = l
	}
	return limit
}

func tooLarge(limit int64) error {
	return errorf(http.StatusRequestEntityTooLarge, codePayloadTooLarge,
		"request body larger than "+strconv.FormatInt(limit, 10)+" bytes")
}

// readBody enforces the body limit and decodes the bodies the proxy must read; other
// bodies stream, limited, to the broker.
func (s *Server) readBody(r *http.Request, rt *route, pr *principal) ([]byte, *parsedBody, error) {
	limit := s.bodyLimit(pr)
	if r.ContentLength > limit {
		return nil, nil, tooLarge(limit)
	}
	if rt.body == bodyStream {
		r.Body = http.MaxBytesReader(nil, r.Body, limit)
		return nil, &parsedBody{}, nil
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, nil, errorf(http.StatusBadRequest, codeInvalidArgument, "could not read the request body")
	}
	if int64(len(raw)) > limit {
		return nil, nil, tooLarge(limit)
	}
	p, err := parse(rt.body, raw)
	if err != nil {
		return nil, nil, err
	}
	if p.spans && !pr.allQueues() {
		return nil, nil, spanForbidden()
	}
	for _, q := range p.queues {
		if err := checkQueue(pr, q); err != nil {
			return nil, nil, err
		}
	}
	return raw, p, nil
}

// invalidBody is the 400 of a body the proxy cannot read. A value of the wrong type
// is named by its JSON path and JSON type, not by the Go type it did not fit.
func invalidBody(err error) error {
	msg := "invalid JSON body: " + err.Error()
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		at := "the body"
		if te.Field != "" {
			at = te.Field
		}
		msg = "invalid JSON body: " + at + " must not be " + te.Value
	}
	return errorf(http.StatusBadRequest, codeInvalidArgument, msg)
}

// parse decodes one body of a kind the proxy reads.
func parse(kind bodyKind, raw []byte) (*parsedBody, error) {
	p := &parsedBody{}
	switch kind {
	case bodyPush:
		if fast, ok := scanPush(raw); ok {
			return &fast, nil
		}
		return decodePush(raw)
	case bodyTransaction:
		return parseTransaction(raw)
	case bodyConfigure:
		return parseConfigure(raw)
	case bodyAck:
		if !json.Valid(raw) {
			return nil, invalidBody(errInvalidJSON)
		}
		p.acks = 1
	case bodyAckBatch:
		var req struct {
			Acknowledgments []json.RawMessage `json:"acknowledgments"`
		}
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, invalidBody(err)
		}
		p.acks = len(req.Acknowledgments)
	case bodyRequeue:
		return parseRequeue(raw)
	case bodyReplay:
		return parseReplay(raw), nil
	case bodyTimers:
		return parseTimers(raw)
	}
	return p, nil
}

// parseRequeue reads a DLQ requeue body: {"items":[...]} selects by id, so it spans
// queues; {"filter":{"queue":...}} names its queue. Keys match exactly, as the broker
// reads the body (its objects are maps); a filter whose queue is not a string the
// proxy can read spans queues too, and the broker judges the body's shape.
func parseRequeue(raw []byte) (*parsedBody, error) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, invalidBody(err)
	}
	p := &parsedBody{}
	if _, ok := req["items"]; ok {
		p.spans = true
	}
	if f, ok := req["filter"]; ok {
		var filter map[string]json.RawMessage
		var q *string
		if json.Unmarshal(f, &filter) != nil || json.Unmarshal(filter["queue"], &q) != nil || q == nil {
			p.spans = true
		} else {
			p.queues = appendNew(p.queues, *q)
		}
	}
	return p, nil
}

// parseReplay reads the queue a DLQ replay moves its entry to, if it names one: a
// queue that does not exist is created. A body the proxy cannot read that way (none,
// not an object, a queue that is not a string) names none, and the broker judges it;
// the broker trims the name, so the proxy does too.
func parseReplay(raw []byte) *parsedBody {
	p := &parsedBody{}
	var req map[string]json.RawMessage
	var q *string
	if json.Unmarshal(raw, &req) == nil && json.Unmarshal(req["queue"], &q) == nil && q != nil {
		if name := strings.TrimSpace(*q); name != "" {
			p.queues = []string{name}
		}
	}
	return p
}

var errInvalidJSON = errors.New("not a JSON document")

// decodePush is parse for a push body through encoding/json, the reference for
// scanPush and the path for every body it refuses. Keys match exactly, as the broker
// reads a push (its objects are maps), not case-insensitively as encoding/json fills a
// struct: the queue names checked here are the ones the broker stores.
func decodePush(raw []byte) (*parsedBody, error) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, invalidBody(err)
	}
	var items []object
	if v, ok := req["items"]; ok {
		if err := json.Unmarshal(v, &items); err != nil {
			return nil, invalidBody(err)
		}
	}
	p := &parsedBody{}
	for _, it := range items {
		name, err := stringAt(it, "queue") // null and absent are ""
		if err != nil {
			return nil, err
		}
		p.messages++
		p.payloadBytes += int64(len(it["payload"]))
		p.queues = appendNew(p.queues, name)
	}
	return p, nil
}

func appendNew(names []string, n string) []string {
	for _, have := range names {
		if have == n {
			return names
		}
	}
	return append(names, n)
}

// admit takes a concurrency slot and the bucket tokens, then checks quotas. The
// returned release frees the slot. Operators have no limits.
func (s *Server) admit(x *exchange, pr *principal, p *parsedBody) (func(), error) {
	t := pr.tenant
	if t == nil {
		return func() {}, nil
	}
	release, refused := s.opts.Limiter.Admit(t.ID, t.Limits, p.messages)
	if refused != nil {
		s.meter.Add(t.ID, func(u *tenant.Usage) { u.RejectedRate++ })
		what := map[string]string{"requests": "requests per second", "messages": "messages per second",
			"concurrency": "concurrent requests"}[refused.Limit]
		return nil, &apiError{status: http.StatusTooManyRequests, code: codeRateLimited,
			msg: "rate limit exceeded: " + what, limit: refused.Limit, retryAfter: refused.RetryAfter, result: "rate_limited"}
	}
	if x.route.body == bodyPush || x.route.body == bodyTransaction || x.route.body == bodyConfigure ||
		x.route.body == bodyTimers || x.route.moves {
		d := demand{messages: int64(p.messages), bytes: p.payloadBytes, queues: p.queues}
		if x.route.moves { // at least one message, of at least a byte
			d.messages, d.bytes = max(d.messages, 1), max(d.bytes, 1)
		}
		if err, failedOpen := s.quotas.admit(t.ID, t.Quotas, d); err != nil {
			release()
			s.meter.Add(t.ID, func(u *tenant.Usage) { u.RejectedQuota++ })
			return nil, err
		} else if failedOpen {
			s.logger.Debug("usage snapshot stale: quotas fail open", "tenant", t.ID)
		}
	}
	return release, nil
}

// canonicalPath refuses paths that proxy and broker could route differently.
func canonicalPath(raw string) bool {
	if i := strings.IndexByte(raw, '?'); i >= 0 {
		raw = raw[:i]
	}
	if !strings.HasPrefix(raw, "/") || strings.Contains(raw, "\\") || strings.Contains(raw, "//") {
		return false
	}
	for seg := range strings.SplitSeq(raw, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	lower := strings.ToLower(raw)
	for _, bad := range []string{"%2f", "%5c", "%2e", "%00"} {
		if strings.Contains(lower, bad) {
			return false
		}
	}
	return true
}

// canonical wraps the router with the canonical-path rule.
func (s *Server) canonical(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !canonicalPath(r.RequestURI) {
			writeError(w, requestIDOf(r), errorf(http.StatusBadRequest, codeNonCanonical, "non-canonical request path"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
