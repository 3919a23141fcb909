package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/queenmq/queen/internal/api"
)

// contentTypeJSON is the Content-Type of every JSON answer.
const contentTypeJSON = "application/json"

// encodeJSON renders v without HTML escaping (payloads go out as stored) and without
// the encoder's trailing newline, so an empty push is exactly "[]".
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode response: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// writeJSON encodes v and writes it with status. Encoding happens before anything is
// written, so an encoding failure can still be answered 500 by the caller; a write
// failure means the client is gone and is not reported.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := encodeJSON(v)
	if err != nil {
		return err
	}
	writeBytes(w, status, b)
	return nil
}

// writeErrorBody writes an error body. api.ErrorBody always encodes.
func writeErrorBody(w http.ResponseWriter, status int, body api.ErrorBody) {
	b, err := encodeJSON(body)
	if err != nil {
		b = []byte(`{"error":"internal server error","code":"internal"}`)
	}
	writeBytes(w, status, b)
}

func writeBytes(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", contentTypeJSON)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
