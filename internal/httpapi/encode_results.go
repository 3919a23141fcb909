package httpapi

import (
	"strconv"

	"github.com/queenmq/queen/internal/queue"
)

// appendPushResults appends the /push answer: exactly encodeJSON of the
// []api.PushResult that pushResult builds, one per result (api.PushResult marshals
// HTML-escaped, see encode.go). clientTxIDs are the ids the clients sent, by index.
func appendPushResults(dst []byte, results []queue.PushResult, clientTxIDs []string) ([]byte, error) {
	dst = append(dst, '[')
	for i, r := range results {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendPushResult(dst, i, r, clientTxIDs[i]); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// appendPushResult renders one result with the keys api.PushResult.MarshalJSON gives
// its status, in that order. An unknown status takes the encoding/json path.
func appendPushResult(dst []byte, i int, r queue.PushResult, clientTxID string) ([]byte, error) {
	const html = true
	switch r.Status {
	case queue.StatusQueued, queue.StatusDuplicate:
		dst = append(dst, `{"index":`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, `,"transaction_id":`...)
		dst = appendString(dst, r.TransactionID, html)
		if r.TransactionID != "" {
			dst = append(dst, `,"transactionId":`...)
			dst = appendString(dst, r.TransactionID, html)
		}
		dst = append(dst, `,"status":`...)
		dst = appendString(dst, r.Status, html)
		dst = append(dst, `,"message_id":`...)
		dst = appendString(dst, r.MessageID, html)
		if r.Status == queue.StatusQueued {
			dst = append(dst, `,"partition_id":`...)
			dst = appendString(dst, r.PartitionID, html)
			dst = append(dst, `,"trace_id":`...)
			dst = appendOptionalString(dst, r.TraceID, html)
		}
		dst = append(dst, `,"queueName":`...)
		dst = appendString(dst, r.Queue, html)
		return append(dst, '}'), nil
	case queue.StatusBuffered, queue.StatusFailed:
		dst = append(dst, `{"index":`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, `,"status":`...)
		dst = appendString(dst, r.Status, html)
		dst = append(dst, `,"queue":`...)
		dst = appendString(dst, r.Queue, html)
		dst = append(dst, `,"partition":`...)
		dst = appendString(dst, r.Partition, html)
		if clientTxID != "" {
			dst = append(dst, `,"transactionId":`...)
			dst = appendString(dst, clientTxID, html)
		}
		if r.Status == queue.StatusFailed && r.Error != "" {
			dst = append(dst, `,"error":`...)
			dst = appendString(dst, r.Error, html)
		}
		return append(dst, '}'), nil
	}
	b, err := encodeJSON(pushResult(i, r, clientTxID))
	return append(dst, b...), err
}

// appendAckResults appends the /ack and /ack/batch answer: exactly encodeJSON of the
// []api.AckResult the results map to (every key rendered but conflated, only when set;
// "" as null for error, queueName and partitionName; not HTML-escaped, api.AckResult
// has no MarshalJSON).
func appendAckResults(dst []byte, results []queue.AckResult) []byte {
	const html = false
	dst = append(dst, '[')
	for i, r := range results {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"index":`...)
		dst = strconv.AppendInt(dst, int64(r.Index), 10)
		dst = append(dst, `,"transactionId":`...)
		dst = appendString(dst, r.TransactionID, html)
		dst = append(dst, `,"success":`...)
		dst = strconv.AppendBool(dst, r.Success)
		dst = append(dst, `,"error":`...)
		dst = appendOptionalString(dst, r.Error, html)
		dst = append(dst, `,"queueName":`...)
		dst = appendOptionalString(dst, r.QueueName, html)
		dst = append(dst, `,"partitionName":`...)
		dst = appendOptionalString(dst, r.PartitionName, html)
		dst = append(dst, `,"leaseReleased":`...)
		if r.LeaseReleased == nil {
			dst = append(dst, "null"...)
		} else {
			dst = strconv.AppendBool(dst, *r.LeaseReleased)
		}
		dst = append(dst, `,"dlq":`...)
		dst = strconv.AppendBool(dst, r.DLQ)
		dst = append(dst, `,"noop":`...)
		dst = strconv.AppendBool(dst, r.Noop)
		if r.Conflated != nil {
			dst = append(dst, `,"conflated":`...)
			dst = strconv.AppendInt(dst, int64(*r.Conflated), 10)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}
