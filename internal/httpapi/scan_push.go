package httpapi

import (
	"github.com/queenmq/queen/internal/jsonscan"
	"github.com/queenmq/queen/internal/queue"
)

// scanPush is the fast decoder of a /push body (already trimmed): the items exactly as
// decodePush reads them, or ok false for anything it leaves to decodePush (including
// every invalid body). Payloads are sub-slices of body, as the slow path's copies
// would be byte for byte.
func scanPush(body []byte) (items []queue.PushItem, ok bool) {
	s := jsonscan.New(body)
	haveItems := false
	ok = s.Members(func(key []byte) bool {
		if string(key) != "items" {
			return s.Skip(1)
		}
		// The last "items" wins; each occurrence is read in full, and one this
		// scanner cannot read sends the whole body to the slow path.
		switch s.Peek() {
		case '[':
			items, haveItems = items[:0], true
			return s.Elements(func() bool {
				it, ok := pushItem(&s, items)
				items = append(items, it)
				return ok
			})
		case 'n':
			haveItems = false
			return s.Literal("null")
		}
		haveItems = false
		return s.Skip(1)
	})
	if !ok || !haveItems || !s.End() {
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
func pushItem(s *jsonscan.Scanner, prev []queue.PushItem) (queue.PushItem, bool) {
	var qv, pv, txv, trv, payload jsonscan.Value
	ok := s.Members(func(key []byte) bool {
		switch string(key) {
		case "queue":
			return s.Value(&qv)
		case "partition":
			return s.Value(&pv)
		case "transactionId":
			return s.Value(&txv)
		case "traceId":
			return s.Value(&trv)
		case "payload":
			return s.Value(&payload)
		}
		return s.Skip(1)
	})
	var it queue.PushItem
	if !ok {
		return it, false
	}
	var last queue.PushItem
	if len(prev) > 0 {
		last = prev[len(prev)-1]
	}
	if it.Queue, ok = s.Text(qv, last.Queue); !ok {
		return it, false
	}
	if it.Partition, ok = s.OptText(pv, last.Partition); !ok {
		return it, false
	}
	if it.TransactionID, ok = s.OptText(txv, ""); !ok {
		return it, false
	}
	if it.TraceID, ok = s.OptText(trv, ""); !ok {
		return it, false
	}
	it.Payload = payloadNull
	if payload.Kind != jsonscan.Absent {
		it.Payload = s.Raw(payload)
	}
	return it, true
}
