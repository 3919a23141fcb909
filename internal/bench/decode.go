package bench

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/queenmq/queen/internal/jsonscan"
)

// The consumers decode every pop and ack answer, on the CPU the broker and
// PostgreSQL share with them; encoding/json took about a third of a core at 25 000
// messages per second. These decoders read the few fields the consumers need in one
// pass and leave every other answer (anything unusual) to encoding/json, which then
// decides: a test checks that both agree.

// popAnswer is the part of a pop answer the consumer needs.
type popAnswer struct {
	LeaseID  string       `json:"leaseId"`
	Messages []popMessage `json:"messages"`
}

type popMessage struct {
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	// Data.Sent is the send stamp of the mixed cases' payloads (0 in the others).
	Data struct {
		Sent int64 `json:"sent"`
	} `json:"data"`
}

// ackAnswer is the part of an ack result the consumer checks.
type ackAnswer struct {
	Success bool    `json:"success"`
	Error   *string `json:"error"`
}

// decodePop reads body into a, reusing its slice.
func decodePop(body []byte, a *popAnswer) error {
	reset := func() {
		clear(a.Messages[:cap(a.Messages)]) // encoding/json reuses elements without zeroing them
		a.Messages = a.Messages[:0]
		a.LeaseID = ""
	}
	reset()
	if scanPop(body, a) {
		return nil
	}
	reset()
	return json.Unmarshal(body, a)
}

// decodeAcks reads body (a top-level array of ack results) into *out, reusing it.
func decodeAcks(body []byte, out *[]ackAnswer) error {
	*out = (*out)[:0]
	if scanAcks(body, out) {
		return nil
	}
	*out = (*out)[:0]
	return json.Unmarshal(body, out)
}

// key tells which of names key is, exactly (-1: none), and marks it in seen; ok is
// false when key matches one only ignoring case (encoding/json would take it) or
// repeats one already seen: both left to encoding/json.
func key(k []byte, seen []bool, names ...string) (i int, ok bool) {
	for i, n := range names {
		if string(k) == n {
			if seen[i] {
				return -1, false
			}
			seen[i] = true
			return i, true
		}
		if bytes.EqualFold(k, []byte(n)) {
			return -1, false
		}
	}
	return -1, true
}

// The scanners leave duplicate keys to encoding/json (key reports them), which
// decodes a repeated object or array into what the first one left.
func scanPop(body []byte, a *popAnswer) bool {
	s := jsonscan.New(body)
	var v jsonscan.Value
	var seen [2]bool
	ok := s.Peek() == '{' && s.Members(func(k []byte) bool {
		i, ok := key(k, seen[:], "leaseId", "messages")
		if !ok {
			return false
		}
		switch i {
		case 0:
			if !s.Value(&v) {
				return false
			}
			t, ok := s.OptText(v, "")
			a.LeaseID = t
			return ok
		case 1:
			if s.Peek() == 'n' {
				return s.Literal("null")
			}
			return s.Peek() == '[' && s.Elements(func() bool {
				a.Messages = append(a.Messages, popMessage{})
				return scanPopMessage(&s, &a.Messages[len(a.Messages)-1])
			})
		}
		return s.Skip(1)
	})
	return ok && s.End()
}

func scanPopMessage(s *jsonscan.Scanner, m *popMessage) bool {
	var v jsonscan.Value
	var seen [3]bool
	return s.Peek() == '{' && s.Members(func(k []byte) bool {
		i, ok := key(k, seen[:], "transactionId", "partitionId", "data")
		if !ok {
			return false
		}
		switch i {
		case 0, 1:
			if !s.Value(&v) {
				return false
			}
			t, ok := s.OptText(v, "")
			if i == 0 {
				m.TransactionID = t
			} else {
				m.PartitionID = t
			}
			return ok
		case 2:
			if s.Peek() != '{' {
				return false // null or not an object: encoding/json decides
			}
			var sent [1]bool
			return s.Members(func(k []byte) bool {
				j, ok := key(k, sent[:], "sent")
				switch {
				case !ok:
					return false
				case j == 0:
					if !s.Value(&v) || v.Kind != jsonscan.Other {
						return false
					}
					n, err := strconv.ParseInt(string(s.Raw(v)), 10, 64)
					m.Data.Sent = n
					return err == nil
				}
				return s.Skip(2)
			})
		}
		return s.Skip(1)
	})
}

func scanAcks(body []byte, out *[]ackAnswer) bool {
	s := jsonscan.New(body)
	var v jsonscan.Value
	ok := s.Peek() == '[' && s.Elements(func() bool {
		*out = append(*out, ackAnswer{})
		a := &(*out)[len(*out)-1]
		var seen [2]bool // a repeated key: encoding/json decides
		return s.Peek() == '{' && s.Members(func(k []byte) bool {
			i, ok := key(k, seen[:], "success", "error")
			switch {
			case !ok:
				return false
			case i == 0:
				switch s.Peek() {
				case 't':
					a.Success = true
					return s.Literal("true")
				case 'f':
					a.Success = false
					return s.Literal("false")
				}
				return false
			case i == 1:
				if !s.Value(&v) {
					return false
				}
				if v.Kind == jsonscan.Absent {
					a.Error = nil
					return true
				}
				t, ok := s.Text(v, "")
				a.Error = &t
				return ok
			}
			return s.Skip(1)
		})
	})
	return ok && s.End()
}
