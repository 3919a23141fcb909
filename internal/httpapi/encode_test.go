package httpapi

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// The append encoders must render byte for byte what encodeJSON renders for the api
// values the handlers used to build (popResponse, pushResult, ackResults).

// ackResults is the reference rendering of ack results as api values: error is null
// when empty; queueName and partitionName are null for an unknown message.
func ackResults(results []queue.AckResult) []api.AckResult {
	out := make([]api.AckResult, len(results))
	for i, r := range results {
		out[i] = api.AckResult{
			Index: r.Index, TransactionID: r.TransactionID, Success: r.Success,
			Error: optional(r.Error), QueueName: optional(r.QueueName),
			PartitionName: optional(r.PartitionName), LeaseReleased: r.LeaseReleased, DLQ: r.DLQ, Noop: r.Noop,
			Conflated: r.Conflated,
		}
	}
	return out
}

// pushResults is the reference rendering of push results as api values.
func pushResults(results []queue.PushResult, clientTxIDs []string) []api.PushResult {
	out := make([]api.PushResult, len(results))
	for i, r := range results {
		out[i] = pushResult(i, r, clientTxIDs[i])
	}
	return out
}

// stringPieces are the building blocks of random strings: everything encoding/json
// treats specially.
var stringPieces = []string{
	"", "a", "Z9", " ", "é", "€", "😀", "\x00", "\x01", "\x1f", "\x7f", "\b", "\f", "\n", "\r", "\t",
	`"`, `\`, "/", "<", ">", "&", "\u2028", "\u2029", "\u2027", "\u202a", "\xff", "\xe2\x80", "\xe2",
	"\xed\xa0\x80", "\xc0\xaf", "\ufffd", "\u00a0",
}

func randString(rng *rand.Rand) string {
	var sb strings.Builder
	for range rng.IntN(6) {
		sb.WriteString(stringPieces[rng.IntN(len(stringPieces))])
	}
	return sb.String()
}

// rawStringPieces are the building blocks of JSON string tokens inside payloads:
// valid escapes and raw bytes encoding/json passes through (invalid UTF-8 included).
var rawStringPieces = []string{
	"a", "é", "😀", "<", ">", "&", "\u2028", "\u2029", "\xff", "\xe2\x80", "\xe2", " ", ":", ",", "{", "]",
	`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u00e9`, `\u003c`, `\u2028`, `\ud83d\ude00`, `\ud800`,
}

// randPayload writes a random valid JSON value, with random (jsonb-like and odder)
// whitespace between tokens.
func randPayload(rng *rand.Rand, sb *strings.Builder, depth int) {
	ws := func() {
		for range rng.IntN(3) {
			sb.WriteByte(" \t\n\r"[rng.IntN(4)])
		}
	}
	ws()
	switch k := rng.IntN(8); {
	case k == 0 && depth < 5:
		sb.WriteByte('{')
		for i := range rng.IntN(4) {
			if i > 0 {
				sb.WriteByte(',')
			}
			ws()
			randRawString(rng, sb)
			ws()
			sb.WriteByte(':')
			randPayload(rng, sb, depth+1)
		}
		ws()
		sb.WriteByte('}')
	case k == 1 && depth < 5:
		sb.WriteByte('[')
		for i := range rng.IntN(4) {
			if i > 0 {
				sb.WriteByte(',')
			}
			randPayload(rng, sb, depth+1)
		}
		ws()
		sb.WriteByte(']')
	case k == 2:
		sb.WriteString([]string{"true", "false", "null"}[rng.IntN(3)])
	case k == 3:
		sb.WriteString([]string{"0", "-1", "12.5", "1e400", "-0.0E-7", "123456789012345678901234567890"}[rng.IntN(6)])
	default:
		randRawString(rng, sb)
	}
	ws()
}

func randRawString(rng *rand.Rand, sb *strings.Builder) {
	sb.WriteByte('"')
	for range rng.IntN(5) {
		sb.WriteString(rawStringPieces[rng.IntN(len(rawStringPieces))])
	}
	sb.WriteByte('"')
}

func randPayloadBytes(rng *rand.Rand) []byte {
	var sb strings.Builder
	randPayload(rng, &sb, 0)
	return []byte(sb.String())
}

func TestAppendString(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		s := randString(rng)
		want, err := encodeJSON(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendString(nil, s, false)), "%q", s)
		wantHTML, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(wantHTML), string(appendString(nil, s, true)), "%q", s)
	}
}

func TestAppendPop(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	optionalString := func() string {
		if rng.IntN(3) == 0 {
			return ""
		}
		return randString(rng)
	}
	for range 2000 {
		res := queue.PopResult{Queue: randString(rng), ConsumerGroup: randString(rng), LeaseID: optionalString(),
			PartitionsClaimed: rng.IntN(5) - 1, Messages: make([]queue.Message, 1+rng.IntN(4)),
			Conflation: rng.IntN(3) == 0, ConflationConflict: rng.IntN(3) == 0}
		if rng.IntN(3) == 0 {
			res.Autopilot = &queue.PopAutopilot{Partitions: rng.IntN(64), Batch: rng.IntN(200), WaitMs: rng.IntN(100)}
		}
		for i := range res.Messages {
			m := queue.Message{ID: randString(rng), TransactionID: randString(rng), TraceID: optionalString(),
				ProducerSub: optionalString(), PartitionID: randString(rng), Partition: randString(rng),
				Queue: optionalString(), RetryCount: rng.IntN(1000) - 10,
				Traceparent: optionalString(), Tracestate: optionalString(),
				CreatedAt: time.Unix(rng.Int64N(1<<36)-1<<34, rng.Int64N(1e9)).In(time.FixedZone("x", 3600*rng.IntN(10)))}
			if rng.IntN(10) > 0 {
				m.Payload = randPayloadBytes(rng)
			}
			res.Messages[i] = m
		}
		requirePopMatches(t, res)
	}
}

func TestAppendPopPayloads(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		`{"a": 1, "b": [1, 2], "c": {"d": "x y"}}`, // jsonb text output
		` "spaced" `, "\t[\n1 ,\r2 ]\n", `{"h":"<a href=\"x\">&amp;</a>"}`, "\"\u2028\u2029\"",
		"\"\xff\xe2\x80\xa8\"", `"\\"`, `"\\\""`, `""`, `null`, `{}`, `[]`, `0`, `-1.5e+3`,
		strings.Repeat("[", 600) + strings.Repeat("]", 600), // deeper than the scanner follows
		// Invalid: encodeJSON fails, and so must appendPop.
		``, ` `, `{"a":}`, `{} {}`, `[1,]`, `01`, `"a`, "\"\x01\"", `nul`, `{"a" 1}`, `'a'`,
	} {
		res := queue.PopResult{Queue: "q", ConsumerGroup: api.QueueModeGroup, LeaseID: "l", PartitionsClaimed: 1,
			Messages: []queue.Message{{ID: "i", TransactionID: "t", Payload: []byte(p), PartitionID: "pi", Partition: "p"}}}
		requirePopMatches(t, res)
	}
}

func TestAppendMicros(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	times := []time.Time{{}, time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(0, 1, 1, 0, 0, 0, 999, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 4, 26, 10, 59, 28, 267966000, time.FixedZone("x", -7*3600)), time.Now()}
	for range 2000 {
		times = append(times, time.Unix(rng.Int64N(1<<40)-1<<39, rng.Int64N(1e9)).In(time.FixedZone("x", 60*rng.IntN(1000))))
	}
	for _, tm := range times {
		require.Equal(t, api.FormatMicros(tm), string(appendMicros(nil, tm)), "%v", tm)
	}
}

func requirePopMatches(t *testing.T, res queue.PopResult) {
	t.Helper()
	want, wantErr := encodeJSON(popResponse(res))
	got, err := appendPop([]byte("prefix"), res)
	if wantErr != nil {
		require.Error(t, err)
		require.Equal(t, wantErr.Error(), err.Error())
		require.Equal(t, "prefix", string(got))
		return
	}
	require.NoError(t, err)
	require.Equal(t, "prefix"+string(want), string(got))
}

func TestAppendPushResults(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	statuses := []string{queue.StatusQueued, queue.StatusDuplicate, queue.StatusBuffered, queue.StatusFailed, "other", ""}
	optionalString := func() string {
		if rng.IntN(3) == 0 {
			return ""
		}
		return randString(rng)
	}
	for n := range 2000 {
		results := make([]queue.PushResult, n%5)
		ids := make([]string, len(results))
		for i := range results {
			results[i] = queue.PushResult{Index: rng.IntN(9), Status: statuses[rng.IntN(len(statuses))],
				TransactionID: optionalString(), MessageID: optionalString(), PartitionID: optionalString(),
				TraceID: optionalString(), Queue: optionalString(), Partition: optionalString(), Error: optionalString()}
			ids[i] = optionalString()
		}
		want, err := encodeJSON(pushResults(results, ids))
		require.NoError(t, err)
		got, err := appendPushResults(nil, results, ids)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
}

func TestAppendAckResults(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	optionalString := func() string {
		if rng.IntN(3) == 0 {
			return ""
		}
		return randString(rng)
	}
	for n := range 2000 {
		results := make([]queue.AckResult, n%5)
		for i := range results {
			results[i] = queue.AckResult{Index: rng.IntN(9) - 1, TransactionID: randString(rng), Success: rng.IntN(2) == 0,
				Error: optionalString(), QueueName: optionalString(), PartitionName: optionalString(), DLQ: rng.IntN(2) == 0,
				Noop: rng.IntN(2) == 0}
			if rng.IntN(3) > 0 {
				results[i].LeaseReleased = new(rng.IntN(2) == 0)
			}
			if rng.IntN(3) == 0 {
				results[i].Conflated = new(rng.IntN(1000))
			}
		}
		want, err := encodeJSON(ackResults(results))
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendAckResults(nil, results)))
	}
}

// FuzzAppendPayload checks appendPayload against json.Marshal of a json.RawMessage:
// equal bytes when both succeed, and never success where encoding/json fails.
func FuzzAppendPayload(f *testing.F) {
	rng := rand.New(rand.NewPCG(9, 10))
	for range 50 {
		f.Add(randPayloadBytes(rng))
	}
	f.Add([]byte(`{"a": 1, "b": [1, 2]}`))
	f.Fuzz(func(t *testing.T, p []byte) {
		want, err := json.Marshal(json.RawMessage(p))
		got, ok := appendPayload([]byte("prefix"), p)
		switch {
		case !ok:
		case err != nil:
			t.Fatalf("appendPayload accepted %q, encoding/json fails: %v", p, err)
		default:
			require.Equal(t, "prefix"+string(want), string(got))
		}
	})
}

// FuzzAppendString checks appendString against encoding/json on any bytes.
func FuzzAppendString(f *testing.F) {
	for _, s := range stringPieces {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := encodeJSON(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendString(nil, s, false)))
		wantHTML, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(wantHTML), string(appendString(nil, s, true)))
	})
}
