package gateway

import (
	"bytes"
	"unicode/utf8"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/jsonscan"
)

// The two bodies the proxy reads on every push, the push request and the broker's
// answer, go through jsonscan first: one pass, no allocation per item. encoding/json
// stays the reference (decodePush, tallyPushAnswer): a scanner accepts only the common
// shape and reports ok=false on anything else (an escaped key, a repeated key it uses,
// a null or a value of the wrong type where it reads one, invalid JSON of any kind),
// and the caller then runs encoding/json, which owns every error message. Whenever a
// scanner says ok its result equals the decoder's; scan_test.go fuzzes both.

// pushTally counts the results of a push answer by status.
type pushTally struct {
	// in counts queued and buffered items.
	in         int64
	duplicates int64
	failed     int64
}

// scanPush is the fast path of parse for a push body, {"items":[{...},...]}: the
// number of items, the summed length of their raw payloads and the distinct queue
// names in order of first appearance. Keys match exactly, as in decodePush.
func scanPush(raw []byte) (parsedBody, bool) {
	var p parsedBody
	s := jsonscan.New(raw)
	seenItems := false
	ok := s.Members(func(key []byte) bool {
		if string(key) != "items" {
			return s.Skip(1)
		}
		if seenItems {
			return false
		}
		seenItems = true
		if s.Peek() == 'n' {
			return s.Literal("null")
		}
		return s.Elements(func() bool { return scanPushItem(&s, &p) })
	})
	return p, ok && s.End()
}

// scanPushItem reads one push item and adds it to p.
func scanPushItem(s *jsonscan.Scanner, p *parsedBody) bool {
	if s.Peek() != '{' {
		return false // a null item, or not an object: the decoder decides
	}
	var queue, payload jsonscan.Value
	seenQueue, seenPayload := false, false
	ok := s.Members(func(key []byte) bool {
		switch string(key) {
		case "queue":
			if seenQueue {
				return false
			}
			seenQueue = true
			return s.Value(&queue)
		case "payload":
			if seenPayload {
				return false
			}
			seenPayload = true
			return s.Value(&payload)
		}
		return s.Skip(1)
	})
	if !ok || (seenQueue && queue.Kind == jsonscan.Absent) {
		return false // a null queue: the decoder decides
	}
	p.messages++
	switch {
	case payload.Kind != jsonscan.Absent:
		p.payloadBytes += int64(len(s.Raw(payload)))
	case seenPayload:
		p.payloadBytes += int64(len("null")) // the decoder keeps a null payload as its raw bytes
	}
	if b, plain := s.Plain(queue); plain {
		if !utf8.Valid(b) {
			return false // the decoder replaces invalid bytes
		}
		p.queues = appendNewBytes(p.queues, b) // a string only for a name not seen yet
		return true
	}
	name, ok := s.OptText(queue, "") // absent, or with escapes
	if !ok {
		return false
	}
	p.queues = appendNew(p.queues, name)
	return true
}

// scanPushAnswer is the fast path of tallyPushAnswer for the broker's answer to a
// push, [{"status":"queued",...},...].
func scanPushAnswer(raw []byte) (pushTally, bool) {
	var t pushTally
	s := jsonscan.New(raw)
	if s.Peek() != '[' {
		return t, false
	}
	ok := s.Elements(func() bool {
		if s.Peek() != '{' {
			return false
		}
		var status jsonscan.Value
		seen := false
		if !s.Members(func(key []byte) bool {
			if string(key) == "status" {
				if seen {
					return false
				}
				seen = true
				return s.Value(&status)
			}
			if mayFoldTo(key, "status") {
				return false // tallyPushAnswer's struct would take it for "status"
			}
			return s.Skip(1)
		}) {
			return false
		}
		if seen && status.Kind != jsonscan.String {
			return false
		}
		text, plain := s.Plain(status) // the common case, compared in place
		if !plain && seen {
			unescaped, ok := s.Text(status, "")
			if !ok {
				return false
			}
			text = []byte(unescaped)
		}
		switch string(text) {
		case api.PushStatusQueued, api.PushStatusBuffered:
			t.in++
		case api.PushStatusDuplicate:
			t.duplicates++
		case api.PushStatusFailed:
			t.failed++
		}
		return true
	})
	return t, ok && s.End()
}

// mayFoldTo reports whether encoding/json could match key to the field name when it
// fills a struct (case-insensitively, with Unicode folding): an ASCII case variant, or
// any key with non-ASCII bytes.
func mayFoldTo(key []byte, name string) bool {
	if len(key) == len(name) && bytes.EqualFold(key, []byte(name)) {
		return true
	}
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// appendNewBytes is appendNew for a name still in the body's bytes; it allocates only
// for a name not seen yet.
func appendNewBytes(names []string, n []byte) []string {
	for _, have := range names {
		if have == string(n) {
			return names
		}
	}
	return append(names, string(n))
}
