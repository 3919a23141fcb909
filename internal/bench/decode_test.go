package bench

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// decodeSamples are pop and ack answers, ordinary and odd; the fast decoders must
// read each as encoding/json does, or hand it over.
var decodeSamples = []string{
	`{"leaseId":"L","messages":[{"transactionId":"t1","partitionId":"P","data":{"sent":5,"body":"xx"}},` +
		`{"id":"i","transactionId":"t2","partitionId":"P","data":{"kind":[1,{"a":null}]},"createdAt":"2026-01-01T00:00:00Z"}]}`,
	`{"leaseId":null,"messages":[]}`,
	`{"messages":null}`,
	`{}`,
	` { "leaseId" : "a\"b" , "messages" : [ { "transactionId" : "\u00e9" } ] } `,
	`{"leaseId":"L","messages":[{"transactionId":"t","data":null}]}`,
	`{"leaseId":"L","messages":[{"transactionId":"t","data":"text"}]}`,
	`{"leaseId":"L","messages":[{"transactionId":"t","data":{"sent":1.5}}]}`,
	`{"leaseId":"L","messages":[{"transactionId":"t","data":{"sent":1e3}}]}`,
	`{"LeaseId":"L","messages":[{"TransactionId":"t"}]}`,
	`{"leaseId":"L","leaseId":"M","messages":[{"transactionId":"a"}],"messages":[{"transactionId":"b"}]}`,
	`{"leaseId":"L"} x`,
	`[{"success":true,"error":null},{"success":false,"error":"lease expired","queue":"q"}]`,
	`[{"Success":true}]`,
	`[{"success":1}]`,
	`[{"error":5}]`,
	`[]`,
	`null`,
	`{"leaseId":"L","messages":[{"transactionId":"t","data":{"sent":9223372036854775807}}]}`,
	`{"leaseId":"L","messages":[{"transactionId":"t","data":{"sent":9223372036854775808}}]}`,
}

func FuzzDecodeAnswers(f *testing.F) {
	for _, s := range decodeSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast, slow popAnswer
		fastErr := decodePop(body, &fast)
		slowErr := json.Unmarshal(body, &slow)
		require.Equal(t, slowErr == nil, fastErr == nil, "pop %q: %v / %v", body, fastErr, slowErr)
		if slowErr == nil {
			require.Equal(t, slow.LeaseID, fast.LeaseID)
			require.Equal(t, len(slow.Messages), len(fast.Messages))
			for i := range slow.Messages {
				require.Equal(t, slow.Messages[i], fast.Messages[i], "pop %q", body)
			}
		}
		var fastAcks, slowAcks []ackAnswer
		fastErr = decodeAcks(body, &fastAcks)
		slowErr = json.Unmarshal(body, &slowAcks)
		require.Equal(t, slowErr == nil, fastErr == nil, "acks %q: %v / %v", body, fastErr, slowErr)
		if slowErr == nil {
			require.Equal(t, len(slowAcks), len(fastAcks))
			for i := range slowAcks {
				require.Equal(t, slowAcks[i], fastAcks[i], "acks %q", body)
			}
		}
	})
}

// TestFastDecodersTakeTheUsualAnswers: the answers brokers give go through the scanner,
// not the encoding/json fallback.
func TestFastDecodersTakeTheUsualAnswers(t *testing.T) {
	t.Parallel()
	var a popAnswer
	require.True(t, scanPop([]byte(decodeSamples[0]), &a))
	require.Equal(t, "L", a.LeaseID)
	require.Equal(t, []string{"t1", "t2"}, []string{a.Messages[0].TransactionID, a.Messages[1].TransactionID})
	require.Equal(t, int64(5), a.Messages[0].Data.Sent)
	var acks []ackAnswer
	require.True(t, scanAcks([]byte(decodeSamples[12]), &acks))
	require.Len(t, acks, 2)
	require.False(t, acks[1].Success)
	require.Equal(t, "lease expired", *acks[1].Error)
}

// FuzzAppendJSONString holds the request bodies' string writer to encoding/json:
// whatever the string, the output is one JSON string that reads back as the string
// encoding/json writes.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "bench-popack_b100-1a2b", "0190-uuid", `q"uote`, `back\slash`, "tab\there",
		"\x00\x1f\x7f", "é ü 中", "\u2028", "\xff\xfe bad utf-8", "<&>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		var fromWant, fromGot string
		require.NoError(t, json.Unmarshal(want, &fromWant))
		require.NoError(t, json.Unmarshal(appendJSONString(nil, s), &fromGot))
		require.Equal(t, fromWant, fromGot)
	})
}
