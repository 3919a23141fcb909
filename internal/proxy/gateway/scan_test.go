package gateway

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/jsonscan"
)

// requireSamePush checks scanPush against decodePush on one body and returns whether
// the fast path took it.
func requireSamePush(t *testing.T, raw []byte) bool {
	t.Helper()
	fast, ok := scanPush(raw)
	slow, err := decodePush(raw)
	if !ok {
		return false
	}
	require.NoError(t, err, "fast path accepted a body the decoder rejects: %q", raw)
	require.Equal(t, slow.messages, fast.messages, "messages of %q", raw)
	require.Equal(t, slow.payloadBytes, fast.payloadBytes, "payload bytes of %q", raw)
	require.Equal(t, slow.queues, fast.queues, "queues of %q", raw)
	return true
}

// requireSameAnswer checks scanPushAnswer against tallyPushAnswer on one answer and
// returns whether the fast path took it.
func requireSameAnswer(t *testing.T, raw []byte) bool {
	t.Helper()
	fast, ok := scanPushAnswer(raw)
	slow, err := tallyPushAnswer(raw)
	if !ok {
		return false
	}
	require.NoError(t, err, "fast path accepted an answer the decoder rejects: %q", raw)
	require.Equal(t, slow, fast, "tally of %q", raw)
	return true
}

func pushBody(items, payloadBytes int) []byte {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		pad := strings.Repeat("x", max(payloadBytes-40, 0))
		b.WriteString(`{"queue":"bench-` + strconv.Itoa(i%3) + `","partition":"p1","transactionId":"tx-` +
			strconv.Itoa(i) + `","payload":{"n":` + strconv.Itoa(i) + `,"ok":true,"tags":["a","b"],"pad":"` + pad + `"}}`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func pushAnswer(items int) []byte {
	results := make([]api.PushResult, items)
	trace := "6c7b3a5e-0c49-4b7e-9d43-1f0a3f2d1e55"
	statuses := []string{api.PushStatusQueued, api.PushStatusDuplicate, api.PushStatusBuffered, api.PushStatusFailed}
	for i := range results {
		results[i] = api.PushResult{Index: i, TransactionID: "tx-" + strconv.Itoa(i), Status: statuses[i%len(statuses)],
			MessageID: "0197a9f2-7c1e-7d3a-8f4e-" + strconv.Itoa(100000000000+i), PartitionID: "0197a9f2-0000-7000-8000-000000000001",
			TraceID: &trace, QueueName: "bench", Queue: "bench", Partition: "Default", Error: "boom"}
	}
	raw, err := json.Marshal(results)
	if err != nil {
		panic(err)
	}
	return raw
}

func TestScanPush(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		body string
		ok   bool
	}{
		{"Empty object", `{}`, true},
		{"Empty items", ` {"items" : [ ] } `, true},
		{"NullItems", `{"items":null}`, true},
		{"Plain", `{"items":[{"queue":"a","payload":{"x":1}},{"queue":"b","payload":"s"},{"queue":"a"}]}`, true},
		{"KeyOrderAndExtraKeys", `{"x":[1,{"items":2}],"items":[{"payload":[1,2],"partition":"p","queue":"q"}],"y":null}`, true},
		{"FoldedKeys", `{"ITEMS":[{"Queue":"a","PayLoad":true}]}`, true},
		{"PayloadWhitespace", "{\"items\":[{\"payload\": \n\t [ 1 , 2 ] \r\n,\"queue\":\"a\"}]}", true},
		{"PayloadScalars", `{"items":[{"payload":null},{"payload":false},{"payload":-0.5e+10},{"payload":0},{"payload":1E2}]}`, true},
		{"PayloadEscapes", `{"items":[{"queue":"a","payload":"\"\\\/\b\f\n\r\t\u00e9}]"}]}`, true},
		{"PayloadNested", `{"items":[{"payload":{"a":[{"b":[[]]},{}],"c\"d":{"e":"]}"}}}]}`, true},
		{"MissingQueue", `{"items":[{"payload":1},{"queue":""}]}`, true},
		{"UnicodeQueue", `{"items":[{"queue":"ünï","payload":1}]}`, true},
		{"DuplicateItems", `{"items":[{"queue":"a"}],"items":[{"payload":1}]}`, false},
		{"CaseVariantIsAnotherKey", `{"items":[],"Items":[{"queue":"x"}]}`, true},
		{"DuplicateQueue", `{"items":[{"queue":"a","queue":"b"}]}`, false},
		{"EscapedKey", `{"it\u0065ms":[]}`, false},
		{"NonASCIIKeyIsAnotherKey", `{"itemſ":[{"queue":"a"}]}`, true},
		{"EscapedQueue", `{"items":[{"queue":"a\u0062"}]}`, true},
		{"InvalidUTF8Queue", "{\"items\":[{\"queue\":\"a\xff\"}]}", false},
		{"NullQueue", `{"items":[{"queue":null}]}`, false},
		{"NumberQueue", `{"items":[{"queue":1}]}`, false},
		{"NullItem", `{"items":[null]}`, false},
		{"ScalarItem", `{"items":[1]}`, false},
		{"ItemsObject", `{"items":{}}`, false},
		{"TopLevelArray", `[]`, false},
		{"TopLevelNull", `null`, false},
		{"TrailingComma", `{"items":[{"queue":"a"},]}`, false},
		{"TrailingGarbage", `{"items":[]}x`, false},
		{"TwoDocuments", `{} {}`, false},
		{"LeadingZero", `{"items":[{"payload":01}]}`, false},
		{"BareMinus", `{"items":[{"payload":-}]}`, false},
		{"BadFraction", `{"items":[{"payload":1.}]}`, false},
		{"BadExponent", `{"items":[{"payload":1e}]}`, false},
		{"BadLiteral", `{"items":[{"payload":nul}]}`, false},
		{"BadEscape", `{"items":[{"payload":"\x"}]}`, false},
		{"ShortUnicodeEscape", `{"items":[{"payload":"\u12"}]}`, false},
		{"ControlInString", "{\"items\":[{\"payload\":\"a\nb\"}]}", false},
		{"Unterminated", `{"items":[{"payload":"abc`, false},
		{"MissingColon", `{"items"[]}`, false},
		{"Empty", ``, false},
		{"TooDeep", `{"items":[{"payload":` + strings.Repeat("[", jsonscan.MaxDepth+1) + strings.Repeat("]", jsonscan.MaxDepth+1) + `}]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.ok, requireSamePush(t, []byte(tc.body)))
		})
	}
}

// Keys match exactly, as the broker reads them: a case variant of "queue" is another
// key, so the name the allowlist and metering see is the one the broker stores.
func TestPushKeysMatchExactly(t *testing.T) {
	for _, body := range []string{
		`{"items":[{"queue":"a","QUEUE":"b","payload":1}]}`,
		`{"items":[{"QUEUE":"b","queue":"a","payload":1}],"ITEMS":[{"queue":"c"}]}`,
	} {
		slow, err := decodePush([]byte(body))
		require.NoError(t, err)
		require.Equal(t, []string{"a"}, slow.queues, body)
		fast, ok := scanPush([]byte(body))
		require.True(t, ok, body)
		require.Equal(t, []string{"a"}, fast.queues, body)
	}
}

func TestScanPushAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer string
		ok     bool
	}{
		{"Empty", ` [ ] `, true},
		{"Real", string(pushAnswer(9)), true},
		{"NoStatus", `[{},{"index":1,"trace_id":null}]`, true},
		{"UnknownStatus", `[{"status":"other"},{"status":"Queued"}]`, true},
		{"FoldedKey", `[{"STATUS":"queued"},{"Status":"failed"}]`, false},
		{"EscapedStatus", `[{"status":"queu\u0065d"}]`, true},
		{"EscapedKey", `[{"st\u0061tus":"queued"}]`, false},
		{"DuplicateStatus", `[{"status":"failed","status":"queued"}]`, false},
		{"NullStatus", `[{"status":null}]`, false},
		{"NumberStatus", `[{"status":1},{"status":"queued"}]`, false},
		{"NullElement", `[null,{"status":"queued"}]`, false},
		{"Object", `{"status":"queued"}`, false},
		{"ErrorBody", `{"error":{"code":"internal","message":"x"}}`, false},
		{"Truncated", `[{"status":"queued"},{"stat`, false},
		{"TrailingGarbage", `[{"status":"queued"}]]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.ok, requireSameAnswer(t, []byte(tc.answer)))
		})
	}
}

func TestMeterPushAnswerFallsBack(t *testing.T) {
	t.Parallel()
	// The decoder counts the results it got through even when one has the wrong type.
	m := meterPushAnswer(bodyPush, 201, []byte(`[{"status":1},{"status":"queued"},{"status":"duplicate"}]`))
	require.Equal(t, &meterDelta{pushRequests: 1, messagesIn: 1, duplicatesIn: 1}, m)
	m = meterPushAnswer(bodyPush, 500, pushAnswer(4))
	require.Equal(t, &meterDelta{pushRequests: 1}, m)
	m = meterPushAnswer(bodyPush, 200, pushAnswer(4))
	require.Equal(t, &meterDelta{pushRequests: 1, messagesIn: 2, duplicatesIn: 1, failedIn: 1}, m)
}

func FuzzScanPush(f *testing.F) {
	for _, seed := range []string{
		string(pushBody(3, 100)), `{}`, `{"items":null}`, `{"items":[{"queue":"a","payload":null}]}`,
		`{"x":{"y":[1,-2.5e3,true,false,null,"\u00e9\n"]},"items":[{"payload":"s","queue":"q","queue2":[]}]}`,
		`{"ITEMS":[{"QUEUE":"a"}]}`, `{"items":[{"queue":"ünï"},{}]}`,
		`{"a":[1,"x\"y",null,{}]}`, `-0.5E-3`, `"queue"`, `{"queue":"a","payload":[]}`,
	} {
		f.Add([]byte(seed))
	}
	// Random bytes rarely stay valid JSON, so each input is also tried inside the
	// common shape, where a small valid value lands in the paths the scanner accepts.
	wraps := [][2]string{
		{`{"items":[{"queue":"q","payload":`, `}]}`},
		{`{"items":[{"payload":1,"queue":`, `}]}`},
		{`{"items":[{`, `}]}`},
		{`{"items":[`, `]}`},
		{`{"items":`, `}`},
		{`{`, `}`},
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		requireSamePush(t, raw)
		for _, w := range wraps {
			requireSamePush(t, []byte(w[0]+string(raw)+w[1]))
		}
	})
}

func FuzzScanPushAnswer(f *testing.F) {
	for _, seed := range []string{
		string(pushAnswer(5)), `[]`, `[{}]`, `[{"Status":"failed","x":{"status":"queued"}}]`,
		`[{"status":"buffered","e":[1,2.0e-1,"\"",null]}]`, `"queued"`, `{"status":"failed","x":1}`,
	} {
		f.Add([]byte(seed))
	}
	wraps := [][2]string{
		{`[{"status":`, `}]`},
		{`[{"index":0,"x":`, `,"status":"queued"}]`},
		{`[{`, `}]`},
		{`[{"status":"queued"},`, `]`},
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		requireSameAnswer(t, raw)
		for _, w := range wraps {
			requireSameAnswer(t, []byte(w[0]+string(raw)+w[1]))
		}
	})
}

func BenchmarkParsePush(b *testing.B) {
	raw := pushBody(100, 100)
	b.Run("Fast", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, ok := scanPush(raw); !ok {
				b.Fatal("fast path refused the body")
			}
		}
	})
	b.Run("Slow", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, err := decodePush(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkMeterPushAnswer(b *testing.B) {
	raw := pushAnswer(100)
	b.Run("Fast", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, ok := scanPushAnswer(raw); !ok {
				b.Fatal("fast path refused the answer")
			}
		}
	})
	b.Run("Slow", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, err := tallyPushAnswer(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
