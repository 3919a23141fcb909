package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// maxBody bounds an admin request's body.
const maxBody = 1 << 20

// storable reports whether PostgreSQL can store and compare s as text: valid UTF-8
// without a NUL. It refuses anything else with an error, which would be a 500.
func storable(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// storableParams refuses a request whose path or query holds text the proxy's
// database cannot take (a NUL, invalid UTF-8: `%00`, `%FF`), naming the path or the
// query parameter, before any handler looks a name or an id up with it.
func storableParams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !storable(r.URL.Path) {
			writeErr(w, http.StatusBadRequest, api.ErrorBody{Code: api.ErrorCodeInvalidArgument,
				Error: "path: must be UTF-8 without NUL", Field: "path"})
			return
		}
		for name, values := range r.URL.Query() {
			for _, v := range values {
				if !storable(name) || !storable(v) {
					field := name
					if !storable(name) {
						field = "query"
					}
					writeErr(w, http.StatusBadRequest, api.ErrorBody{Code: api.ErrorCodeInvalidArgument,
						Error: field + ": must be UTF-8 without NUL", Field: field})
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// readBody reads a request's body, at most maxBody bytes.
func readBody(r *http.Request) ([]byte, error) {
	raw, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, &httpError{status: http.StatusRequestEntityTooLarge, code: api.ErrorCodePayloadTooLarge,
				msg: "the body is larger than " + strconv.Itoa(maxBody) + " bytes"}
		}
		return nil, badRequest("invalid JSON body: " + err.Error())
	}
	return raw, nil
}

// decodeStrict decodes raw, one JSON value and nothing after it, into v (unknown
// members refused), and refuses a string holding a NUL, naming its member: the
// database cannot store one. Invalid UTF-8 in a string is read as U+FFFD.
func decodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("invalid JSON body: more data after the JSON value")
	}
	// A NUL reaches a JSON string only as the escape \u0000: a body without one needs
	// no second read.
	var doc any
	if bytes.Contains(raw, []byte(`\u0000`)) && json.Unmarshal(raw, &doc) == nil {
		if field, ok := nulString(doc, ""); ok {
			if field == "" {
				field = "body"
			}
			return &tenant.ValidationError{Field: field, Msg: "must not contain NUL (\\u0000)"}
		}
	}
	return nil
}

// nulString names the first string of doc, a member name or a value, that holds a NUL,
// by its JSON path below at.
func nulString(doc any, at string) (string, bool) {
	switch d := doc.(type) {
	case string:
		return at, strings.IndexByte(d, 0) >= 0
	case []any:
		for i, e := range d {
			if f, ok := nulString(e, at+"["+strconv.Itoa(i)+"]"); ok {
				return f, true
			}
		}
	case map[string]any:
		for k, e := range d {
			path := k
			if at != "" {
				path = at + "." + k
			}
			if strings.IndexByte(k, 0) >= 0 {
				return path, true
			}
			if f, ok := nulString(e, path); ok {
				return f, true
			}
		}
	}
	return "", false
}
