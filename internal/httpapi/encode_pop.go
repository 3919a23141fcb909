package httpapi

import (
	"strconv"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// appendPop appends the pop answer for a non-empty res: exactly encodeJSON of
// popResponse(res) (api.PopResponse marshals HTML-escaped, see encode.go), rendered
// without the intermediate api values. A payload that is not valid JSON is left to
// that slow path, which fails the same way as before.
func appendPop(dst []byte, res queue.PopResult) ([]byte, error) {
	start := len(dst)
	out, ok := appendPopFast(dst, res)
	if ok {
		return out, nil
	}
	b, err := encodeJSON(popResponse(res))
	if err != nil {
		return dst[:start], err
	}
	return append(dst[:start], b...), nil
}

// appendPopFast renders api.PopResponse in its field order; Error is never set by
// popResponse and is omitted (omitempty), Autopilot only when set.
func appendPopFast(dst []byte, res queue.PopResult) ([]byte, bool) {
	const html = true
	first := res.Messages[0]
	dst = append(dst, `{"success":true,"queue":`...)
	dst = appendString(dst, res.Queue, html)
	dst = append(dst, `,"partition":`...)
	dst = appendString(dst, first.Partition, html)
	dst = append(dst, `,"partitionId":`...)
	dst = appendString(dst, first.PartitionID, html)
	dst = append(dst, `,"leaseId":`...)
	dst = appendString(dst, res.LeaseID, html)
	dst = append(dst, `,"consumerGroup":`...)
	dst = appendString(dst, res.ConsumerGroup, html)
	dst = append(dst, `,"partitionsClaimed":`...)
	dst = strconv.AppendInt(dst, int64(res.PartitionsClaimed), 10)
	dst = append(dst, `,"messages":[`...)
	for i := range res.Messages {
		if i > 0 {
			dst = append(dst, ',')
		}
		var ok bool
		if dst, ok = appendPopMessage(dst, &res.Messages[i], res); !ok {
			return dst, false
		}
	}
	dst = append(dst, ']')
	if ap := res.Autopilot; ap != nil {
		dst = append(dst, `,"autopilot":{"partitions":`...)
		dst = strconv.AppendInt(dst, int64(ap.Partitions), 10)
		dst = append(dst, `,"batch":`...)
		dst = strconv.AppendInt(dst, int64(ap.Batch), 10)
		dst = append(dst, `,"waitMs":`...)
		dst = strconv.AppendInt(dst, int64(ap.WaitMs), 10)
		dst = append(dst, '}')
	}
	if res.Conflation {
		dst = append(dst, `,"conflation":true`...)
	}
	if res.ConflationConflict {
		dst = append(dst, `,"conflationConflict":true`...)
	}
	return append(dst, '}'), true
}

// appendPopMessage renders one api.Message of the answer as popResponse builds it.
func appendPopMessage(dst []byte, m *queue.Message, res queue.PopResult) ([]byte, bool) {
	const html = true
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, m.ID, html)
	dst = append(dst, `,"transactionId":`...)
	dst = appendString(dst, m.TransactionID, html)
	dst = append(dst, `,"traceId":`...)
	dst = appendOptionalString(dst, m.TraceID, html)
	dst = append(dst, `,"data":`...)
	data := m.Payload
	if len(data) == 0 {
		data = payloadNull
	}
	var ok bool
	if dst, ok = appendPayload(dst, data); !ok {
		return dst, false
	}
	dst = append(dst, `,"producerSub":`...)
	dst = appendOptionalString(dst, m.ProducerSub, html)
	dst = append(dst, `,"createdAt":"`...)
	dst = appendMicros(dst, m.CreatedAt)
	dst = append(dst, `","partitionId":`...)
	dst = appendString(dst, m.PartitionID, html)
	dst = append(dst, `,"partition":`...)
	dst = appendString(dst, m.Partition, html)
	dst = append(dst, `,"leaseId":`...)
	dst = appendString(dst, res.LeaseID, html)
	dst = append(dst, `,"consumerGroup":`...)
	dst = appendString(dst, res.ConsumerGroup, html)
	dst = append(dst, `,"queue":`...)
	qn := m.Queue
	if qn == "" {
		qn = res.Queue
	}
	dst = appendString(dst, qn, html)
	dst = append(dst, `,"retryCount":`...)
	dst = strconv.AppendInt(dst, int64(m.RetryCount), 10)
	if m.Traceparent != "" {
		dst = append(dst, `,"traceparent":`...)
		dst = appendString(dst, m.Traceparent, html)
	}
	if m.Tracestate != "" {
		dst = append(dst, `,"tracestate":`...)
		dst = appendString(dst, m.Tracestate, html)
	}
	return append(dst, '}'), true
}

// appendOptionalString renders what optional(s) marshals to: null for "".
func appendOptionalString(dst []byte, s string, html bool) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return appendString(dst, s, html)
}

// appendMicros appends api.FormatMicros(t) (UTC, six fractional digits, truncated
// like time.Format). The layout yields digits, '-', ':', '.', 'T' and 'Z' only, so
// the result needs no escaping in a JSON string.
func appendMicros(dst []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(dst, api.TimeLayoutMicros)
	}
	hour, minute, sec := t.Clock()
	dst = appendDigits(dst, year, 4)
	dst = append(dst, '-')
	dst = appendDigits(dst, int(month), 2)
	dst = append(dst, '-')
	dst = appendDigits(dst, day, 2)
	dst = append(dst, 'T')
	dst = appendDigits(dst, hour, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, minute, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, sec, 2)
	dst = append(dst, '.')
	dst = appendDigits(dst, t.Nanosecond()/1000, 6)
	return append(dst, 'Z')
}

// appendDigits appends the n low decimal digits of v >= 0, zero-padded; n is even.
func appendDigits(dst []byte, v, n int) []byte {
	dst = append(dst, "000000"[:n]...)
	for i := len(dst) - 2; n > 0; i, n = i-2, n-2 {
		d := v % 100 * 2
		dst[i], dst[i+1] = digitPairs[d], digitPairs[d+1]
		v /= 100
	}
	return dst
}

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809" + "10111213141516171819" + "20212223242526272829" +
	"30313233343536373839" + "40414243444546474849" + "50515253545556575859" + "60616263646566676869" +
	"70717273747576777879" + "80818283848586878889" + "90919293949596979899"
