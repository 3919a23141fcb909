package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// Timer types are the store's: a validated op, its result, a stored timer.
type (
	// TimerOp is one timer operation (see store.TimerOp).
	TimerOp = store.TimerOp
	// TimerResult is the outcome of one TimerOp.
	TimerResult = store.TimerResult
	// Timer is a stored timer as peek and list show it.
	Timer = store.Timer
)

// Timer limits (docs/api.md, "Timers").
const (
	// MaxTimerOps is the most operations one timers call (or rider) may carry.
	MaxTimerOps = 256
	// MaxTimerPayload is the most bytes a timer's decoded payload may have.
	MaxTimerPayload = 1 << 20
	// TimerHorizon is the furthest ahead a timer may be due.
	TimerHorizon = 90 * 24 * time.Hour
	// MaxTimerKeyLength is the most characters a timer key may have (as for names).
	MaxTimerKeyLength = queue.MaxNameLength
	// MaxTimerCountPrefix is the longest prefix a count accepts.
	MaxTimerCountPrefix = 128
)

// TimerRefusalKind says why a timer request was refused; the HTTP layer maps it to a
// status (malformed 400, futile 403, too large 413).
type TimerRefusalKind int

// Refusal kinds.
const (
	TimerMalformed TimerRefusalKind = iota
	TimerFutile
	TimerTooLarge
)

// TimerRefusal is a refused timer request: Code is the error code, Reason the stable
// reason id, Field the offending field (e.g. operations[2].delayMs), Detail the text.
type TimerRefusal struct {
	Kind   TimerRefusalKind
	Code   string
	Reason string
	Field  string
	Detail string
}

func (e *TimerRefusal) Error() string { return e.Detail }

// TimerBadRequest is a malformed-request refusal (timers_bad_request).
func TimerBadRequest(reason, field, format string, args ...any) *TimerRefusal {
	return &TimerRefusal{Kind: TimerMalformed, Code: "timers_bad_request", Reason: reason, Field: field,
		Detail: fmt.Sprintf(format, args...)}
}

// PrepareTimerOps validates ops (queue names already stored, with any tenant
// prefix) and completes them in place: partition defaulted, the delivered message
// id minted, sub stamped as producer, and payloads bound for a queue with
// encryptionEnabled sealed. at prefixes field names ("operations", "timers").
// Errors are *TimerRefusal, or store errors from the encryption lookup.
func (b *Broker) PrepareTimerOps(ctx context.Context, ops []TimerOp, sub, at string) error {
	if len(ops) > MaxTimerOps {
		return TimerBadRequest("timers_too_many_ops", at, "%s: at most %d operations per call (got %d)", at, MaxTimerOps, len(ops))
	}
	seen := make(map[[2]string]bool, len(ops))
	var schedQueues []string
	for i := range ops {
		op := &ops[i]
		f := fmt.Sprintf("%s[%d]", at, i)
		if err := checkTimerOp(op, f); err != nil {
			return err
		}
		k := [2]string{op.Queue, op.TimerKey}
		if seen[k] {
			return TimerBadRequest("timers_duplicate_key", f+".timerKey", "%s: (queue, timerKey) appears twice in one call", f)
		}
		seen[k] = true
		if op.Op == store.TimerOpSchedule {
			op.MessageID = b.ids.New()
			op.ProducerSub = sub
			schedQueues = append(schedQueues, op.Queue)
		}
	}
	if len(schedQueues) == 0 {
		return nil
	}
	// An encrypted:true op is refused below with or without a queue that encrypts.
	enc, err := b.encryptedQueues(ctx, schedQueues)
	if err != nil {
		return err
	}
	for i := range ops {
		op := &ops[i]
		if op.Op != store.TimerOpSchedule {
			continue
		}
		f := fmt.Sprintf("%s[%d].encrypted", at, i)
		switch {
		case op.Encrypted && enc[op.Queue]:
			return TimerBadRequest("timers_encrypted_queue", f,
				"%s: the queue encrypts at rest, so the broker encrypts the payload; send it in plaintext", f)
		case op.Encrypted:
			// Only the broker holds the key that opens queen's envelopes.
			return TimerBadRequest("timers_encrypted_unsupported", f,
				"%s: only the broker encrypts payloads (for queues with encryptionEnabled); send it in plaintext", f)
		case !enc[op.Queue]:
			continue
		}
		plain := op.Payload
		if op.PayloadZstd {
			// A sealed payload cannot be inflated at fire: it is stored inflated.
			if plain, err = inflateTimerPayload(op.Payload); err != nil {
				return err // checkTimerOp inflated it already
			}
		}
		sealed, err := b.seal(op.Queue, plain)
		if err != nil {
			return err
		}
		op.Payload, op.PayloadZstd, op.Encrypted = sealed, false, true
	}
	return nil
}

// CheckTimerKey refuses (timers_bad_key, naming field) a timer key that is empty,
// not UTF-8, longer than MaxTimerKeyLength characters or holding a NUL or U+FFFD.
func CheckTimerKey(field, key string) error {
	if key == "" || !utf8.ValidString(key) || utf8.RuneCountInString(key) > MaxTimerKeyLength ||
		strings.IndexByte(key, 0) >= 0 {
		return TimerBadRequest("timers_bad_key", field,
			"%s must be non-empty UTF-8 of at most %d characters without NUL", field, MaxTimerKeyLength)
	}
	if err := queue.CheckNoReplacement(field, key); err != nil {
		return TimerBadRequest("timers_bad_key", field, "%s", err.Error())
	}
	return nil
}

// checkTimerOp validates one op whose fields the HTTP layer decoded.
func checkTimerOp(op *TimerOp, f string) error {
	switch op.Op {
	case store.TimerOpSchedule, "reschedule":
		op.Op = store.TimerOpSchedule
	case store.TimerOpCancel:
	default:
		return TimerBadRequest("timers_bad_op", f+".op", "%s.op must be schedule, reschedule or cancel", f)
	}
	if err := queue.CheckName(f+".queue", op.Queue); err != nil {
		return TimerBadRequest("timers_bad_queue", f+".queue", "%s", err.Error())
	}
	if err := CheckTimerKey(f+".timerKey", op.TimerKey); err != nil {
		return err
	}
	if op.Op == store.TimerOpCancel {
		return nil
	}
	if op.Partition == "" {
		op.Partition = queue.DefaultPartition
	}
	if err := queue.CheckName(f+".partition", op.Partition); err != nil {
		return TimerBadRequest("timers_bad_partition", f+".partition", "%s", err.Error())
	}
	if op.Delay > TimerHorizon {
		return &TimerRefusal{Kind: TimerFutile, Code: "timer_horizon_exceeded", Reason: "timers_horizon",
			Field: f + ".delayMs", Detail: fmt.Sprintf("%s.delayMs is beyond the horizon of %d days", f, TimerHorizon/(24*time.Hour))}
	}
	if op.Txn == "" || queue.TransactionIDTooLong(op.Txn) || !utf8.ValidString(op.Txn) ||
		strings.IndexByte(op.Txn, 0) >= 0 {
		return TimerBadRequest("timers_bad_txn", f+".txn",
			"%s.txn must be non-empty UTF-8 of at most %d characters without NUL", f, queue.MaxTransactionIDLength)
	}
	if err := queue.CheckNoReplacement(f+".txn", op.Txn); err != nil {
		return TimerBadRequest("timers_bad_txn", f+".txn", "%s", err.Error())
	}
	if len(op.Payload) > MaxTimerPayload {
		return &TimerRefusal{Kind: TimerTooLarge, Code: "payload_too_large", Reason: "timers_payload_too_large",
			Field: f + ".payload", Detail: fmt.Sprintf("%s.payload decodes to more than %d bytes", f, MaxTimerPayload)}
	}
	plain := op.Payload
	if op.PayloadZstd {
		// Inflated once here, so a bad frame is refused now and never fails at fire.
		var err error
		if plain, err = inflateTimerPayload(op.Payload); errors.Is(err, errTimerZstdTooLarge) {
			return &TimerRefusal{Kind: TimerTooLarge, Code: "payload_too_large", Reason: "timers_payload_too_large",
				Field: f + ".payload", Detail: fmt.Sprintf("%s.payload decompresses to more than %d bytes", f, MaxTimerPayload)}
		} else if err != nil {
			return TimerBadRequest("timers_bad_payload", f+".payload", "%s.payload: payloadZstd is set but %v", f, err)
		}
	}
	if !json.Valid(plain) {
		return TimerBadRequest("timers_payload_not_json", f+".payload", "%s.payload must decode to JSON (the delivered message data)", f)
	}
	if err := queue.CheckPayload(f+".payload", plain); err != nil {
		return TimerBadRequest("timers_payload_not_json", f+".payload", "%s", err.Error())
	}
	return nil
}

// ApplyTimers validates and runs ops in one transaction, then wakes the firing
// loop. Results are in op order.
func (b *Broker) ApplyTimers(ctx context.Context, ops []TimerOp, sub string) ([]TimerResult, error) {
	if err := b.PrepareTimerOps(ctx, ops, sub, "operations"); err != nil {
		return nil, err
	}
	res, err := b.store.TimerApply(ctx, ops)
	if err != nil {
		return nil, err
	}
	b.TimersChanged()
	return res, nil
}

// TimersChanged wakes this replica's firing loop (after a commit that scheduled
// timers), so a timer due now fires without waiting for the loop's next tick.
func (b *Broker) TimersChanged() { b.timers.kick() }

// TimerGet returns the timer (queueName, key) or queue.ErrNotFound.
func (b *Broker) TimerGet(ctx context.Context, queueName, key string) (Timer, error) {
	return b.store.TimerGet(ctx, queueName, key)
}

// TimerList pages the timers of queueName by key (see store.TimerList).
func (b *Broker) TimerList(ctx context.Context, queueName, after string, limit int) ([]Timer, bool, error) {
	return b.store.TimerList(ctx, queueName, after, limit)
}

// TimerCount counts the timers of queueName whose key starts with prefix.
func (b *Broker) TimerCount(ctx context.Context, queueName, prefix string) (int64, error) {
	return b.store.TimerCount(ctx, queueName, prefix)
}

// DeadTimer is a timer dead-lettered after TimerMaxAttempts failures.
type DeadTimer = store.DeadTimer

// TimerDeadList pages the dead timers of queueName (see store.TimerDeadList).
func (b *Broker) TimerDeadList(ctx context.Context, queueName, after string, limit int) ([]DeadTimer, bool, error) {
	return b.store.TimerDeadList(ctx, queueName, after, limit)
}
