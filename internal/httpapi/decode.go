package httpapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// object is a decoded JSON object whose values are still raw, so handlers can tell
// absent, null and wrongly typed fields apart and answer upstream's exact messages.
type object map[string]json.RawMessage

// presence says what a field lookup found. JSON null counts as absent everywhere.
type presence int

const (
	absent    presence = iota // missing or null
	present                   // present with the expected type
	wrongType                 // present with another type
)

// readObject reads the whole body and decodes it as a JSON object; see
// readBody and parseObject.
func readObject(r *http.Request, emptyIsObject bool) (object, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	return parseObject(body, emptyIsObject)
}

// maxBodyPresize bounds the buffer readBody allocates up front from Content-Length,
// so a client declaring a large body it never sends cannot make the server allocate
// it.
const maxBodyPresize = 1 << 20

// readBody reads the whole body with surrounding whitespace trimmed. A body over the
// size limit surfaces as *http.MaxBytesError (413). It reads like io.ReadAll, into a
// buffer sized from Content-Length when there is one; the hot routes keep sub-slices
// of the body (payloads), so the buffer is never reused.
func readBody(r *http.Request) ([]byte, error) {
	size := 512
	if cl := r.ContentLength; cl > 0 {
		size = int(min(cl, maxBodyPresize)) + 1 // +1: room for the read that sees EOF
	}
	body := make([]byte, 0, size)
	for {
		n, err := r.Body.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, err
			}
			return nil, queue.Invalid("", "Failed to read request body: %v", err)
		}
		if len(body) == cap(body) {
			body = append(body, 0)[:len(body)]
		}
	}
	return bytes.TrimSpace(body), nil
}

// parseObject decodes a read body as a JSON object. An empty body is 400 "Empty
// request body" unless emptyIsObject, then it (and a body of JSON null) reads as {}. Malformed JSON is 400
// "Invalid JSON: <parser message>"; any other top-level value is 400.
func parseObject(body []byte, emptyIsObject bool) (object, error) {
	if len(body) == 0 || (emptyIsObject && string(body) == "null") {
		if emptyIsObject {
			return object{}, nil
		}
		return nil, queue.Invalid("", "Empty request body")
	}
	if !json.Valid(body) {
		var v any
		err := json.Unmarshal(body, &v)
		return nil, queue.Invalid("", "Invalid JSON: %v", err)
	}
	if body[0] != '{' {
		return nil, queue.Invalid("", "Request body must be a JSON object")
	}
	var o object
	if err := json.Unmarshal(body, &o); err != nil {
		return nil, queue.Invalid("", "Invalid JSON: %v", err)
	}
	return o, nil
}

// asObject decodes raw when it is a JSON object.
func asObject(raw json.RawMessage) (object, presence) {
	switch {
	case isNull(raw):
		return nil, absent
	case raw[0] != '{':
		return nil, wrongType
	}
	var o object
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, wrongType
	}
	return o, present
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// raw returns the value of key, nil when absent or null.
func (o object) raw(key string) json.RawMessage {
	if v := o[key]; !isNull(v) {
		return v
	}
	return nil
}

// str reads a string field.
func (o object) str(key string) (string, presence) {
	v := o.raw(key)
	if v == nil {
		return "", absent
	}
	if v[0] != '"' {
		return "", wrongType
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", wrongType
	}
	return s, present
}

// array reads an array field, its elements still raw.
func (o object) array(key string) ([]json.RawMessage, presence) {
	v := o.raw(key)
	if v == nil {
		return nil, absent
	}
	if v[0] != '[' {
		return nil, wrongType
	}
	var a []json.RawMessage
	if err := json.Unmarshal(v, &a); err != nil {
		return nil, wrongType
	}
	return a, present
}

// obj reads an object field.
func (o object) obj(key string) (object, presence) { return asObject(o.raw(key)) }

// integer reads an integral number within [min, max]. A number with a zero fraction
// (5.0, 1e3) counts as an integer; anything else, including out-of-range values, is
// wrongType.
func (o object) integer(key string, lo, hi int64) (int64, presence) {
	v := o.raw(key)
	if v == nil {
		return 0, absent
	}
	if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		return 0, wrongType
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(string(v), 64)
		if ferr != nil || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
			return 0, wrongType
		}
		n = int64(f)
	}
	if n < lo || n > hi {
		return 0, wrongType
	}
	return n, present
}

// boolean reads a JSON true or false.
func (o object) boolean(key string) (bool, presence) {
	switch string(o.raw(key)) {
	case "":
		return false, absent
	case "true":
		return true, present
	case "false":
		return false, present
	}
	return false, wrongType
}

// optString reads an optional string field: absent is "", a wrong type is a 400
// "<field> must be a string" naming field, a NUL a 400 from checkText.
func (o object) optString(key, field string) (string, error) {
	s, p := o.str(key)
	if p == wrongType {
		return "", queue.Invalid(field, "%s must be a string", field)
	}
	return s, checkText(field, s)
}

// checkText refuses a decoded body string that PostgreSQL's text cannot hold: one
// with NUL (the escape \u0000) or, from a decoder that keeps them, invalid UTF-8
// bytes (encoding/json replaces those with U+FFFD). Lengths are the broker's to
// check, per field.
func checkText(field, s string) error {
	if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
		return queue.Invalid(field, "%s must be valid UTF-8 without NUL characters", field)
	}
	return nil
}

// maxParamLength bounds every path and query parameter, in characters. Every text
// parameter of the API is a name (varchar(255) in the schema), an id, a number, a
// timestamp or a keyword, so none needs more.
const maxParamLength = queue.MaxNameLength

// checkParams is the one check of the request's parameters, run before any handler
// (and so before any SQL) by [Server.handle]: every path parameter of the matched
// route and every query parameter, known to the route or not, must be at most
// maxParamLength characters of valid UTF-8 without NUL, which is what PostgreSQL's
// text accepts. A bad value is a 400 invalid_argument naming the parameter; a bad
// parameter name or percent-encoding that does not decode names "query". Query
// parameters are checked in request order, so the first bad one is reported.
func checkParams(r *http.Request) error {
	if rctx := chi.RouteContext(r.Context()); rctx != nil {
		for _, name := range rctx.URLParams.Keys {
			v, err := pathParam(r, name)
			if err != nil {
				return err
			}
			if err := checkParam(name, v); err != nil {
				return err
			}
		}
	}
	for part := range strings.SplitSeq(r.URL.RawQuery, "&") {
		if part == "" || strings.Contains(part, ";") {
			continue // url.ParseQuery drops these pairs: no handler sees them
		}
		rawName, rawValue, _ := strings.Cut(part, "=")
		name, err := url.QueryUnescape(rawName)
		if err != nil || checkParam("query", name) != nil {
			return queue.Invalid("query", "query parameter names must be at most %d characters of "+
				"valid UTF-8 without NUL characters, percent-encoded", maxParamLength)
		}
		field := cmp.Or(name, "query") // a nameless parameter: no handler reads it
		v, err := url.QueryUnescape(rawValue)
		if err != nil {
			return queue.Invalid(field, "%s is not a valid percent-encoded query value", field)
		}
		if err := checkParam(field, v); err != nil {
			return err
		}
	}
	return nil
}

// checkParam validates one parameter value for field, with the messages of
// queue.CheckName.
func checkParam(field, v string) error {
	if len(v) > maxParamLength && utf8.RuneCountInString(v) > maxParamLength {
		return queue.Invalid(field, "%s must be at most %d characters", field, maxParamLength)
	}
	if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
		return queue.Invalid(field, "%s must be valid UTF-8 without NUL characters", field)
	}
	return nil
}

// pathParam returns the percent-decoded path parameter name. chi matches on the raw
// path when the URL has one (an escaped "/" or similar), and then hands out escaped
// values, so those are unescaped here; otherwise the value is already decoded.
func pathParam(r *http.Request, name string) (string, error) {
	v := chi.URLParam(r, name)
	if r.URL.RawPath == "" {
		return v, nil
	}
	s, err := url.PathUnescape(v)
	if err != nil {
		return "", queue.Invalid(name, "%s is not a valid path segment", name)
	}
	return s, nil
}

// hasPathParam reports whether the matched route declares the path parameter name
// (an empty value and a missing parameter look the same to chi.URLParam).
func hasPathParam(r *http.Request, name string) bool {
	rctx := chi.RouteContext(r.Context())
	return rctx != nil && slices.Contains(rctx.URLParams.Keys, name)
}

// queryString returns the first value of a query parameter and whether it was given.
// A present but empty parameter yields "".
func queryString(q url.Values, name string) (string, bool) {
	vs, ok := q[name]
	if !ok || len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

// queryInt parses an integer query parameter. Absent or empty means (0, false); an
// integer written with a zero fraction ("30000.0", as a client that formats a float
// sends it) is that integer; anything else is a 400 naming the parameter.
func queryInt(q url.Values, name string) (int64, bool, error) {
	v, ok := queryString(q, name)
	if !ok || strings.TrimSpace(v) == "" {
		return 0, false, nil
	}
	n, err := api.ParseQueryInt(v)
	if err != nil {
		return 0, false, queue.Invalid(name, "%s must be an integer", name)
	}
	return n, true, nil
}

// queryBool is upstream's boolean: true iff the value is exactly "true" or "1".
func queryBool(q url.Values, name string) bool {
	v, _ := queryString(q, name)
	return v == "true" || v == "1"
}
