package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/queenmq/queen/internal/queue"
)

// handleKV is POST /api/v1/kv: a batch of KV ops, as a bare array or
// {"operations":[...]}. 200 {"results":[...]} index-aligned with the ops, or the
// precondition envelope when a required op rolled the batch back.
func (s *Server) handleKV(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var raw []json.RawMessage
	switch {
	case len(body) > 0 && body[0] == '[':
		if json.Unmarshal(body, &raw) != nil {
			return queue.KVBad("operations", "kv_bad_body", "the body must be an array of ops or {\"operations\":[...]}")
		}
	default:
		var o map[string]json.RawMessage
		if json.Unmarshal(body, &o) != nil || o == nil || o["operations"] == nil ||
			json.Unmarshal(o["operations"], &raw) != nil || raw == nil {
			return queue.KVBad("operations", "kv_bad_body", "the body must be an array of ops or {\"operations\":[...]}")
		}
	}
	ops, err := queue.ParseKVOps(raw, "operations", queue.KVCallLimits)
	if err != nil {
		return err
	}
	out, err := s.broker.KV(r.Context(), scopeOf(r), ops)
	if err != nil {
		return err
	}
	if out.Failed != nil {
		return writeJSON(w, http.StatusOK, kvPreconditionBody(out.Failed))
	}
	results := make([]kvResultBody, len(out.Results))
	for i, res := range out.Results {
		results[i] = kvResult(res)
	}
	return writeJSON(w, http.StatusOK, struct {
		Results []kvResultBody `json:"results"`
	}{results})
}

// handleKVPath is GET|PUT|DELETE /api/v1/kv/{ns}/*: one get, put or delete of the key
// in the catch-all (percent-escapes decoded once).
func (s *Server) handleKVPath(w http.ResponseWriter, r *http.Request) error {
	if err := kvNoQuery(r); err != nil {
		return err
	}
	ns, key, err := kvPathKey(r)
	if err != nil {
		return err
	}
	fields := map[string]json.RawMessage{}
	op := queue.KVGet
	switch r.Method {
	case http.MethodPut:
		op = queue.KVPut
		if fields, err = kvPathBody(r, false); err != nil {
			return err
		}
	case http.MethodDelete:
		op = queue.KVDelete
		if fields, err = kvPathBody(r, true); err != nil {
			return err
		}
	}
	fields["op"], _ = json.Marshal(op)
	fields["ns"], _ = json.Marshal(ns)
	fields["key"], _ = json.Marshal(key)
	raw, _ := json.Marshal(fields) // RawMessages and strings always encode
	parsed, err := queue.ParseKVOp(raw, "body")
	if err != nil {
		return err
	}
	out, err := s.broker.KV(r.Context(), scopeOf(r), []queue.KVOp{parsed})
	if err != nil {
		return err
	}
	if out.Failed != nil {
		return writeJSON(w, http.StatusOK, kvPreconditionBody(out.Failed))
	}
	res := out.Results[0]
	if res.Kind == queue.KVGet && res.Found {
		w.Header().Set("ETag", `"`+strconv.FormatInt(res.Row.Version, 10)+`"`)
	}
	return writeJSON(w, http.StatusOK, kvResult(res))
}

// kvPathKey returns the namespace and the catch-all key of a path route, each decoded
// once when the URL carried escapes.
func kvPathKey(r *http.Request) (ns, key string, err error) {
	ns, key = chi.URLParam(r, "ns"), chi.URLParam(r, "*")
	if r.URL.RawPath != "" {
		if ns, err = url.PathUnescape(ns); err != nil {
			return "", "", queue.KVBad("ns", "kv_bad_namespace", "the namespace is not a valid path segment")
		}
		if key, err = url.PathUnescape(key); err != nil {
			return "", "", queue.KVBad("key", "kv_bad_key", "the key is not validly percent-encoded")
		}
	}
	if err := queue.CheckKVNamespace(ns, "ns"); err != nil {
		return "", "", err
	}
	return ns, key, queue.CheckKVKey(key, "key")
}

// kvPathBody reads a path route's body: an object (PUT), or for DELETE also nothing or
// null. op, ns, namespace and key belong in the path.
func kvPathBody(r *http.Request, optional bool) (map[string]json.RawMessage, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	fields := map[string]json.RawMessage{}
	if optional && (len(body) == 0 || bytes.Equal(body, []byte("null"))) {
		return fields, nil
	}
	if json.Unmarshal(body, &fields) != nil || fields == nil {
		return nil, queue.KVBad("body", "kv_bad_body", "the body must be a JSON object")
	}
	for _, f := range []string{"op", "ns", "namespace", "key"} {
		if _, ok := fields[f]; ok {
			return nil, queue.KVBad(f, "kv_field_in_path", "%s belongs in the path, not in the body", f)
		}
	}
	if optional { // DELETE: only expect and required count
		kept := map[string]json.RawMessage{}
		// A tenant field is kept for ParseKVOp to refuse, as on PUT: never dropped.
		for _, f := range []string{"expect", "required", "tenant", "tenantId", "_tenant"} {
			if v, ok := fields[f]; ok {
				kept[f] = v
			}
		}
		return kept, nil
	}
	return fields, nil
}

// kvNoQuery refuses any query string: keys and prefixes never travel in URLs.
func kvNoQuery(r *http.Request) error {
	if r.URL.RawQuery != "" || r.URL.ForceQuery {
		return queue.KVBad("query", "kv_no_query_string", "KV routes take no query string; keys and prefixes go in the path or body")
	}
	return nil
}

// handleKVNamespaces is GET /api/v1/resources/kv/namespaces.
func (s *Server) handleKVNamespaces(w http.ResponseWriter, r *http.Request) error {
	if err := kvNoQuery(r); err != nil {
		return err
	}
	list, err := s.broker.KVNamespaces(r.Context(), scopeOf(r))
	if err != nil {
		return err
	}
	type nsBody struct {
		Namespace string `json:"namespace"`
		Keys      int64  `json:"keys"`
	}
	out := make([]nsBody, len(list))
	for i, n := range list {
		out[i] = nsBody{n.Name, n.Keys}
	}
	return writeJSON(w, http.StatusOK, struct {
		Namespaces []nsBody `json:"namespaces"`
	}{out})
}

// handleKVList is POST /api/v1/resources/kv/list: a keyset page of one namespace.
func (s *Server) handleKVList(w http.ResponseWriter, r *http.Request) error {
	if err := kvNoQuery(r); err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var o map[string]json.RawMessage
	if json.Unmarshal(body, &o) != nil || o == nil {
		return queue.KVBad("body", "kv_bad_body", "the body must be a JSON object")
	}
	req, err := kvListRequest(o)
	if err != nil {
		return err
	}
	page, err := s.broker.KVList(r.Context(), scopeOf(r), req)
	if err != nil {
		return err
	}
	rows := kvRows(page.Rows, req.KeysOnly, true)
	return writeJSON(w, http.StatusOK, struct {
		Rows      []kvRowBody     `json:"rows"`
		Truncated bool            `json:"truncated"`
		NextAfter json.RawMessage `json:"nextAfter"`
		Bytes     int             `json:"bytes"`
	}{rows, page.Truncated, kvNextAfter(page.NextAfter), page.Bytes})
}

func kvListRequest(o map[string]json.RawMessage) (queue.KVListRequest, error) {
	var req queue.KVListRequest
	for _, t := range []string{"tenant", "tenantId", "_tenant"} {
		if _, ok := o[t]; ok {
			return req, queue.KVBad(t, "kv_bad_body", "%s: the tenant comes from the request, never from the body", t)
		}
	}
	if json.Unmarshal(o["namespace"], &req.NS) != nil || o["namespace"] == nil || string(o["namespace"]) == "null" {
		return req, queue.KVBad("namespace", "kv_bad_body", "namespace is required (a string)")
	}
	if err := queue.CheckKVNamespace(req.NS, "namespace"); err != nil {
		return req, err
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"prefix", &req.Prefix}, {"after", &req.After}} {
		raw := o[f.name]
		if raw == nil || string(raw) == "null" {
			continue
		}
		if json.Unmarshal(raw, f.dst) != nil {
			return req, queue.KVBad(f.name, "kv_bad_body", "%s must be a string", f.name)
		}
	}
	req.Limit = queue.KVLimit(o["limit"])
	for _, f := range []struct {
		name string
		dst  *bool
	}{{"keysOnly", &req.KeysOnly}, {"includeExpired", &req.IncludeExpired}} {
		raw := o[f.name]
		if raw == nil || string(raw) == "null" {
			continue
		}
		if json.Unmarshal(raw, f.dst) != nil {
			return req, queue.KVBad(f.name, "kv_bad_body", "%s must be a boolean", f.name)
		}
	}
	return req, nil
}
