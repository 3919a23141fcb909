package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/queue"
)

// The timers API (docs/api.md, "Timers"): the 1.x wire, whose errors use their own
// envelope {"error": code, "reason": id, "detail": text, "field": name}.

// timerTimeLayout renders timer timestamps: UTC with microseconds and a Z.
const timerTimeLayout = "2006-01-02T15:04:05.000000Z"

// Timer list limits.
const (
	timerListDefault = 100
	timerListMax     = 1000
)

// timerOwnedFields are the server-owned fields a client op may not carry (any key
// starting with "_" too): refused, never ignored.
var timerOwnedFields = map[string]bool{
	"producerSub": true, "producer_sub": true, "messageId": true, "message_id": true, "tenant": true,
	"tenantId": true, "tenant_id": true, "deliverAt": true, "deliver_at": true, "delaySeconds": true,
	"delay_seconds": true, "attempts": true, "claimToken": true, "claim_token": true, "claimedUntil": true,
	"claimed_until": true,
}

// timerRoute adapts a timers handler: every client error (a refusal, a validation
// error, a bad path or query parameter, a body over QUEEN_MAX_BODY_BYTES), a conflict
// (409 conflict) and an unavailable database (503 timers_unavailable, Retry-After: 1)
// is answered in the timers envelope; everything else goes to the usual error table. The
// parameter check runs inside, after the timers' own rules for the path (queue,
// timerKey) and the count prefix, so those answer their timers reasons, not the
// generic 255-character rule.
func (s *Server) timerRoute(h handlerFunc) http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		err := timerParams(r)
		if err == nil {
			err = checkParams(r)
		}
		if err == nil {
			err = h(w, r)
		}
		if errors.Is(err, queue.ErrUnavailable) || errors.Is(err, queue.ErrTimeout) {
			// The 1.x clients branch on the envelope's error code, not on prose.
			w.Header().Set("Retry-After", "1")
			return writeJSON(w, http.StatusServiceUnavailable, timerErrorBody{Error: "timers_unavailable",
				Reason: "timers_unavailable", Detail: "the database is unavailable or did not answer in time; retry"})
		}
		if ce := (*queue.ConflictError)(nil); errors.As(err, &ce) {
			// The queue refuses the fire's message (encryption on, no key on this broker).
			return writeJSON(w, http.StatusConflict, timerErrorBody{Error: "conflict", Reason: "conflict",
				Detail: unscopeText(r, ce.Message)})
		}
		tr := timerRefusal(err)
		if tr == nil {
			return err
		}
		status := http.StatusBadRequest
		switch tr.Kind {
		case broker.TimerFutile:
			status = http.StatusForbidden
		case broker.TimerTooLarge:
			status = http.StatusRequestEntityTooLarge
		}
		return writeJSON(w, status, timerErrorBody{Error: tr.Code, Reason: tr.Reason, Detail: clipMessage(tr.Detail), Field: tr.Field})
	})
}

// timerRefusal is err as a timers refusal, or nil when err is none of the client
// errors timerRoute answers in the timers envelope.
func timerRefusal(err error) *broker.TimerRefusal {
	var (
		tr  *broker.TimerRefusal
		mbe *http.MaxBytesError
		ve  *queue.ValidationError
	)
	switch {
	case errors.As(err, &tr):
		return tr
	case errors.As(err, &mbe):
		return &broker.TimerRefusal{Kind: broker.TimerTooLarge, Code: "payload_too_large", Reason: "timers_body_too_large",
			Detail: fmt.Sprintf("request body exceeds %d bytes", mbe.Limit)}
	case errors.As(err, &ve):
		return broker.TimerBadRequest("timers_bad_request", ve.Field, "%s", ve.Error())
	}
	return nil
}

// timerParams applies the timers' own rules to the path parameters (queue, the
// timerKey catch-all) and to the prefix of mode=count, before the generic parameter
// check would refuse them with its own reason (or the field "*").
func timerParams(r *http.Request) error {
	rctx := chi.RouteContext(r.Context())
	if rctx == nil {
		return nil
	}
	for _, name := range rctx.URLParams.Keys {
		v, err := pathParam(r, name)
		switch name {
		case "queue":
			if err == nil {
				err = queue.CheckName("queue", v)
			}
			if err != nil {
				return broker.TimerBadRequest("timers_bad_queue", "queue", "queue must be a non-empty name of at most %d "+
					"characters of valid UTF-8 without NUL, percent-encoded", queue.MaxNameLength)
			}
		case "*":
			if err != nil {
				return broker.TimerBadRequest("timers_bad_key", "timerKey", "timerKey is not validly percent-encoded")
			}
			if err := broker.CheckTimerKey("timerKey", v); err != nil {
				return err
			}
		}
	}
	q := r.URL.Query()
	if mode, _ := queryString(q, "mode"); mode == "count" {
		if prefix, ok := queryString(q, "prefix"); ok {
			return checkTimerCountPrefix(prefix)
		}
	}
	return nil
}

type timerErrorBody struct {
	Error  string `json:"error"`
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
	Field  string `json:"field,omitempty"`
}

// timerResultBody is one entry of POST /api/v1/timers' results.
type timerResultBody struct {
	OK        bool            `json:"ok"`
	Status    string          `json:"status"`
	Queue     string          `json:"queue"`
	TimerKey  string          `json:"timerKey"`
	Txn       json.RawMessage `json:"txn,omitempty"`
	MessageID string          `json:"messageId,omitempty"`
	DeliverAt string          `json:"deliverAt,omitempty"`
}

// handleTimers is POST /api/v1/timers: schedule, reschedule or cancel timers.
func (s *Server) handleTimers(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	ops, err := decodeTimerOps(body, "operations")
	if err != nil {
		return err
	}
	relative := make([]string, len(ops))
	for i := range ops {
		relative[i] = ops[i].Queue
		if ops[i].Queue, err = timerScope(r, fmt.Sprintf("operations[%d].queue", i), ops[i].Queue); err != nil {
			return err
		}
	}
	results, err := s.broker.ApplyTimers(r.Context(), ops, producerSub(r))
	if err != nil {
		return err
	}
	out := make([]timerResultBody, len(results))
	for i, res := range results {
		out[i] = timerResult(relative[i], ops[i].TimerKey, res)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"results": out})
}

func timerResult(queueName, key string, res broker.TimerResult) timerResultBody {
	b := timerResultBody{OK: res.Status != "absent" && res.Status != "too_late", Status: res.Status,
		Queue: queueName, TimerKey: key}
	if res.Status != "too_late" {
		b.Txn = json.RawMessage("null")
		if res.Txn != nil {
			b.Txn, _ = json.Marshal(*res.Txn)
		}
	}
	if res.MessageID != "" {
		b.MessageID, b.DeliverAt = res.MessageID, formatTimerTime(res.DeliverAt)
	}
	return b
}

// decodeTimerOps decodes a timers body (an array, or {"operations": [...]}) into ops
// with relative queue names; at names the array in errors. The timers rider of
// /api/v1/transaction decodes its array with it too.
func decodeTimerOps(body []byte, at string) ([]broker.TimerOp, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(body, &raws); err != nil || raws == nil { // null is no array
		var wrapped struct {
			Operations *[]json.RawMessage `json:"operations"`
		}
		if err := json.Unmarshal(body, &wrapped); err != nil || wrapped.Operations == nil {
			return nil, broker.TimerBadRequest("timers_bad_body", at,
				"the body must be an array of operations or {\"operations\": [...]}")
		}
		raws = *wrapped.Operations
	}
	if len(raws) > broker.MaxTimerOps {
		return nil, broker.TimerBadRequest("timers_too_many_ops", at, "%s: at most %d operations per call (got %d)",
			at, broker.MaxTimerOps, len(raws))
	}
	ops := make([]broker.TimerOp, len(raws))
	for i, raw := range raws {
		op, err := decodeTimerOp(raw, fmt.Sprintf("%s[%d]", at, i))
		if err != nil {
			return nil, err
		}
		ops[i] = op
	}
	return ops, nil
}

func decodeTimerOp(raw json.RawMessage, f string) (broker.TimerOp, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return broker.TimerOp{}, broker.TimerBadRequest("timers_bad_op", f, "%s must be an object", f)
	}
	for k := range m {
		if strings.HasPrefix(k, "_") || timerOwnedFields[k] {
			return broker.TimerOp{}, broker.TimerBadRequest("timers_server_owned_field", f+"."+k,
				"%s.%s is set by the broker and may not be sent", f, k)
		}
	}
	var op broker.TimerOp
	var err error
	str := func(name string, dst *string) (bool, error) {
		v, ok := m[name]
		if !ok || string(v) == "null" {
			return false, nil
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return false, broker.TimerBadRequest("timers_bad_field", f+"."+name, "%s.%s must be a string", f, name)
		}
		return true, nil
	}
	flag := func(name string, dst *bool) error {
		v, ok := m[name]
		if !ok || string(v) == "null" {
			return nil
		}
		if json.Unmarshal(v, dst) != nil {
			return broker.TimerBadRequest("timers_bad_field", f+"."+name, "%s.%s must be a boolean", f, name)
		}
		return nil
	}
	if _, err = str("op", &op.Op); err != nil {
		return op, err
	}
	if _, err = str("queue", &op.Queue); err != nil {
		return op, err
	}
	if _, err = str("timerKey", &op.TimerKey); err != nil {
		return op, err
	}
	if op.HasTxn, err = str("txn", &op.Txn); err != nil {
		return op, err
	}
	switch op.Op {
	case "schedule", "reschedule", "cancel":
	default:
		return op, broker.TimerBadRequest("timers_bad_op", f+".op", "%s.op must be schedule, reschedule or cancel", f)
	}
	if op.Queue == "" {
		return op, broker.TimerBadRequest("timers_bad_queue", f+".queue", "%s.queue is required", f)
	}
	if op.Op == "cancel" {
		return op, nil
	}
	hasPart, err := str("partition", &op.Partition)
	if err != nil {
		return op, err
	}
	if hasPart && op.Partition == "" {
		return op, broker.TimerBadRequest("timers_bad_partition", f+".partition", "%s.partition must not be empty", f)
	}
	if op.Delay, err = timerDelay(m["delayMs"], f+".delayMs"); err != nil {
		return op, err
	}
	var b64 string
	if has, err := str("payload", &b64); err != nil {
		return op, err
	} else if !has {
		return op, broker.TimerBadRequest("timers_bad_payload", f+".payload", "%s.payload (base64) is required", f)
	}
	// The decoder skips line breaks (base64 wrapped at 76 characters), so they do not
	// count towards the size.
	if base64.StdEncoding.DecodedLen(len(b64)-strings.Count(b64, "\n")-strings.Count(b64, "\r")) > broker.MaxTimerPayload+3 {
		op.Payload = make([]byte, broker.MaxTimerPayload+1) // refused as too large by the broker
	} else if op.Payload, err = decodeBase64(b64); err != nil {
		return op, broker.TimerBadRequest("timers_bad_payload", f+".payload", "%s.payload must be base64", f)
	}
	if err := flag("payloadZstd", &op.PayloadZstd); err != nil {
		return op, err
	}
	return op, flag("encrypted", &op.Encrypted)
}

// timerDelay reads delayMs: a JSON number of milliseconds from now; values beyond
// the horizon are kept beyond it (the broker refuses them) without overflowing.
func timerDelay(v json.RawMessage, field string) (time.Duration, error) {
	var ms float64
	if len(v) == 0 || string(v) == "null" || v[0] == '"' || json.Unmarshal(v, &ms) != nil {
		return 0, broker.TimerBadRequest("timers_bad_delay", field, "%s must be a number of milliseconds", field)
	}
	limit := float64(broker.TimerHorizon / time.Millisecond)
	ms = math.Max(math.Min(ms, limit+1), -limit)
	return time.Duration(ms * float64(time.Millisecond)), nil
}

func decodeBase64(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return base64.RawStdEncoding.DecodeString(s)
	}
	return b, nil
}

func formatTimerTime(t time.Time) string { return t.UTC().Format(timerTimeLayout) }

// timerPath returns the request's stored queue name and its timer key.
func timerPath(r *http.Request) (stored, relative, key string, err error) {
	if relative, err = pathParam(r, "queue"); err != nil {
		return "", "", "", err
	}
	if key, err = pathParam(r, "*"); err != nil {
		return "", "", "", err
	}
	stored, err = timerScope(r, "queue", relative)
	return stored, relative, key, err
}

// handleTimerCancel is DELETE /api/v1/timers/{queue}/*: cancel one timer; ?txn= is
// echoed when it is absent.
func (s *Server) handleTimerCancel(w http.ResponseWriter, r *http.Request) error {
	stored, relative, key, err := timerPath(r)
	if err != nil {
		return err
	}
	op := broker.TimerOp{Op: "cancel", Queue: stored, TimerKey: key}
	op.Txn, op.HasTxn = queryString(r.URL.Query(), "txn")
	results, err := s.broker.ApplyTimers(r.Context(), []broker.TimerOp{op}, "")
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, timerResult(relative, key, results[0]))
}

// timerBody is a stored timer on the wire (peek; list rows omit found and payload).
type timerBody struct {
	Found       *bool   `json:"found,omitempty"`
	Queue       string  `json:"queue"`
	TimerKey    string  `json:"timerKey"`
	Partition   string  `json:"partition"`
	DeliverAt   string  `json:"deliverAt"`
	Txn         string  `json:"txn"`
	MessageID   string  `json:"messageId"`
	Payload     *string `json:"payload,omitempty"`
	PayloadZstd bool    `json:"payloadZstd"`
	Encrypted   bool    `json:"encrypted"`
	ProducerSub *string `json:"producerSub"`
	Attempts    int     `json:"attempts"`
	LastError   *string `json:"lastError"`
	Claimed     bool    `json:"claimed"`
	CreatedAt   string  `json:"createdAt"`
	UpdatedAt   string  `json:"updatedAt"`
}

func newTimerBody(relative string, t *broker.Timer) timerBody {
	return timerBody{Queue: relative, TimerKey: t.TimerKey, Partition: t.Partition,
		DeliverAt: formatTimerTime(t.DueAt), Txn: t.Txn, MessageID: t.MessageID, PayloadZstd: t.PayloadZstd,
		Encrypted: t.Encrypted, ProducerSub: t.ProducerSub, Attempts: t.Attempts, LastError: t.LastError,
		Claimed: t.Claimed, CreatedAt: formatTimerTime(t.CreatedAt), UpdatedAt: formatTimerTime(t.UpdatedAt)}
}

// handleTimerGet is GET /api/v1/timers/{queue}/*: peek one timer (200 found:false
// when there is none).
func (s *Server) handleTimerGet(w http.ResponseWriter, r *http.Request) error {
	stored, relative, key, err := timerPath(r)
	if err != nil {
		return err
	}
	t, err := s.broker.TimerGet(r.Context(), stored, key)
	if errors.Is(err, queue.ErrNotFound) {
		return writeJSON(w, http.StatusOK, map[string]any{"found": false, "queue": relative, "timerKey": key})
	}
	if err != nil {
		return err
	}
	found := true
	body := newTimerBody(relative, &t)
	payload := base64.StdEncoding.EncodeToString(t.Payload)
	body.Found, body.Payload = &found, &payload
	return writeJSON(w, http.StatusOK, body)
}

// handleTimerList is GET /api/v1/timers/{queue}: a keyset page (after, limit), or
// with mode=count a count of the keys starting with prefix; with dead=true a page of
// the dead timers instead.
func (s *Server) handleTimerList(w http.ResponseWriter, r *http.Request) error {
	relative, err := pathParam(r, "queue")
	if err != nil {
		return err
	}
	stored, err := timerScope(r, "queue", relative)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	dead, err := timerDeadRequested(r)
	if err != nil {
		return err
	}
	switch mode, _ := queryString(q, "mode"); mode {
	case "count":
		if dead {
			return broker.TimerBadRequest("timers_bad_dead", "dead", "dead=true lists dead timers; it does not count")
		}
		return s.timerCount(w, r, stored)
	case "", "list":
		if dead {
			return s.timerDeadList(w, r, stored, relative)
		}
	default:
		return broker.TimerBadRequest("timers_read_mode_unknown", "mode", "mode must be list or count")
	}
	after, _ := queryString(q, "after")
	limit := timerListDefault
	if v, ok := queryString(q, "limit"); ok {
		if n, err := strconv.Atoi(v); err == nil {
			limit = min(max(n, 1), timerListMax)
		}
	}
	rows, truncated, err := s.broker.TimerList(r.Context(), stored, after, limit)
	if err != nil {
		return err
	}
	out := make([]timerBody, len(rows))
	for i := range rows {
		out[i] = newTimerBody(relative, &rows[i])
	}
	var next *string
	if truncated && len(rows) > 0 {
		next = &rows[len(rows)-1].TimerKey
	}
	return writeJSON(w, http.StatusOK, map[string]any{"rows": out, "truncated": truncated, "nextAfter": next})
}

func (s *Server) timerCount(w http.ResponseWriter, r *http.Request, stored string) error {
	q := r.URL.Query()
	if _, ok := q["after"]; ok {
		return broker.TimerBadRequest("timers_count_page_parameters", "after", "after and limit are not allowed with mode=count")
	}
	if _, ok := q["limit"]; ok {
		return broker.TimerBadRequest("timers_count_page_parameters", "limit", "after and limit are not allowed with mode=count")
	}
	prefix, _ := queryString(q, "prefix")
	if err := checkTimerCountPrefix(prefix); err != nil {
		return err
	}
	n, err := s.broker.TimerCount(r.Context(), stored, prefix)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]int64{"count": n})
}

// checkTimerCountPrefix applies the rules of mode=count's prefix: required, at most
// broker.MaxTimerCountPrefix bytes, UTF-8 without NUL.
func checkTimerCountPrefix(prefix string) error {
	switch {
	case prefix == "":
		return broker.TimerBadRequest("timers_count_prefix_required", "prefix", "prefix is required with mode=count")
	case len(prefix) > broker.MaxTimerCountPrefix:
		return broker.TimerBadRequest("timers_count_prefix_too_long", "prefix", "prefix must be at most %d bytes",
			broker.MaxTimerCountPrefix)
	case strings.IndexByte(prefix, 0) >= 0 || !utf8.ValidString(prefix):
		return broker.TimerBadRequest("timers_count_prefix_invalid", "prefix", "prefix must be UTF-8 without NUL")
	}
	return nil
}
