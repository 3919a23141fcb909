package httpapi

import "github.com/queenmq/queen/internal/queue"

// scanPush is the fast decoder of a /push body (already trimmed): the items exactly as
// decodePush reads them, or ok false for anything it leaves to decodePush (including
// every invalid body). Payloads are sub-slices of body, as the slow path's copies
// would be byte for byte.
func scanPush(body []byte) (items []queue.PushItem, ok bool) {
	s := scanner{b: body}
	haveItems := false
	ok = s.members(func(start, end int) bool {
		if string(s.key(start, end)) != "items" {
			return s.skip(1)
		}
		// The last "items" wins; each occurrence is read in full, and one this
		// scanner cannot read sends the whole body to the slow path.
		switch s.peek() {
		case '[':
			items, haveItems = items[:0], true
			return s.elements(func() bool {
				it, ok := s.pushItem(items)
				items = append(items, it)
				return ok
			})
		case 'n':
			haveItems = false
			return s.literal("null")
		}
		haveItems = false
		return s.skip(1)
	})
	if !ok || !haveItems || !s.end() {
		return nil, false
	}
	if items == nil {
		items = []queue.PushItem{}
	}
	return items, true
}

// pushItem reads one item like decodePushFields outside a transaction. prev are the
// items read so far; a queue or partition name equal to the previous item's reuses its
// string.
func (s *scanner) pushItem(prev []queue.PushItem) (queue.PushItem, bool) {
	var qv, pv, txv, trv, payload scanned
	ok := s.members(func(start, end int) bool {
		switch string(s.key(start, end)) {
		case "queue":
			return s.value(&qv)
		case "partition":
			return s.value(&pv)
		case "transactionId":
			return s.value(&txv)
		case "traceId":
			return s.value(&trv)
		case "payload":
			return s.value(&payload)
		}
		return s.skip(1)
	})
	var it queue.PushItem
	if !ok {
		return it, false
	}
	var last queue.PushItem
	if len(prev) > 0 {
		last = prev[len(prev)-1]
	}
	if it.Queue, ok = s.text(qv, last.Queue); !ok {
		return it, false
	}
	if it.Partition, ok = s.optText(pv, last.Partition); !ok {
		return it, false
	}
	if it.TransactionID, ok = s.optText(txv, ""); !ok {
		return it, false
	}
	if it.TraceID, ok = s.optText(trv, ""); !ok {
		return it, false
	}
	it.Payload = payloadNull
	if payload.kind != scanAbsent {
		it.Payload = s.raw(payload)
	}
	return it, true
}

// optText is text for an optional string: absent or null is "".
func (s *scanner) optText(v scanned, prev string) (string, bool) {
	if v.kind == scanAbsent {
		return "", true
	}
	return s.text(v, prev)
}
