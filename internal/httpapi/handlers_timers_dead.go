package httpapi

import (
	"net/http"
	"strconv"

	"github.com/queenmq/queen/internal/broker"
)

// deadTimerBody is a dead timer on the wire: GET /api/v1/timers/{queue}?dead=true
// (queen only; docs/api.md, "Timers"). id is the page cursor.
type deadTimerBody struct {
	ID            string  `json:"id"`
	Dead          bool    `json:"dead"`
	Queue         string  `json:"queue"`
	TimerKey      string  `json:"timerKey"`
	Partition     string  `json:"partition"`
	Txn           string  `json:"txn"`
	MessageID     string  `json:"messageId"`
	PayloadZstd   bool    `json:"payloadZstd"`
	Encrypted     bool    `json:"encrypted"`
	ProducerSub   *string `json:"producerSub"`
	ConsumerGroup string  `json:"consumerGroup"`
	Attempts      int     `json:"attempts"`
	LastError     *string `json:"lastError"`
	CreatedAt     string  `json:"createdAt"`
	FailedAt      string  `json:"failedAt"`
}

// deadTimerGroup is the consumer group dead timers are filed under.
const deadTimerGroup = "__timer__"

// timerDeadRequested reads the dead parameter of a timer list: true lists the dead
// timers, false or absent the pending ones.
func timerDeadRequested(r *http.Request) (bool, error) {
	v, ok := queryString(r.URL.Query(), "dead")
	if !ok || v == "false" {
		return false, nil
	}
	if v != "true" {
		return false, broker.TimerBadRequest("timers_bad_dead", "dead", "dead must be true or false")
	}
	return true, nil
}

// timerDeadList answers GET /api/v1/timers/{queue}?dead=true: a page of the queue's
// dead timers (after = the id of the last row of the previous page; limit as for the
// pending list) → {"rows","truncated","nextAfter"}.
func (s *Server) timerDeadList(w http.ResponseWriter, r *http.Request, stored, relative string) error {
	q := r.URL.Query()
	after, _ := queryString(q, "after")
	limit := timerListDefault
	if v, ok := queryString(q, "limit"); ok {
		if n, err := strconv.Atoi(v); err == nil {
			limit = min(max(n, 1), timerListMax)
		}
	}
	rows, truncated, err := s.broker.TimerDeadList(r.Context(), stored, after, limit)
	if err != nil {
		return err
	}
	out := make([]deadTimerBody, len(rows))
	for i, d := range rows {
		out[i] = deadTimerBody{ID: d.ID, Dead: true, Queue: relative, TimerKey: d.TimerKey, Partition: d.Partition,
			Txn: d.Txn, MessageID: d.MessageID, PayloadZstd: d.PayloadZstd, Encrypted: d.Encrypted,
			ProducerSub: d.ProducerSub, ConsumerGroup: deadTimerGroup, Attempts: d.Attempts, LastError: d.LastError,
			CreatedAt: formatTimerTime(d.CreatedAt), FailedAt: formatTimerTime(d.FailedAt)}
	}
	var next *string
	if truncated && len(rows) > 0 {
		next = &rows[len(rows)-1].ID
	}
	return writeJSON(w, http.StatusOK, map[string]any{"rows": out, "truncated": truncated, "nextAfter": next})
}
