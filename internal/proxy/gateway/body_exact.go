package gateway

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/queenmq/queen/internal/api"
)

// The transaction and configure bodies are read with keys matched exactly, as the
// broker reads them (its objects are maps): encoding/json fills a struct matching
// keys case-insensitively, so {"queue":"billing","Queue":"orders"} would be checked
// as orders and stored as billing.

// object is a JSON object with its members undecoded.
type object = map[string]json.RawMessage

// decodeAt decodes the member key of o into v when it is present and not null.
func decodeAt(o object, key string, v any) error {
	raw, ok := o[key]
	if !ok || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			te.Field = strings.TrimSuffix(key+"."+te.Field, ".")
		}
		return invalidBody(err)
	}
	return nil
}

// stringAt is the string member key of o; absent and null are "".
func stringAt(o object, key string) (string, error) {
	var s string
	err := decodeAt(o, key, &s)
	return s, err
}

// parseConfigure reads the queue a configure body names.
func parseConfigure(raw []byte) (*parsedBody, error) {
	var req object
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, invalidBody(err)
	}
	q, err := stringAt(req, "queue")
	if err != nil {
		return nil, err
	}
	return &parsedBody{queues: []string{q}}, nil
}

// parseTransaction reads what a transaction pushes: the items of its push operations
// (items, or the flat form's queue and payload|data) and the messages its timers
// rider schedules. A kv rider spans queues (KV is the tenant's, not a queue's).
func parseTransaction(raw []byte) (*parsedBody, error) {
	var req object
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, invalidBody(err)
	}
	p := &parsedBody{}
	var kv []json.RawMessage
	if err := decodeAt(req, "kv", &kv); err != nil {
		return nil, err
	}
	p.spans = len(kv) > 0
	var timers []object
	if err := decodeAt(req, "timers", &timers); err != nil {
		return nil, err
	}
	if err := addTimers(p, timers); err != nil {
		return nil, err
	}
	var ops []object
	if err := decodeAt(req, "operations", &ops); err != nil {
		return nil, err
	}
	for _, op := range ops {
		if typ, err := stringAt(op, "type"); err != nil || typ != api.TxOpPush {
			if err != nil {
				return nil, err
			}
			continue
		}
		var items []object
		if err := decodeAt(op, "items", &items); err != nil {
			return nil, err
		}
		if len(items) == 0 {
			if q, err := stringAt(op, "queue"); err != nil || q == "" {
				if err != nil {
					return nil, err
				}
				continue // nothing pushed: the broker refuses it
			}
			items = []object{op} // the flat form: the operation is its one item
		}
		for _, it := range items {
			q, err := stringAt(it, "queue")
			if err != nil {
				return nil, err
			}
			p.messages++
			p.payloadBytes += int64(len(txPayload(it)))
			p.queues = appendNew(p.queues, q)
		}
	}
	return p, nil
}

// parseTimers reads what POST /api/v1/timers schedules, its body read as the broker
// reads it: an array of operations, or {"operations": [...]} (the broker fills a
// struct there too, so the wrapper's key matches as it does; each operation's keys
// match exactly).
func parseTimers(raw []byte) (*parsedBody, error) {
	var ops []object
	if err := json.Unmarshal(raw, &ops); err != nil {
		var wrapped struct {
			Operations *[]object `json:"operations"`
		}
		if err := json.Unmarshal(raw, &wrapped); err != nil || wrapped.Operations == nil {
			return nil, errorf(http.StatusBadRequest, codeInvalidArgument,
				`the body must be an array of operations or {"operations": [...]}`)
		}
		ops = *wrapped.Operations
	}
	p := &parsedBody{}
	return p, addTimers(p, ops)
}

// addTimers adds timer operations to p: each names its queue, and each but a cancel
// schedules a message (the broker pushes it when it fires) of its payload's decoded
// bytes (base64 in the body), which the broker keeps until then.
func addTimers(p *parsedBody, timers []object) error {
	for _, tm := range timers {
		q, err := stringAt(tm, "queue")
		if err != nil {
			return err
		}
		op, err := stringAt(tm, "op")
		if err != nil {
			return err
		}
		p.queues = appendNew(p.queues, q)
		if op == "cancel" {
			continue
		}
		p.messages++
		if _, ok := tm["payload"]; ok {
			payload, err := stringAt(tm, "payload")
			if err != nil {
				return err
			}
			p.payloadBytes += int64(base64.StdEncoding.DecodedLen(len(payload)))
		}
	}
	return nil
}

// txPayload is the payload the broker stores for a transaction's push item: its
// payload, else (absent or null) its data, else {}.
func txPayload(it object) json.RawMessage {
	for _, key := range []string{"payload", "data"} {
		if v, ok := it[key]; ok && string(v) != "null" {
			return v
		}
	}
	return json.RawMessage(`{}`)
}
