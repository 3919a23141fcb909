package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// kvTimeLayout renders KV timestamps in UTC with microseconds and a Z.
const kvTimeLayout = "2006-01-02T15:04:05.000000Z"

// kvNull is the JSON null.
var kvNull = json.RawMessage("null")

// kvResultBody is one KV result on the wire. Which keys appear depends on the op (see
// kvResult); OpIndex and Type are set only for a transaction's kv rider.
type kvResultBody struct {
	Index     int              `json:"index"`
	OpIndex   *int             `json:"opIndex,omitempty"`
	Type      string           `json:"type,omitempty"`
	Op        string           `json:"op"`
	Found     *bool            `json:"found,omitempty"`
	Applied   *bool            `json:"applied,omitempty"`
	Reason    string           `json:"reason,omitempty"`
	Key       *string          `json:"key,omitempty"`
	Value     json.RawMessage  `json:"value,omitempty"`
	Version   *int64           `json:"version,omitempty"`
	ExpiresAt json.RawMessage  `json:"expiresAt,omitempty"`
	UpdatedAt string           `json:"updatedAt,omitempty"`
	Rows      *[]kvRowBody     `json:"rows,omitempty"`
	Missing   *[]string        `json:"missing,omitempty"`
	Truncated *bool            `json:"truncated,omitempty"`
	NextAfter *json.RawMessage `json:"nextAfter,omitempty"`
}

// kvRowBody is one row of getMany, getPrefix and the console listing.
type kvRowBody struct {
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value,omitempty"`
	Version   int64           `json:"version"`
	ExpiresAt json.RawMessage `json:"expiresAt"`
	UpdatedAt string          `json:"updatedAt"`
	Expired   *bool           `json:"expired,omitempty"`
}

// kvResult renders r: get {index,op,found,key,value,version,expiresAt,updatedAt} (a miss
// only {index,op,found,key}); getMany {index,op,rows,missing,truncated}; getPrefix
// {index,op,rows,truncated,nextAfter}; writes {index,op,applied,reason?,key,value,version}.
func kvResult(r queue.KVResult) kvResultBody {
	b := kvResultBody{Index: r.Index, Op: r.Op}
	switch r.Kind {
	case queue.KVGet:
		b.Found, b.Key = &r.Found, &r.Key
		if r.Found {
			b.Value, b.Version = r.Row.Value, &r.Row.Version
			b.ExpiresAt, b.UpdatedAt = kvTime(r.Row.ExpiresAt), r.Row.UpdatedAt.UTC().Format(kvTimeLayout)
		}
	case queue.KVGetMany:
		rows := kvRows(r.Rows, false, false)
		b.Rows, b.Missing, b.Truncated = &rows, &r.Missing, &r.Truncated
	case queue.KVGetPrefix:
		rows := kvRows(r.Rows, r.KeysOnly, false)
		next := kvNextAfter(r.NextAfter)
		b.Rows, b.Truncated, b.NextAfter = &rows, &r.Truncated, &next
	default:
		b.Applied, b.Reason, b.Key = &r.Applied, r.Reason, &r.Key
		b.Value, b.Version = r.Value, &r.Version
		if b.Value == nil {
			b.Value = kvNull
		}
	}
	return b
}

func kvRows(rows []queue.KVRow, keysOnly, console bool) []kvRowBody {
	out := make([]kvRowBody, len(rows))
	for i, row := range rows {
		out[i] = kvRowBody{Key: row.Key, Version: row.Version, ExpiresAt: kvTime(row.ExpiresAt),
			UpdatedAt: row.UpdatedAt.UTC().Format(kvTimeLayout)}
		if !keysOnly {
			out[i].Value = row.Value
		}
		if console {
			out[i].Expired = &rows[i].Expired
		}
	}
	return out
}

func kvTime(t *time.Time) json.RawMessage {
	if t == nil {
		return kvNull
	}
	return json.RawMessage(strconv.Quote(t.UTC().Format(kvTimeLayout)))
}

func kvNextAfter(k *string) json.RawMessage {
	if k == nil {
		return kvNull
	}
	b, _ := json.Marshal(*k) // a string always encodes
	return b
}

// kvPrecondition is the body of a batch rolled back by a required op:
// {"ok":false,"reason":"kv_precondition","failedIndex","kvReason","version","value"}.
type kvPrecondition struct {
	OK          bool            `json:"ok"`
	Reason      string          `json:"reason"`
	FailedIndex int             `json:"failedIndex"`
	KVReason    string          `json:"kvReason"`
	Version     int64           `json:"version"`
	Value       json.RawMessage `json:"value"`
}

func kvPreconditionBody(f *queue.KVPrecondition) kvPrecondition {
	v := f.Value
	if v == nil {
		v = kvNull
	}
	return kvPrecondition{Reason: "kv_precondition", FailedIndex: f.FailedIndex, KVReason: f.Reason, Version: f.Version, Value: v}
}

// kvErrorBody is the KV routes' error envelope {"error","reason"?,"detail"?}, plus
// "field" naming the offending request field (additive, as on every queen 4xx).
type kvErrorBody struct {
	Error  string `json:"error"`
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
	Field  string `json:"field,omitempty"`
}

// kvServe adapts a KV handler: its errors are answered in the KV envelope. The table:
//
//	*queue.KVError                      400 kv_bad_request / 413 payload_too_large (+ reason, detail)
//	*http.MaxBytesError                 413 payload_too_large / kv_body_too_large
//	*queue.ValidationError (body read)  400 kv_bad_request / kv_bad_body
//	unavailable, timeout, canceled      503 kv_unavailable + Retry-After: 1
//	anything else                       500 kv_error (logged with the request id)
//
// Path parameters are checked by the handlers themselves (keys are longer than other
// names), so the generic parameter check does not run.
func (s *Server) kvServe(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil || r.Context().Err() != nil {
			return
		}
		status, body := kvClassify(err)
		body.Detail = clipMessage(body.Detail)
		if status >= 500 {
			s.logger.LogAttrs(r.Context(), slog.LevelError, "request failed",
				slog.String("request_id", requestIDFrom(r.Context())), slog.String("method", r.Method),
				slog.Int("status", status), slog.Any("err", err))
		}
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		_ = writeJSON(w, status, body)
	}
}

func kvClassify(err error) (int, kvErrorBody) {
	var (
		ke  *queue.KVError
		mbe *http.MaxBytesError
		ve  *queue.ValidationError
	)
	switch {
	case errors.As(err, &ke):
		status := http.StatusBadRequest
		if ke.TooLarge {
			status = http.StatusRequestEntityTooLarge
		}
		return status, kvErrorBody{Error: ke.Code, Reason: ke.Reason, Detail: ke.Detail, Field: ke.Field}
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, kvErrorBody{Error: queue.KVCodeTooLarge, Reason: "kv_body_too_large",
			Detail: "request body exceeds " + strconv.FormatInt(mbe.Limit, 10) + " bytes"}
	case errors.As(err, &ve):
		return http.StatusBadRequest, kvErrorBody{Error: queue.KVCodeBadRequest, Reason: "kv_bad_body", Detail: ve.Message, Field: cmp.Or(ve.Field, "body")}
	case errors.Is(err, queue.ErrUnavailable), errors.Is(err, queue.ErrTimeout),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable, kvErrorBody{Error: "kv_unavailable", Detail: "the database is unavailable or did not answer in time; retry"}
	}
	return http.StatusInternalServerError, kvErrorBody{Error: "kv_error", Detail: msgInternal}
}
