package httpapi

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/queenmq/queen/internal/broker"
)

// txTimerResult is one result of a transaction's timers rider: the POST
// /api/v1/timers result with its flat index, its rider position and type "timer".
type txTimerResult struct {
	Index   int    `json:"index"`
	OpIndex int    `json:"opIndex"`
	Type    string `json:"type"`
	timerResultBody
}

// txTimers decodes the timers rider of a transaction body (at most
// broker.MaxTimerOps ops, each a POST /api/v1/timers op) and scopes its queue names;
// relative keeps them as written. Absent, null or empty is none; any other
// non-array is refused.
func txTimers(r *http.Request, body object) (ops []broker.TimerOp, relative []string, refused *txRefusal) {
	raw, p := body.array("timers")
	switch {
	case p == wrongType:
		return nil, nil, badTx("timers", "timers must be an array of timer ops")
	case len(raw) == 0:
		return nil, nil, nil
	}
	ops, err := decodeTimerOps(body.raw("timers"), "timers")
	if err != nil {
		if refused = txTimerRefusal(err); refused == nil {
			refused = badTx("timers", err.Error())
		}
		return nil, nil, refused
	}
	relative = make([]string, len(ops))
	for i := range ops {
		relative[i] = ops[i].Queue
		field := fmt.Sprintf("timers[%d].queue", i)
		if ops[i].Queue, err = scopeName(r, field, ops[i].Queue); err != nil {
			refused := badTx(field, err.Error())
			refused.Code = "timers_bad_queue"
			return nil, nil, refused
		}
	}
	return ops, relative, nil
}

// prepareTxTimers validates and completes a timers rider (horizon, payload ceiling,
// broker-minted message ids, the caller's sub as producer, encryption at schedule)
// before anything is written; a refusal comes back in the transaction envelope.
func (s *Server) prepareTxTimers(r *http.Request, ops []broker.TimerOp) (*txRefusal, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	if err := s.broker.PrepareTimerOps(r.Context(), ops, producerSub(r), "timers"); err != nil {
		if refused := txTimerRefusal(err); refused != nil {
			return refused, nil
		}
		return nil, err
	}
	return nil, nil
}

// txTimerRefusal is a timer refusal in the transaction envelope: 400 bad_request,
// 403 timer_horizon_exceeded or 413 payload_too_large, with the timers reason as code
// (nil if err is no refusal).
func txTimerRefusal(err error) *txRefusal {
	var tr *broker.TimerRefusal
	if !errors.As(err, &tr) {
		return nil
	}
	refused := badTx(tr.Field, tr.Detail)
	refused.Code = tr.Reason
	switch tr.Kind {
	case broker.TimerFutile:
		refused.status, refused.Reason = http.StatusForbidden, "timer_horizon_exceeded"
	case broker.TimerTooLarge:
		refused.status, refused.Reason = http.StatusRequestEntityTooLarge, "payload_too_large"
	}
	return refused
}

// timerScope is scopeName for the timer routes: a name the request's tenant may not
// use is refused as timers_bad_queue, like every other queue name they refuse.
func timerScope(r *http.Request, field, name string) (string, error) {
	stored, err := scopeName(r, field, name)
	if err != nil {
		return "", broker.TimerBadRequest("timers_bad_queue", field, "%s", err.Error())
	}
	return stored, nil
}
