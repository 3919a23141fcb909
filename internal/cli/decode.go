package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

// decodeAnswer decodes a 2xx body into out. Upstream brokers answer many failures
// with 200 and {"error":"..."}; such a body becomes a
// [*client.Error] with status 200, not found when the message says so, so that the
// exit status is the same against either broker. An empty body leaves out as it is.
func decodeAnswer(method, path string, raw []byte, out any) error {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var probe struct {
			Error any `json:"error"`
		}
		if json.Unmarshal(trimmed, &probe) == nil {
			if msg, ok := probe.Error.(string); ok && msg != "" {
				e := &client.Error{Method: method, Path: path, StatusCode: http.StatusOK, Message: msg, Body: raw}
				if strings.Contains(strings.ToLower(msg), "not found") {
					e.Code = api.ErrorCodeNotFound
				}
				return e
			}
		}
	}
	if out == nil || len(trimmed) == 0 {
		return nil
	}
	if err := json.Unmarshal(trimmed, out); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", method, pathOnly(path), err)
	}
	return nil
}
