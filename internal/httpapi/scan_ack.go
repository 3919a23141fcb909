package httpapi

import "github.com/queenmq/queen/internal/queue"

// scanAckBatch is the fast decoder of an /ack/batch body (already trimmed): the acks
// and the consumer group exactly as decodeAckBatch reads them, or ok false for
// anything it leaves to decodeAckBatch (including every invalid body).
func scanAckBatch(body []byte) (acks []queue.Ack, group string, ok bool) {
	s := scanner{b: body}
	haveAcks := false
	var gv scanned
	ok = s.members(func(start, end int) bool {
		switch string(s.key(start, end)) {
		case "acknowledgments":
			// The last occurrence wins, as with "items" in scanPush.
			switch s.peek() {
			case '[':
				acks, haveAcks = acks[:0], true
				return s.elements(func() bool {
					var f ackFields
					if !s.members(func(start, end int) bool { return s.ackField(&f, start, end) }) {
						return false
					}
					a, ok := s.ack(f, acks)
					acks = append(acks, a)
					return ok
				})
			case 'n':
				haveAcks = false
				return s.literal("null")
			}
			haveAcks = false
			return s.skip(1)
		case "consumerGroup":
			return s.value(&gv)
		}
		return s.skip(1)
	})
	if !ok || !haveAcks || !s.end() {
		return nil, "", false
	}
	if group, ok = s.optText(gv, ""); !ok {
		return nil, "", false
	}
	if acks == nil {
		acks = []queue.Ack{}
	}
	return acks, group, true
}

// scanAck is the fast decoder of an /ack body: the ack and the consumer group exactly
// as decodeSingleAck reads them, or ok false.
func scanAck(body []byte) (a queue.Ack, group string, ok bool) {
	s := scanner{b: body}
	var f ackFields
	var gv scanned
	ok = s.members(func(start, end int) bool {
		if string(s.key(start, end)) == "consumerGroup" {
			return s.value(&gv)
		}
		return s.ackField(&f, start, end)
	})
	if !ok || !s.end() {
		return a, "", false
	}
	if a, ok = s.ack(f, nil); !ok {
		return a, "", false
	}
	if group, ok = s.optText(gv, ""); !ok {
		return a, "", false
	}
	return a, group, true
}

// ackFields are the values of the keys decodeAck reads.
type ackFields struct {
	transactionID, partitionID, leaseID, status, err scanned
}

// ackField consumes the value of the member at key span into f, skipping keys
// decodeAck does not read.
func (s *scanner) ackField(f *ackFields, start, end int) bool {
	switch string(s.key(start, end)) {
	case "transactionId":
		return s.value(&f.transactionID)
	case "partitionId":
		return s.value(&f.partitionID)
	case "leaseId":
		return s.value(&f.leaseID)
	case "status":
		return s.value(&f.status)
	case "error":
		return s.value(&f.err)
	}
	return s.skip(1)
}

// ack builds the ack decodeAck would: transactionId and partitionId non-empty
// strings, the others optional strings. prev are the acks read so far; values equal to
// the previous ack's share its strings.
func (s *scanner) ack(f ackFields, prev []queue.Ack) (queue.Ack, bool) {
	var a, last queue.Ack
	if len(prev) > 0 {
		last = prev[len(prev)-1]
	}
	var ok bool
	if a.TransactionID, ok = s.text(f.transactionID, ""); !ok || a.TransactionID == "" {
		return a, false
	}
	if a.PartitionID, ok = s.text(f.partitionID, last.PartitionID); !ok || a.PartitionID == "" {
		return a, false
	}
	if a.LeaseID, ok = s.optText(f.leaseID, last.LeaseID); !ok {
		return a, false
	}
	if a.Status, ok = s.optText(f.status, last.Status); !ok {
		return a, false
	}
	if a.Error, ok = s.optText(f.err, last.Error); !ok {
		return a, false
	}
	return a, true
}
