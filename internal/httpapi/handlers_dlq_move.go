package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// msgDLQNotFound is the error of a move's 404.
const msgDLQNotFound = "Message not found"

// handleMessageRetry is POST /api/v1/messages/{partitionId}/{transactionId}/retry:
// the move of the newest dead-letter entry of that message back to the end of its
// partition (the body is ignored). 200 with result "moved" or "duplicate", 404
// {"success":false,"partitionId","transactionId","error":"Message not found",...}
// when the message has no entry, 503 result "maintenance" while pushes are paused,
// 500 otherwise (dlqRowRemoved false: rolled back; null: outcome unknown).
func (s *Server) handleMessageRetry(w http.ResponseWriter, r *http.Request) error {
	partitionID, transactionID, err := messageKey(r)
	if err != nil {
		return err
	}
	res, err := s.broker.DLQMove(r.Context(), queue.DLQMove{
		PartitionID: partitionID, TransactionID: transactionID, Scope: scopeOf(r),
	})
	if errors.Is(err, queue.ErrNotFound) {
		return writeJSON(w, http.StatusNotFound, api.DLQMoveNotFound{
			PartitionID: partitionID, TransactionID: transactionID, Error: msgDLQNotFound,
			Message: "no dead-letter entry for this message: already replayed, purged, or never dead-lettered",
		})
	}
	return s.writeMove(w, r, res, err)
}

// handleDLQReplay is POST /api/v1/dlq/{id}/replay: the move of dead-letter entry id
// (as listed by GET /api/v1/dlq), answered as the retry route. An optional body
// {"queue"?, "partition"?} redirects the message (each half trimmed; a present but
// blank half is 400; a missing destination is created). 404 {"success":false,
// "result":"gone","dlqId",...} when there is no such entry.
func (s *Server) handleDLQReplay(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "id")
	if err != nil {
		return err
	}
	body, err := readObject(r, true)
	if err != nil {
		return err
	}
	m := queue.DLQMove{DLQID: id, Scope: scopeOf(r)}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"queue", &m.Queue}, {"partition", &m.Partition}} {
		v, p := body.str(f.name)
		if p == wrongType {
			return queue.Invalid(f.name, "%s must be a string", f.name)
		}
		if p == absent {
			continue
		}
		if *f.dst = strings.TrimSpace(v); *f.dst == "" {
			return queue.Invalid(f.name, "%s must not be blank", f.name)
		}
	}
	if m.Queue, err = scopeName(r, "queue", m.Queue); err != nil {
		return err
	}
	res, err := s.broker.DLQMove(r.Context(), m)
	if errors.Is(err, queue.ErrNotFound) {
		return writeJSON(w, http.StatusNotFound, api.DLQMoveNotFound{
			Result: api.DLQMoveGone, DLQID: id, Error: msgDLQNotFound,
			Message: "no such dead-letter entry: already replayed or purged",
		})
	}
	return s.writeMove(w, r, res, err)
}

// writeMove answers a move: 200 on success, 503 in push maintenance or when the
// database cannot be reached, 400 for a validation error, else 500 (the cause logged,
// never shown).
func (s *Server) writeMove(w http.ResponseWriter, r *http.Request, res queue.DLQMoveResult, err error) error {
	var ve *queue.ValidationError
	var paused *queue.UnavailableError
	var full *queue.ConflictError
	switch {
	case err == nil:
	case errors.As(err, &ve):
		return err
	case errors.As(err, &paused):
		return writeJSON(w, http.StatusServiceUnavailable, api.DLQMoveResponse{
			Result: api.DLQMoveMaintenance, DLQRowRemoved: api.Bool(false), Error: paused.Message,
		})
	default:
		// An unreachable database is a 503 with Retry-After, as on every route: the
		// move was not refused, and the same request may succeed in a moment.
		out := api.DLQMoveResponse{Result: api.DLQMoveFailed, DLQRowRemoved: api.Bool(false), Error: "dlq move failed"}
		status := http.StatusInternalServerError
		switch {
		case errors.As(err, &full):
			out.Error = unscopeText(r, full.Message)
		case errors.Is(err, queue.ErrOutcomeUnknown):
			out.DLQRowRemoved, out.Error = nil, "dlq move failed: connection lost, outcome unknown"
			status = http.StatusServiceUnavailable
		case errors.Is(err, queue.ErrUnavailable):
			out.Error = "dlq move failed: database unavailable"
			status = http.StatusServiceUnavailable
		}
		s.logger.LogAttrs(r.Context(), slog.LevelError, "dlq move failed",
			slog.String("request_id", requestIDFrom(r.Context())), slog.Any("err", err))
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		return writeJSON(w, status, out)
	}
	out := api.DLQMoveResponse{
		Success: true, Result: api.DLQMoveMoved, Queue: unscopeName(r, res.Queue), Partition: res.Partition,
		ConsumerGroup: api.String(unscopeName(r, res.ConsumerGroup)), DLQID: res.DLQID,
		OriginalTransactionID: res.OriginalTransactionID, DLQRowRemoved: api.Bool(true),
		ReplayedAs: &api.DLQReplayedAs{MessageID: res.MessageID, TransactionID: res.TransactionID,
			QueueName: unscopeName(r, res.Queue), Status: res.Status},
	}
	if res.Status == queue.StatusDuplicate {
		out.Result, out.DLQRowRemoved = api.DLQMoveDuplicate, api.Bool(false)
		out.ReplayedAs.MessageID = zeroUUID
	}
	return writeJSON(w, http.StatusOK, out)
}

// zeroUUID is the message id a duplicate move reports.
const zeroUUID = "00000000-0000-0000-0000-000000000000"
