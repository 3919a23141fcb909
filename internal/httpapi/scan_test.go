package httpapi

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// The fast decoders (scanPush, scanAck, scanAckBatch) must agree with the
// encoding/json paths (decodePush, decodeSingleAck, decodeAckBatch) whenever they
// accept a body; declining is always allowed. The table tests pin which bodies the
// fast path takes; the fuzz targets check agreement on anything.

// requirePushAgrees runs both push decoders on body and reports whether the fast one
// accepted it.
func requirePushAgrees(t *testing.T, body []byte) bool {
	t.Helper()
	body = bytes.TrimSpace(body)
	fast, ok := scanPush(body)
	if !ok {
		return false
	}
	slow, err := decodePush(body)
	require.NoError(t, err, "fast path accepted %q", body)
	require.Equal(t, slow, fast, "body %q", body)
	for _, it := range fast {
		require.Equal(t, len(it.Payload), cap(it.Payload), "payload %q aliases the rest of the body", it.Payload)
	}
	return true
}

// requireAckAgrees runs both ack and both ack batch decoders on body and reports
// whether the fast ones accepted it.
func requireAckAgrees(t *testing.T, body []byte) (single, batch bool) {
	t.Helper()
	body = bytes.TrimSpace(body)
	if a, group, ok := scanAck(body); ok {
		slowA, slowGroup, err := decodeSingleAck(body)
		require.NoError(t, err, "fast path accepted %q", body)
		require.Equal(t, slowA, a, "body %q", body)
		require.Equal(t, slowGroup, group, "body %q", body)
		single = true
	}
	if acks, group, ok := scanAckBatch(body); ok {
		slowAcks, slowGroup, err := decodeAckBatch(body)
		require.NoError(t, err, "fast path accepted %q", body)
		require.Equal(t, slowAcks, acks, "body %q", body)
		require.Equal(t, slowGroup, group, "body %q", body)
		batch = true
	}
	return single, batch
}

var pushCases = []struct {
	name string
	body string
	fast bool // the fast path takes it (else encoding/json decides)
}{
	{"Plain", `{"items":[{"queue":"q","partition":"p","payload":{"a":1}}]}`, true},
	{"Empty", `{"items":[]}`, true},
	{"Whitespace", " \t{ \"items\" :\n[ { \"queue\" : \"q\" ,\r\"payload\" : { \"a\" : [ 1 , 2 ] } } ] }\n", true},
	{"UnicodeSpaceAround", "\u00a0{\"items\":[{\"queue\":\"q\"}]}\u2003", true},
	{"AllFields", `{"items":[{"queue":"q","partition":"p","transactionId":"t","traceId":"00000000-0000-0000-0000-000000000001","payload":[1,"x",null]}]}`, true},
	{"Escapes", `{"items":[{"queue":"q\"\\\/\b\f\n\r\t\u00e9\u20AC\u0000","partition":"\u003c&"}]}`, true},
	{"SurrogatePair", `{"items":[{"queue":"\ud83d\ude00x"}]}`, true},
	{"LoneSurrogate", `{"items":[{"queue":"\ud83dx"}]}`, false},
	{"SurrogateThenNonLow", `{"items":[{"queue":"\ud83d\u0041"}]}`, false},
	{"RawUnicode", `{"items":[{"queue":"é€😀","partition":"` + "\u2028" + `"}]}`, true},
	{"InvalidUTF8InQueue", "{\"items\":[{\"queue\":\"q\xff\"}]}", false},
	{"InvalidUTF8InEscapedQueue", "{\"items\":[{\"queue\":\"\\n\xff\"}]}", false},
	{"InvalidUTF8InPayload", "{\"items\":[{\"queue\":\"q\",\"payload\":\"\xff\xfe\"}]}", true},
	{"InvalidUTF8InUnknownKey", "{\"items\":[{\"queue\":\"q\"}],\"\xff\":1}", true},
	{"DuplicateField", `{"items":[{"queue":"a","queue":"b","partition":5,"partition":"p"}]}`, true},
	{"DuplicateItems", `{"items":[{"queue":"a"}],"items":[{"queue":"b"},{"queue":"c"}]}`, true},
	{"ItemsThenNull", `{"items":[{"queue":"a"}],"items":null}`, false},
	{"NullThenItems", `{"items":null,"items":[{"queue":"a"}]}`, true},
	{"WrongTypeThenItems", `{"items":5,"items":[]}`, true},
	{"BadItemThenItems", `{"items":[1],"items":[{"queue":"a"}]}`, false},
	{"ItemsWrongType", `{"items":{"queue":"a"}}`, false},
	{"ItemsMissing", `{"Items":[]}`, false},
	{"EscapedKey", `{"it\u0065ms":[{"queue":"a"}]}`, false},
	{"EscapedFieldKey", `{"items":[{"queue":"a","p\u0061yload":1}]}`, false},
	{"ItemNotObject", `{"items":[null]}`, false},
	{"QueueNull", `{"items":[{"queue":null}]}`, false},
	{"QueueMissing", `{"items":[{"payload":1}]}`, false},
	{"QueueNumber", `{"items":[{"queue":1}]}`, false},
	{"QueueEmpty", `{"items":[{"queue":""}]}`, true},
	{"PartitionNull", `{"items":[{"queue":"q","partition":null}]}`, true},
	{"PartitionWrongType", `{"items":[{"queue":"q","partition":true}]}`, false},
	{"TraceIDWrongType", `{"items":[{"queue":"q","traceId":{}}]}`, false},
	{"TransactionIDWrongType", `{"items":[{"queue":"q","transactionId":[]}]}`, false},
	{"PayloadNull", `{"items":[{"queue":"q","payload":null}]}`, true},
	{"PayloadNullThenValue", `{"items":[{"queue":"q","payload":null,"payload":{"b" : 2}}]}`, true},
	{"PayloadValueThenNull", `{"items":[{"queue":"q","payload":{"b":2},"payload":null}]}`, true},
	{"PayloadScalars", `{"items":[{"queue":"q","payload":"s"},{"queue":"q","payload":-0.5e+10},{"queue":"q","payload":true},{"queue":"q","payload":false},{"queue":"q","payload":0},{"queue":"q","payload":1e400}]}`, true},
	{"DataIgnoredOutsideTx", `{"items":[{"queue":"q","data":{"x":1}}]}`, true},
	{"UnknownKeys", `{"x":{"y":[null,true,false,1.5,"s",{},[]]},"items":[{"queue":"q","z":[{"a":[]}]}],"w":"\u0000"}`, true},
	{"Deep", `{"items":[{"queue":"q","payload":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}]}`, false},
	{"EmptyBody", ``, false},
	{"TopLevelArray", `[]`, false},
	{"TopLevelString", `"items"`, false},
	{"TrailingComma", `{"items":[{"queue":"q"},]}`, false},
	{"TrailingCommaObject", `{"items":[{"queue":"q",}]}`, false},
	{"LeadingZero", `{"items":[{"queue":"q","payload":01}]}`, false},
	{"BareMinus", `{"items":[{"queue":"q","payload":-}]}`, false},
	{"BareDot", `{"items":[{"queue":"q","payload":1.}]}`, false},
	{"BareExponent", `{"items":[{"queue":"q","payload":1e}]}`, false},
	{"PlusNumber", `{"items":[{"queue":"q","payload":+1}]}`, false},
	{"DotNumber", `{"items":[{"queue":"q","payload":.5}]}`, false},
	{"NaN", `{"items":[{"queue":"q","payload":NaN}]}`, false},
	{"ShortLiteral", `{"items":[{"queue":"q","payload":tru}]}`, false},
	{"LongLiteral", `{"items":[{"queue":"q","payload":truex}]}`, false},
	{"ControlCharInString", "{\"items\":[{\"queue\":\"a\tb\"}]}", false},
	{"BadEscape", `{"items":[{"queue":"\x41"}]}`, false},
	{"ShortUnicodeEscape", `{"items":[{"queue":"\u12"}]}`, false},
	{"Unterminated", `{"items":[{"queue":"q"}]`, false},
	{"UnterminatedString", `{"items":[{"queue":"q`, false},
	{"TrailingGarbage", `{"items":[]}x`, false},
	{"TwoObjects", `{"items":[]}{}`, false},
	{"MissingColon", `{"items" []}`, false},
	{"SingleQuotes", `{'items':[]}`, false},
}

func TestScanPush(t *testing.T) {
	t.Parallel()
	for _, tc := range pushCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.fast, requirePushAgrees(t, []byte(tc.body)))
		})
	}

	t.Run("PayloadIsTheRawValue", func(t *testing.T) {
		t.Parallel()
		items, ok := scanPush([]byte(`{"items":[{"queue":"q","payload": { "a" : "x\"y" } },{"queue":"q","payload":"s"}]}`))
		require.True(t, ok)
		require.Equal(t, `{ "a" : "x\"y" }`, string(items[0].Payload))
		require.Equal(t, `"s"`, string(items[1].Payload))
	})

	t.Run("SharesRepeatedNames", func(t *testing.T) {
		t.Parallel()
		items, ok := scanPush([]byte(`{"items":[{"queue":"q","partition":"p"},{"queue":"q","partition":"p"}]}`))
		require.True(t, ok)
		require.Same(t, unsafeStringData(items[0].Queue), unsafeStringData(items[1].Queue))
		require.Same(t, unsafeStringData(items[0].Partition), unsafeStringData(items[1].Partition))
	})
}

var ackCases = []struct {
	name          string
	body          string
	single, batch bool // the fast paths take it
}{
	{"Single", `{"transactionId":"t","partitionId":"p","leaseId":"l","status":"failed","error":"boom","consumerGroup":"g"}`, true, false},
	{"SingleMinimal", `{"transactionId":"t","partitionId":"p"}`, true, false},
	{"SingleNulls", `{"transactionId":"t","partitionId":"p","leaseId":null,"status":null,"error":null,"consumerGroup":null}`, true, false},
	{"SingleEscapes", `{"transactionId":"t\u00e9\n","partitionId":"\ud83d\ude00","error":"a \"b\" <c>"}`, true, false},
	{"SingleDuplicates", `{"transactionId":"","transactionId":"t","partitionId":"p","status":1,"status":"completed"}`, true, false},
	{"SingleEmptyTransactionID", `{"transactionId":"","partitionId":"p"}`, false, false},
	{"SingleEmptyPartitionID", `{"transactionId":"t","partitionId":""}`, false, false},
	{"SingleMissingPartitionID", `{"transactionId":"t"}`, false, false},
	{"SingleTransactionIDNull", `{"transactionId":null,"partitionId":"p"}`, false, false},
	{"SingleLeaseWrongType", `{"transactionId":"t","partitionId":"p","leaseId":5}`, false, false},
	{"SingleGroupWrongType", `{"transactionId":"t","partitionId":"p","consumerGroup":[]}`, false, false},
	{"SingleInvalidUTF8", "{\"transactionId\":\"t\xff\",\"partitionId\":\"p\"}", false, false},
	{"SingleInvalidJSON", `{"transactionId":"t","partitionId":"p",}`, false, false},
	{"Batch", `{"acknowledgments":[{"transactionId":"t1","partitionId":"p","leaseId":"l"},{"transactionId":"t2","partitionId":"p","leaseId":"l","status":"failed","error":"e"}],"consumerGroup":"g"}`, false, true},
	{"BatchEmpty", `{"acknowledgments":[]}`, false, true},
	{"BatchItemGroupIgnored", `{"acknowledgments":[{"transactionId":"t","partitionId":"p","consumerGroup":5}]}`, false, true},
	{"BatchDuplicates", `{"acknowledgments":[{"transactionId":"x","partitionId":"p"}],"consumerGroup":"a","acknowledgments":[{"transactionId":"t","partitionId":"p"}],"consumerGroup":"b"}`, false, true},
	{"BatchThenNull", `{"acknowledgments":[],"acknowledgments":null}`, false, false},
	{"BatchGroupNull", `{"acknowledgments":[],"consumerGroup":null}`, false, true},
	{"BatchGroupWrongType", `{"acknowledgments":[],"consumerGroup":1}`, false, false},
	{"BatchItemNotObject", `{"acknowledgments":["t"]}`, false, false},
	{"BatchItemMissingTransactionID", `{"acknowledgments":[{"partitionId":"p"}]}`, false, false},
	{"BatchMissing", `{"consumerGroup":"g"}`, false, false},
	{"BatchWhitespace", "{ \"acknowledgments\" : [ { \"transactionId\" : \"t\" , \"partitionId\" : \"p\" } ] ,\n\"consumerGroup\" : \"g\" }", false, true},
	{"Both", `{"acknowledgments":[{"transactionId":"t","partitionId":"p"}],"transactionId":"t","partitionId":"p"}`, true, true},
	{"Empty", ``, false, false},
	{"TopLevelArray", `[{"transactionId":"t","partitionId":"p"}]`, false, false},
}

func TestScanAck(t *testing.T) {
	t.Parallel()
	for _, tc := range ackCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			single, batch := requireAckAgrees(t, []byte(tc.body))
			require.Equal(t, tc.single, single, "single")
			require.Equal(t, tc.batch, batch, "batch")
		})
	}
}

func FuzzPushDecode(f *testing.F) {
	for _, tc := range pushCases {
		f.Add([]byte(tc.body))
	}
	f.Add([]byte(`{"items":[{"queue":"bench","partition":"p0","payload":` + benchPayload + `},{"queue":"bench","partition":"p0","transactionId":"t","payload":` + benchPayload + `}]}`))
	rng := rand.New(rand.NewPCG(17, 18))
	for range 30 {
		f.Add(randPushBody(rng))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		requirePushAgrees(t, body)
	})
}

func FuzzAckDecode(f *testing.F) {
	for _, tc := range ackCases {
		f.Add([]byte(tc.body))
	}
	rng := rand.New(rand.NewPCG(19, 20))
	for range 30 {
		f.Add(randAckBody(rng))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		requireAckAgrees(t, body)
	})
}

// unsafeStringData returns the address of s's bytes, to tell shared strings apart.
func unsafeStringData(s string) *byte {
	return unsafe.StringData(s)
}

// randMembers writes a random JSON object with the members of required, then members
// drawn from keys (each value written by its function, possibly repeated, possibly
// null) and unknown keys.
func randMembers(rng *rand.Rand, sb *strings.Builder, keys map[string]func(), required ...string) {
	names := slices.Sorted(maps.Keys(keys))
	sb.WriteString("{")
	n := len(required) + rng.IntN(6)
	for i := range n {
		if i > 0 {
			sb.WriteString([]string{",", " , ", ",\n"}[rng.IntN(3)])
		}
		switch k := rng.IntN(len(names) + 2); {
		case i < len(required):
			sb.WriteString(strconv.Quote(required[i]) + ":")
			keys[required[i]]()
		case k < len(names):
			sb.WriteString(strconv.Quote(names[k]) + ":")
			if rng.IntN(8) == 0 {
				sb.WriteString("null")
			} else {
				keys[names[k]]()
			}
		case k == len(names) && rng.IntN(4) == 0:
			randRawString(rng, sb)
			sb.WriteString(" : ")
			randPayload(rng, sb, 3)
		default:
			sb.WriteString(`"zz" : `)
			randPayload(rng, sb, 3)
		}
	}
	sb.WriteString(" }")
}

// randStringValue writes a JSON string that is usually plain, sometimes escaped, sometimes
// another type.
func randStringValue(rng *rand.Rand, sb *strings.Builder) {
	switch rng.IntN(10) {
	case 0:
		randRawString(rng, sb)
	case 1:
		sb.WriteString([]string{"1", "true", "{}", `""`}[rng.IntN(4)])
	default:
		sb.WriteString([]string{`"q"`, `"p"`, `"x-1"`, `"é"`}[rng.IntN(4)])
	}
}

// randPushBody writes a random push body, valid JSON more often than not.
func randPushBody(rng *rand.Rand) []byte {
	var sb strings.Builder
	str := func() { randStringValue(rng, &sb) }
	item := map[string]func(){"queue": str, "partition": str, "transactionId": str, "traceId": str,
		"payload": func() { randPayload(rng, &sb, 2) }, "data": func() { randPayload(rng, &sb, 2) }}
	randMembers(rng, &sb, map[string]func(){"items": func() {
		sb.WriteString("[")
		for i := range rng.IntN(4) {
			if i > 0 {
				sb.WriteString(",")
			}
			randMembers(rng, &sb, item, "queue")
		}
		sb.WriteString("]")
	}}, "items")
	return []byte(sb.String())
}

// randAckBody writes a random ack or ack batch body.
func randAckBody(rng *rand.Rand) []byte {
	var sb strings.Builder
	str := func() { randStringValue(rng, &sb) }
	ack := map[string]func(){"transactionId": str, "partitionId": str, "leaseId": str, "status": str,
		"error": str, "consumerGroup": str}
	top := maps.Clone(ack)
	top["acknowledgments"] = func() {
		sb.WriteString("[")
		for i := range rng.IntN(4) {
			if i > 0 {
				sb.WriteString(",")
			}
			randMembers(rng, &sb, ack, "transactionId", "partitionId")
		}
		sb.WriteString("]")
	}
	if rng.IntN(2) == 0 {
		randMembers(rng, &sb, top, "acknowledgments")
	} else {
		randMembers(rng, &sb, top, "transactionId", "partitionId")
	}
	return []byte(sb.String())
}

func TestScanPushRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 14))
	accepted := 0
	for range 5000 {
		if requirePushAgrees(t, randPushBody(rng)) {
			accepted++
		}
	}
	t.Logf("fast path took %d of 5000 bodies", accepted)
	require.Greater(t, accepted, 1000)
}

func TestScanAckRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(15, 16))
	single, batch := 0, 0
	for range 5000 {
		s, b := requireAckAgrees(t, randAckBody(rng))
		if s {
			single++
		}
		if b {
			batch++
		}
	}
	t.Logf("fast paths took %d single and %d batch bodies of 5000", single, batch)
	require.Greater(t, single, 500)
	require.Greater(t, batch, 500)
}
