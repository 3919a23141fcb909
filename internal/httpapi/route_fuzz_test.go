package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/store"
)

// The route fuzz test sends hostile requests to every route the router registers
// (chi.Walk, so a new route is covered without touching this file) and checks the
// contract of every answer:
//
//   - never a 5xx;
//   - every 4xx is JSON (Content-Type application/json) with a string "error";
//   - every 400 names the offending input in a non-empty "field", unless the body as
//     a whole is to blame: a 400 may omit the field only when the request's body is
//     not a JSON object (empty, not JSON, or another JSON value), the one case where
//     there is no field to name. Unknown routes and methods (404) carry no field
//     either; they are not 400s.
//
// Requests are generated up front from a fixed seed, so a failure reproduces; they are
// then sent by a few workers. Routes under /api/v1/system/maintenance run last: they
// switch cluster-wide modes on, which would make pushes and pops answer deliberate
// 503 refusals.

// routeFuzzRequestsPerRoute times the number of routes is the size of the run.
const routeFuzzRequestsPerRoute = 40

// routeFuzzRequestTimeout bounds one request: a request still unanswered by then is a
// failure (a hang), not a reason to stall the run.
const routeFuzzRequestTimeout = 10 * time.Second

// fuzzRoute is a registered route.
type fuzzRoute struct {
	method, pattern string
}

// fuzzRequest is one generated request; rawPath and rawQuery go on the wire as they are.
type fuzzRequest struct {
	route             fuzzRoute
	rawPath, rawQuery string
	body              []byte
}

func (fr fuzzRequest) String() string {
	return fmt.Sprintf("%s %s?%s body=%q (route %s)", fr.route.method, clip(fr.rawPath), clip(fr.rawQuery),
		clip(string(fr.body)), fr.route.pattern)
}

// clip shortens s for a failure message.
func clip(s string) string {
	const limit = 400
	if len(s) <= limit {
		return s
	}
	return s[:limit] + fmt.Sprintf("…(%d bytes)", len(s))
}

// bodyIsObject reports whether the body is a JSON object, which a 400 must then
// name a field of.
func (fr fuzzRequest) bodyIsObject() bool {
	b := bytes.TrimSpace(fr.body)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// registeredRoutes lists every method and pattern of the server's router.
func registeredRoutes(t testing.TB) []fuzzRoute {
	t.Helper()
	var routes []fuzzRoute
	err := chi.Walk(New(Options{}, nil, nil).router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routes = append(routes, fuzzRoute{method: method, pattern: route})
		return nil
	})
	require.NoError(t, err)
	slices.SortFunc(routes, func(a, b fuzzRoute) int { return strings.Compare(a.method+a.pattern, b.method+b.pattern) })
	require.Greater(t, len(routes), 50, "the walk found the routes")
	return routes
}

func TestRouteFuzz(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	g := newFuzzGen(t, rand.New(rand.NewPCG(0x9e3779b97f4a7c15, 0x2545f4914f6cdd1d)), b.fuzzSeeds(t))

	routes := registeredRoutes(t)
	var first, last []fuzzRequest
	for _, rt := range routes {
		for range routeFuzzRequestsPerRoute {
			fr := g.request(rt)
			if strings.HasPrefix(rt.pattern, "/api/v1/system/maintenance") {
				last = append(last, fr)
			} else {
				first = append(first, fr)
			}
		}
	}
	// Unrouted paths and methods under the API prefixes.
	for range routeFuzzRequestsPerRoute {
		first = append(first, g.request(fuzzRoute{method: http.MethodGet, pattern: "/api/v1/{x}/{y}/{z}"}),
			g.request(fuzzRoute{method: http.MethodPut, pattern: "/api/v1/push"}),
			g.request(fuzzRoute{method: http.MethodPatch, pattern: "/streams/v1/{x}"}))
	}
	failures := b.runFuzz(t, first)
	failures = append(failures, b.runFuzz(t, last)...)
	t.Logf("%d requests over %d routes", len(first)+len(last), len(routes))
	// What the hostile requests stored must not break a read: every GET route, its
	// path filled with the seeded names, still answers without a 5xx (an infinite
	// subscription start once turned the group listings and /status into 500s).
	var reads []fuzzRequest
	for _, rt := range routes {
		if rt.method != http.MethodGet || isPop(rt) {
			continue
		}
		reads = append(reads, fuzzRequest{route: rt, rawPath: fillPattern(rt.pattern, g.seededSegment)})
	}
	failures = append(failures, b.runFuzz(t, reads)...)
	for i, f := range failures {
		if i == 30 {
			t.Errorf("... and %d more", len(failures)-i)
			break
		}
		t.Error(f)
	}
}

// FuzzRoute sends one request built from the fuzzer's values to one route; run with
// go test -fuzz FuzzRoute ./internal/httpapi/.
func FuzzRoute(f *testing.F) {
	// As setup, but quiet: a fuzz target must not log through f.
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(f), MaxConns: 8})
	require.NoError(f, err)
	f.Cleanup(st.Close)
	logger := slog.New(slog.DiscardHandler)
	srv := httptest.NewServer(New(Options{}, broker.New(broker.DefaultConfig(), st, logger), logger).Handler())
	f.Cleanup(srv.Close)
	b := &testBundle{srv: srv}
	routes := registeredRoutes(f)
	f.Add(uint16(0), "q", "queue", "fz", []byte(`{"items":[{"queue":"fz"}]}`))
	f.Add(uint16(7), "\x00", "consumerGroup", "\xff", []byte("{\"queue\":\"a\\u0000\"}"))
	f.Add(uint16(40), strings.Repeat("é", 300), "limit", "1e99", []byte(`[{"a":null}]`))
	f.Fuzz(func(t *testing.T, route uint16, pathValue, queryName, queryValue string, body []byte) {
		rt := routes[int(route)%len(routes)]
		fr := fuzzRequest{route: rt, rawPath: fillPattern(rt.pattern, func(string) string { return url.PathEscape(pathValue) }),
			rawQuery: url.QueryEscape(queryName) + "=" + url.QueryEscape(queryValue), body: body}
		if strings.HasPrefix(rt.pattern, "/api/v1/system/maintenance") && rt.method == http.MethodPost {
			t.Skip("would switch a maintenance mode on for the requests that follow")
		}
		if isPop(rt) && queryName == "wait" {
			t.Skip("a long-poll waits for its timeout")
		}
		if msg := b.fuzzOne(t, fr); msg != "" {
			t.Fatal(msg)
		}
	})
}

// runFuzz sends reqs with a few workers and returns the failures.
func (b *testBundle) runFuzz(t *testing.T, reqs []fuzzRequest) []string {
	t.Helper()
	const workers = 4
	var (
		mu       sync.Mutex
		failures []string
		wg       sync.WaitGroup
	)
	next := make(chan fuzzRequest)
	for range workers {
		wg.Go(func() {
			for fr := range next {
				if msg := b.fuzzOne(t, fr); msg != "" {
					mu.Lock()
					failures = append(failures, msg)
					mu.Unlock()
				}
			}
		})
	}
	for _, fr := range reqs {
		next <- fr
	}
	close(next)
	wg.Wait()
	return failures
}

// fuzzOne sends fr and returns what is wrong with the answer ("" if nothing).
func (b *testBundle) fuzzOne(t testing.TB, fr fuzzRequest) string {
	u, err := url.Parse(b.srv.URL)
	if err != nil {
		return err.Error()
	}
	u.Opaque, u.RawQuery = fr.rawPath, fr.rawQuery // sent verbatim
	// No route may keep a request this long without a long-poll (never generated).
	ctx, cancel := context.WithTimeout(t.Context(), routeFuzzRequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, fr.route.method, b.srv.URL, bytes.NewReader(fr.body))
	if err != nil {
		return err.Error()
	}
	req.URL = u
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.srv.Client().Do(req)
	if err != nil {
		return fmt.Sprintf("%s: %v", fr, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Sprintf("%s: read answer: %v", fr, err)
	}
	fail := func(why string) string {
		return fmt.Sprintf("%s\n\t%s: %d %s", fr, why, resp.StatusCode, clip(string(data)))
	}
	switch {
	case resp.StatusCode >= 500:
		return fail("5xx")
	case resp.StatusCode < 400:
		return ""
	}
	if ct := resp.Header.Get("Content-Type"); ct != contentTypeJSON {
		return fail("4xx with Content-Type " + strconv.Quote(ct))
	}
	if fr.route.method == http.MethodHead {
		return "" // no body to look at
	}
	var body map[string]any
	if err := json.Unmarshal(data, &body); err != nil {
		return fail("4xx body is not a JSON object")
	}
	if msg, ok := body["error"].(string); !ok || msg == "" {
		return fail(`4xx without a string "error"`)
	}
	if resp.StatusCode == http.StatusBadRequest && fr.bodyIsObject() {
		if field, ok := body["field"].(string); !ok || field == "" {
			return fail(`400 without "field" for a JSON object body`)
		}
	}
	return ""
}

// fuzzSeeded are the valid values of a seeded database.
type fuzzSeeded struct {
	partitionID, leaseID, messageID, queryID string
}

// fuzzSeeds stores a queue with a leased message and a stream query, and returns the
// valid values the generator mixes in, so requests also get past the lookups into
// deeper code.
func (b *testBundle) fuzzSeeds(t *testing.T) fuzzSeeded {
	t.Helper()
	res := b.pushOne(t, "fz", "p1", "fz-tx", `{"n":1}`)
	pop := b.popOne(t, "fz", "batch=1")
	msgs := pop["messages"].([]any)
	require.Len(t, msgs, 1)
	r := b.post(t, "/streams/v1/queries", `{"name":"sq","source_queue":"fz","sink_queue":"fz-sink","config_hash":"h1"}`)
	requireStatus(t, http.StatusOK, r)
	return fuzzSeeded{partitionID: msgs[0].(map[string]any)["partitionId"].(string), leaseID: pop["leaseId"].(string),
		messageID: res["message_id"].(string), queryID: r.object(t)["query_id"].(string)}
}

// fuzzBodies are valid bodies of the routes that read one ($P, $L and $S stand for the
// seeded partition, lease and stream query ids). The generator mutates them, so most
// requests are valid but for one or two values and reach the code behind the
// decoding; a route without an entry gets random objects only.
var fuzzBodies = map[string]string{
	"POST /api/v1/configure": `{"queue":"fz2","namespace":"ns","task":"t","options":{"leaseTime":30,"retryLimit":3,` +
		`"priority":1,"ttl":60,"maxSize":100,"encryptionEnabled":false,"deadLetterQueue":true}}`,
	"POST /api/v1/push": `{"items":[{"queue":"fz","partition":"p1","payload":{"n":1},"transactionId":"x1",` +
		`"traceId":"00000000-0000-0000-0000-000000000001"},{"queue":"fz3","payload":"s"}]}`,
	"POST /api/v1/ack": `{"transactionId":"fz-tx","partitionId":"$P","leaseId":"$L","status":"failed",` +
		`"consumerGroup":"__QUEUE_MODE__","error":"e"}`,
	"POST /api/v1/ack/batch": `{"consumerGroup":"g1","acknowledgments":[{"transactionId":"fz-tx","partitionId":"$P",` +
		`"leaseId":"$L","status":"completed","error":"x"}]}`,
	"POST /api/v1/lease/{leaseId}/extend": `{"seconds":30}`,
	"POST /api/v1/transaction": `{"operations":[{"type":"push","items":[{"queue":"fz","partition":"p1","payload":{"a":1},` +
		`"transactionId":"tx-op"}]},{"type":"ack","transactionId":"fz-tx","partitionId":"$P","consumerGroup":"g1",` +
		`"status":"completed"}]}`,
	"POST /api/v1/traces": `{"transactionId":"fz-tx","partitionId":"$P","data":{"x":1},"consumerGroup":"g1",` +
		`"eventType":"info","traceNames":["n1","n2"]}`,
	"POST /api/v1/consumer-groups/{group}/subscription":                               `{"subscriptionTimestamp":"2026-01-02T15:04:05Z"}`,
	"POST /api/v1/consumer-groups/{group}/queues/{queue}/seek":                        `{"timestamp":"2026-01-02T15:04:05Z","toEnd":false}`,
	"POST /api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek": `{}`,
	"POST /api/v1/system/maintenance":                                                 `{"enabled":false}`,
	"POST /api/v1/system/maintenance/pop":                                             `{"enabled":false}`,
	"POST /streams/v1/queries":                                                        `{"name":"sq2","source_queue":"fz","sink_queue":"fz-sink","config_hash":"h1","reset":false}`,
	"POST /streams/v1/cycle": `{"query_id":"$S","partition_id":"$P","consumer_group":"streams.q1","state_ops":[` +
		`{"type":"upsert","key":"k","value":{"sum":3}},{"type":"delete","key":"old"}],"push_items":[{"queue":"fz-sink",` +
		`"partition":"k","payload":{"v":1}}],"ack":{"transactionId":"fz-tx","leaseId":"$L","status":"completed","count":1},` +
		`"release_lease":true}`,
	"POST /streams/v1/state/get": `{"query_id":"$S","partition_id":"$P","keys":["k"],"key_prefix":"k","ripe_at_or_before":1700000000000}`,
}

// fuzzGen generates hostile requests from one random source.
type fuzzGen struct {
	rng    *rand.Rand
	seeds  []string
	seeded fuzzSeeded
	bodies map[string]any // fuzzBodies decoded, placeholders filled
}

func newFuzzGen(t testing.TB, rng *rand.Rand, sd fuzzSeeded) *fuzzGen {
	t.Helper()
	g := &fuzzGen{rng: rng, seeded: sd, bodies: map[string]any{}, seeds: []string{"fz", "p1", "Default", "fz-tx", "fz-sink",
		sd.partitionID, sd.leaseID, sd.messageID, sd.queryID, "__QUEUE_MODE__", "g1", "sq", "n1",
		"2026-01-02T15:04:05Z", "now", "new", "completed", "failed", "minute", "10", "0"}}
	fill := strings.NewReplacer("$P", sd.partitionID, "$L", sd.leaseID, "$S", sd.queryID)
	for route, body := range fuzzBodies {
		dec := json.NewDecoder(strings.NewReader(fill.Replace(body)))
		dec.UseNumber()
		var v any
		require.NoError(t, dec.Decode(&v), route)
		g.bodies[route] = v
	}
	return g
}

// hostileStrings are values every text input must survive.
var hostileStrings = []string{
	"", " ", "\x00", "a\x00b", "\xff", "a\xffb", "\xc3", "\xed\xa0\x80", "..", ".", "/", "a/b", "%", "%00", "%ff",
	"'; DROP TABLE queen.queues; --", `" OR 1=1 --`, "\\", `\u0000`, "😀", "é", "\u2028", "\t\n", "null",
	"true", "-1", "0", "1", "1e999", "99999999999999999999", "-9223372036854775809", "NaN", "0x10", "1.5",
	strings.Repeat("q", 255), strings.Repeat("q", 256), strings.Repeat("é", 256), strings.Repeat("x", 5000),
	"00000000-0000-0000-0000-000000000000", "not-a-uuid", "2026-13-45", "1970-01-01", "9999-12-31T23:59:59Z",
	"infinity", "-infinity", "9999-12-31T23:59:59-23:59", "0000-01-01T00:00:00Z",
}

// queryNames are the query parameters the API reads, plus some it does not.
var queryNames = []string{
	"queue", "partition", "namespace", "ns", "task", "consumerGroup", "subscriptionMode", "subscriptionFrom",
	"batch", "timeout", "wait", "partitions", "autoAck", "limit", "offset", "from", "to", "status", "interval",
	"hostname", "workerId", "minLagSeconds", "deleteMetadata", "unknown", "", "\x00", "\xff",
}

// bodyKeys are the JSON keys the API reads, plus one it does not.
var bodyKeys = []string{
	"items", "queue", "partition", "payload", "transactionId", "partitionId", "leaseId", "traceId", "consumerGroup",
	"status", "error", "acknowledgments", "operations", "type", "namespace", "task", "options", "seconds",
	"subscriptionTimestamp", "toEnd", "timestamp", "data", "eventType", "traceNames", "enabled", "name",
	"source_queue", "sink_queue", "config_hash", "reset", "query_id", "partition_id", "consumer_group",
	"state_ops", "push_items", "ack", "release_lease", "keys", "key_prefix", "ripe_at_or_before", "key", "value",
	"count", "leaseTime", "retryLimit", "encryptionEnabled", "deadLetterQueue", "unknown",
}

func (g *fuzzGen) pick(n int) int { return g.rng.IntN(n) }

// text is a hostile or a valid string.
func (g *fuzzGen) text() string {
	switch g.pick(4) {
	case 0, 1:
		return g.seeds[g.pick(len(g.seeds))]
	case 2:
		// A valid value with hostile bytes around it.
		return g.seeds[g.pick(len(g.seeds))] + hostileStrings[g.pick(len(hostileStrings))]
	}
	return hostileStrings[g.pick(len(hostileStrings))]
}

// request builds one request for rt.
func (g *fuzzGen) request(rt fuzzRoute) fuzzRequest {
	fr := fuzzRequest{route: rt, rawPath: fillPattern(rt.pattern, func(string) string { return g.pathSegment() })}
	fr.rawQuery = g.query(rt)
	switch tmpl, ok := g.bodies[rt.method+" "+rt.pattern]; {
	case ok && g.pick(4) != 0:
		fr.body = g.mutated(tmpl)
	case rt.method != http.MethodGet && rt.method != http.MethodHead:
		fr.body = g.body()
	case g.pick(8) == 0:
		fr.body = g.body() // a GET with a body: ignored, never fatal
	}
	return fr
}

// mutated renders a valid body with one to three of its values replaced by hostile
// ones, removed, or joined by an unknown key.
func (g *fuzzGen) mutated(tmpl any) []byte {
	v := tmpl
	for range 1 + g.pick(3) {
		v = g.mutate(v)
	}
	var buf bytes.Buffer
	writeFuzzJSON(&buf, v)
	return buf.Bytes()
}

// mutate returns a copy of v with one node changed; containers are copied on the way
// down, so the template stays intact.
func (g *fuzzGen) mutate(v any) any {
	hostile := func() any {
		var buf bytes.Buffer
		g.value(&buf, 2)
		return json.RawMessage(buf.Bytes())
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x)+1)
		for k, e := range x {
			out[k] = e
		}
		keys := slices.Sorted(maps.Keys(out))
		if len(keys) == 0 || g.pick(6) == 0 {
			out[bodyKeys[g.pick(len(bodyKeys))]] = hostile()
			return out
		}
		k := keys[g.pick(len(keys))]
		switch g.pick(6) {
		case 0:
			delete(out, k)
		case 1:
			out[k] = hostile()
		default:
			out[k] = g.mutate(out[k])
		}
		return out
	case []any:
		out := slices.Clone(x)
		if len(out) == 0 || g.pick(6) == 0 {
			return append(out, hostile())
		}
		i := g.pick(len(out))
		out[i] = g.mutate(out[i])
		return out
	case string:
		if g.pick(3) == 0 {
			return hostile()
		}
		return g.text()
	}
	return hostile()
}

// writeFuzzJSON renders a decoded template (keys sorted, strings with writeJSONString,
// json.RawMessage as it is).
func writeFuzzJSON(buf *bytes.Buffer, v any) {
	switch x := v.(type) {
	case map[string]any:
		buf.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJSONString(buf, k)
			buf.WriteByte(':')
			writeFuzzJSON(buf, x[k])
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeFuzzJSON(buf, e)
		}
		buf.WriteByte(']')
	case string:
		writeJSONString(buf, x)
	case json.RawMessage:
		buf.Write(x)
	case json.Number:
		buf.WriteString(x.String())
	case bool:
		buf.WriteString(strconv.FormatBool(x))
	case nil:
		buf.WriteString("null")
	default:
		panic(fmt.Sprintf("writeFuzzJSON: %T", v))
	}
}

// pathSegment is one escaped path segment.
func (g *fuzzGen) pathSegment() string {
	switch g.pick(10) {
	case 0:
		// Raw forms the escaping would never produce.
		return []string{"..", ".", "%2F", "a%2Fb", "%2e%2e", "%00", "%ff", "%C3%28", "%F0%9F%98%80", "%25", "%20"}[g.pick(11)]
	case 1:
		return ""
	}
	return url.PathEscape(g.text())
}

// query is a raw query string: a few parameters from queryNames with hostile values,
// some escaped in ways url.QueryEscape never produces.
func (g *fuzzGen) query(rt fuzzRoute) string {
	var parts []string
	for range max(g.pick(7)-3, 0) {
		name := queryNames[g.pick(len(queryNames))]
		value := g.text()
		if name == "wait" && isPop(rt) && (value == "true" || value == "1") {
			value = "false" // a long-poll would wait for its timeout
		}
		switch g.pick(8) {
		case 0:
			parts = append(parts, url.QueryEscape(name)+"="+[]string{"%zz", "%", "%f", "a%00", "%ff%fe", "a=b=c", "+"}[g.pick(7)])
		case 1:
			parts = append(parts, url.QueryEscape(name))
		default:
			parts = append(parts, url.QueryEscape(name)+"="+url.QueryEscape(value))
		}
	}
	return strings.Join(parts, "&")
}

// body is a hostile body: mostly a JSON object with the API's keys and hostile
// values, sometimes not an object or not JSON at all.
func (g *fuzzGen) body() []byte {
	switch g.pick(12) {
	case 0:
		return nil
	case 1:
		return [][]byte{[]byte("not json"), []byte("{"), []byte(`{"items":`), []byte("\xff\xfe"), []byte(`{"a":1}x`),
			[]byte(strings.Repeat("[", 20000) + strings.Repeat("]", 20000))}[g.pick(6)]
	case 2:
		var buf bytes.Buffer
		g.value(&buf, 2)
		return buf.Bytes() // any JSON value, rarely an object
	}
	var buf bytes.Buffer
	g.object(&buf, 3)
	return buf.Bytes()
}

// object writes a JSON object of a few bodyKeys with hostile values.
func (g *fuzzGen) object(buf *bytes.Buffer, depth int) {
	buf.WriteByte('{')
	for i := range 1 + g.pick(5) {
		if i > 0 {
			buf.WriteByte(',')
		}
		key := bodyKeys[g.pick(len(bodyKeys))]
		if g.pick(20) == 0 {
			key = g.text()
		}
		writeJSONString(buf, key)
		buf.WriteByte(':')
		g.value(buf, depth-1)
	}
	buf.WriteByte('}')
}

// value writes a hostile JSON value.
func (g *fuzzGen) value(buf *bytes.Buffer, depth int) {
	n := 9
	if depth <= 0 {
		n = 6 // scalars only
	}
	switch g.pick(n) {
	case 0, 1:
		writeJSONString(buf, g.text())
	case 2:
		buf.WriteString([]string{"0", "-1", "1", "1.5", "-0", "1e400", "99999999999999999999999", "9007199254740993",
			"-9223372036854775809", "2147483648", "1e-400"}[g.pick(11)])
	case 3:
		buf.WriteString([]string{"true", "false"}[g.pick(2)])
	case 4:
		buf.WriteString("null")
	case 5:
		buf.WriteString(`"\ud800"`) // a lone surrogate escape
	case 6, 7:
		buf.WriteByte('[')
		for i := range g.pick(4) {
			if i > 0 {
				buf.WriteByte(',')
			}
			if g.pick(2) == 0 {
				g.object(buf, depth-1)
			} else {
				g.value(buf, depth-1)
			}
		}
		buf.WriteByte(']')
	default:
		if g.pick(10) == 0 {
			d := 1 + g.pick(600) // deep nesting
			buf.WriteString(strings.Repeat(`{"a":`, d) + "1" + strings.Repeat("}", d))
			return
		}
		g.object(buf, depth-1)
	}
}

// writeJSONString writes s as a JSON string the way a hostile client would: quotes,
// backslashes and control characters escaped (NUL as \u0000), every other byte raw, so
// invalid UTF-8 reaches the server as it is.
func writeJSONString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			buf.WriteByte('\\')
			buf.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(buf, `\u%04x`, c)
		default:
			buf.WriteByte(c)
		}
	}
	buf.WriteByte('"')
}

// fillPattern replaces every {param} segment of a chi pattern with seg(param).
func fillPattern(pattern string, seg func(param string) string) string {
	parts := strings.Split(pattern, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			parts[i] = seg(strings.Trim(p, "{}"))
		}
	}
	return strings.Join(parts, "/")
}

// seededSegment is a path segment naming what fuzzSeeds stored for param, or the
// seeded queue's name for a param it stored nothing for.
func (g *fuzzGen) seededSegment(param string) string {
	switch param {
	case "partition":
		return "p1"
	case "group":
		return "g1"
	case "partitionId":
		return g.seeded.partitionID
	case "leaseId":
		return g.seeded.leaseID
	case "transactionId":
		return "fz-tx"
	}
	return "fz"
}

// isPop reports the routes that long-poll with wait=true.
func isPop(rt fuzzRoute) bool { return strings.HasPrefix(rt.pattern, "/api/v1/pop") }
