package broker

import (
	"context"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/queenmq/queen/internal/queue"
)

// Limits and defaults of the trace routes.
const (
	// TraceWorkerID is stored as worker_id of every trace this broker records; upstream
	// stores its worker index there.
	TraceWorkerID = "queen"
	// MaxTraceNames caps the names of one trace event.
	MaxTraceNames = 100
	// MaxEventTypeLength is the width of message_traces.event_type.
	MaxEventTypeLength = 100
	// DefaultTraceEventType is the event type of a trace that names none.
	DefaultTraceEventType = "info"
)

// TraceAdd records a trace event on the message (ev.PartitionID, ev.TransactionID)
// and returns its id. Empty ConsumerGroup and EventType take their defaults; names
// are deduplicated (first occurrence kept) and empty names dropped. An unknown
// message, including a partition id that is not a UUID or another tenant's message,
// is queue.ErrNotFound.
func (b *Broker) TraceAdd(ctx context.Context, sc queue.Scope, ev queue.TraceEvent) (string, error) {
	if ev.ConsumerGroup == "" {
		ev.ConsumerGroup = queue.QueueModeGroup
	} else if err := queue.CheckName("consumerGroup", ev.ConsumerGroup); err != nil {
		return "", err
	}
	if ev.EventType == "" {
		ev.EventType = DefaultTraceEventType
	} else if err := checkText("eventType", ev.EventType, MaxEventTypeLength); err != nil {
		return "", err
	}
	if err := queue.CheckPayload("data", ev.Data); err != nil {
		return "", err
	}
	names := make([]string, 0, len(ev.Names))
	for i, n := range ev.Names {
		if n == "" || slices.Contains(names, n) {
			continue
		}
		if err := checkText(fmt.Sprintf("traceNames[%d]", i), n, queue.MaxNameLength); err != nil {
			return "", err
		}
		names = append(names, n)
	}
	if len(names) > MaxTraceNames {
		return "", queue.Invalid("traceNames", "at most %d distinct traceNames per trace (got %d)", MaxTraceNames, len(names))
	}
	ev.Names = names
	if !isMessageKey(ev.PartitionID, ev.TransactionID) {
		return "", fmt.Errorf("%w: message %q in partition %q", queue.ErrNotFound, ev.TransactionID, ev.PartitionID)
	}
	return b.store.TraceInsert(ctx, sc, ev, TraceWorkerID)
}

// Traces returns one page of a message's traces, oldest first.
// A partition id that is not a UUID, or a message outside the scope, has no traces.
func (b *Broker) Traces(ctx context.Context, sc queue.Scope, partitionID, transactionID string, page queue.Page) ([]queue.Trace, error) {
	if err := checkPage(page); err != nil {
		return nil, err
	}
	if !isMessageKey(partitionID, transactionID) {
		return nil, nil
	}
	return b.store.TraceListByMessage(ctx, sc, partitionID, transactionID, page)
}

// TracesByName returns one page of the scope's traces carrying name, oldest first,
// with their message's payload decrypted, and the total count.
func (b *Broker) TracesByName(ctx context.Context, sc queue.Scope, name string, page queue.Page) ([]queue.Trace, int64, error) {
	if err := checkPage(page); err != nil {
		return nil, 0, err
	}
	if err := checkText("traceName", name, queue.MaxNameLength); err != nil {
		return nil, 0, err
	}
	traces, total, err := b.store.TraceListByName(ctx, sc, name, page)
	if err != nil {
		return nil, 0, err
	}
	for i := range traces {
		if traces[i].MessagePayload != nil {
			traces[i].MessagePayload = b.OpenPayload(traces[i].MessagePayload)
		}
	}
	return traces, total, nil
}

// TraceNames returns one page of the distinct names of the scope's traces, most
// recently seen first, and the number of distinct names.
func (b *Broker) TraceNames(ctx context.Context, sc queue.Scope, page queue.Page) ([]queue.TraceNameStat, int64, error) {
	if err := checkPage(page); err != nil {
		return nil, 0, err
	}
	return b.store.TraceNameList(ctx, sc, page)
}

// checkText validates a free-text field stored in a varchar(max) column.
func checkText(field, s string, maxLen int) error {
	if utf8.RuneCountInString(s) > maxLen {
		return queue.Invalid(field, "%s must be at most %d characters", field, maxLen)
	}
	if !utf8.ValidString(s) || slices.Contains([]byte(s), 0) {
		return queue.Invalid(field, "%s must be valid UTF-8 without NUL characters", field)
	}
	return nil
}
