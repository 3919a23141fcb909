package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/queue"
)

// txRefusal is a transaction refused before the database in the 1.x transaction
// envelope: {"success":false,"reason","error","code"?,"field"?,"results":[]}. reason is
// bad_request or payload_too_large; code is the KV reason of a rider shape error (or
// invalid_argument), field the offending request field.
type txRefusal struct {
	status int
	// TransactionID is minted per call, as for a transaction that reached the
	// database (writeTxRefusal sets it).
	TransactionID string     `json:"transactionId"`
	Success       bool       `json:"success"`
	Reason        string     `json:"reason"`
	Error         string     `json:"error"`
	Code          string     `json:"code,omitempty"`
	Field         string     `json:"field,omitempty"`
	Results       []struct{} `json:"results"`
}

func badTx(field, msg string) *txRefusal {
	return &txRefusal{status: http.StatusBadRequest, Reason: "bad_request", Error: clipMessage(msg),
		Code: string(api.ErrorCodeInvalidArgument), Field: field, Results: []struct{}{}}
}

// txRiderSet is a transaction's decoded riders: kv ops, and timer ops with stored
// queue names (relative holds each as the caller wrote it).
type txRiderSet struct {
	kv       []queue.KVOp
	timers   []broker.TimerOp
	relative []string
}

func (t txRiderSet) any() bool { return len(t.kv) > 0 || len(t.timers) > 0 }

// txRiders reads the top-level riders of a transaction body: the validated kv ops and
// the decoded timer ops (none when a rider is absent, null or empty), or the refusal.
func txRiders(r *http.Request, body object) (txRiderSet, *txRefusal) {
	var set txRiderSet
	var refused *txRefusal
	if set.timers, set.relative, refused = txTimers(r, body); refused != nil {
		return set, refused
	}
	raw, p := body.array("kv")
	switch {
	case p == wrongType:
		return set, badTx("kv", "kv must be an array of KV ops")
	case len(raw) == 0:
		return set, nil
	}
	ops, err := queue.ParseKVOps(raw, "kv", queue.KVTxLimits)
	var ke *queue.KVError
	if errors.As(err, &ke) {
		r := badTx(ke.Field, ke.Detail)
		r.Code = ke.Reason
		if ke.TooLarge {
			r.status, r.Reason = http.StatusRequestEntityTooLarge, "payload_too_large"
		}
		return set, r
	}
	set.kv = ops
	return set, nil
}

// txRidersBody is a committed transaction with riders: the operations' results, then
// one per kv op at flat index flat+opIndex with type "kv", then one per timer op with
// type "timer".
type txRidersBody struct {
	TransactionID string `json:"transactionId"`
	Success       bool   `json:"success"`
	Error         string `json:"error,omitempty"`
	Results       []any  `json:"results"`
}

func txWithRiders(out api.TransactionResponse, kv []queue.KVResult, riders txRiderSet,
	timers []broker.TimerResult, flat int) txRidersBody {
	b := txRidersBody{TransactionID: out.TransactionID, Success: out.Success, Error: out.Error,
		Results: make([]any, 0, len(out.Results)+len(kv)+len(timers))}
	for _, r := range out.Results {
		b.Results = append(b.Results, r)
	}
	for i, r := range kv {
		body := kvResult(r)
		opIndex := i
		body.Index, body.OpIndex, body.Type = flat+i, &opIndex, "kv"
		b.Results = append(b.Results, body)
	}
	flat += len(kv)
	for i, res := range timers {
		b.Results = append(b.Results, txTimerResult{Index: flat + i, OpIndex: i, Type: "timer",
			timerResultBody: timerResult(riders.relative[i], riders.timers[i].TimerKey, res)})
	}
	return b
}

// txKVFailedBody is a transaction rolled back by a required kv op; failedIndex is flat.
type txKVFailedBody struct {
	TransactionID string          `json:"transactionId"`
	Success       bool            `json:"success"`
	OK            bool            `json:"ok"`
	Reason        string          `json:"reason"`
	Error         string          `json:"error"`
	FailedIndex   int             `json:"failedIndex"`
	KVReason      string          `json:"kvReason"`
	Version       int64           `json:"version"`
	Value         json.RawMessage `json:"value"`
	Results       []struct{}      `json:"results"`
}

func txKVFailed(res queue.TxResult, flat int) txKVFailedBody {
	f := kvPreconditionBody(res.KVFailed)
	return txKVFailedBody{TransactionID: res.TransactionID, Reason: "kv_precondition", Error: "kv_precondition_failed",
		FailedIndex: flat + f.FailedIndex, KVReason: f.KVReason, Version: f.Version, Value: f.Value, Results: []struct{}{}}
}
