package httpapi

import (
	"github.com/queenmq/queen/internal/jsonscan"
	"github.com/queenmq/queen/internal/queue"
)

// scanAckBatch is the fast decoder of an /ack/batch body (already trimmed): the acks
// and the consumer group exactly as decodeAckBatch reads them, or ok false for
// anything it leaves to decodeAckBatch (including every invalid body).
func scanAckBatch(body []byte) (acks []queue.Ack, group string, ok bool) {
	s := jsonscan.New(body)
	haveAcks := false
	var gv jsonscan.Value
	ok = s.Members(func(key []byte) bool {
		switch string(key) {
		case "acknowledgments":
			// The last occurrence wins, as with "items" in scanPush.
			switch s.Peek() {
			case '[':
				acks, haveAcks = acks[:0], true
				return s.Elements(func() bool {
					var f ackFields
					if !s.Members(func(key []byte) bool { return ackField(&s, &f, key) }) {
						return false
					}
					a, ok := scannedAck(&s, f, acks)
					acks = append(acks, a)
					return ok
				})
			case 'n':
				haveAcks = false
				return s.Literal("null")
			}
			haveAcks = false
			return s.Skip(1)
		case "consumerGroup":
			return s.Value(&gv)
		}
		return s.Skip(1)
	})
	if !ok || !haveAcks || !s.End() {
		return nil, "", false
	}
	if group, ok = s.OptText(gv, ""); !ok {
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
	s := jsonscan.New(body)
	var f ackFields
	var gv jsonscan.Value
	ok = s.Members(func(key []byte) bool {
		if string(key) == "consumerGroup" {
			return s.Value(&gv)
		}
		return ackField(&s, &f, key)
	})
	if !ok || !s.End() {
		return a, "", false
	}
	if a, ok = scannedAck(&s, f, nil); !ok {
		return a, "", false
	}
	if group, ok = s.OptText(gv, ""); !ok {
		return a, "", false
	}
	return a, group, true
}

// ackFields are the values of the keys decodeAck reads.
type ackFields struct {
	transactionID, partitionID, leaseID, status, err jsonscan.Value
}

// ackField consumes the value of the member key into f, skipping keys
// decodeAck does not read.
func ackField(s *jsonscan.Scanner, f *ackFields, key []byte) bool {
	switch string(key) {
	case "transactionId":
		return s.Value(&f.transactionID)
	case "partitionId":
		return s.Value(&f.partitionID)
	case "leaseId":
		return s.Value(&f.leaseID)
	case "status":
		return s.Value(&f.status)
	case "error":
		return s.Value(&f.err)
	}
	return s.Skip(1)
}

// scannedAck builds the ack decodeAck would: transactionId and partitionId non-empty
// strings, the others optional strings. prev are the acks read so far; values equal to
// the previous ack's share its strings.
func scannedAck(s *jsonscan.Scanner, f ackFields, prev []queue.Ack) (queue.Ack, bool) {
	var a, last queue.Ack
	if len(prev) > 0 {
		last = prev[len(prev)-1]
	}
	var ok bool
	if a.TransactionID, ok = s.Text(f.transactionID, ""); !ok || a.TransactionID == "" {
		return a, false
	}
	if a.PartitionID, ok = s.Text(f.partitionID, last.PartitionID); !ok || a.PartitionID == "" {
		return a, false
	}
	if a.LeaseID, ok = s.OptText(f.leaseID, last.LeaseID); !ok {
		return a, false
	}
	if a.Status, ok = s.OptText(f.status, last.Status); !ok {
		return a, false
	}
	if f.status.Kind == jsonscan.String && a.Status == "" {
		a.Status = queue.AckFailed // as decodeAck: an empty status is a nack
	}
	if a.Error, ok = s.OptText(f.err, last.Error); !ok {
		return a, false
	}
	return a, true
}
