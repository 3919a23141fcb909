package queue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/require"
)

func TestParseKVOp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, op string
		check    func(t *testing.T, op KVOp)
	}{
		{"SpellingEchoed", `{"op":"put_if_absent","ns":"a","key":"k","value":1,"forever":true}`, func(t *testing.T, op KVOp) {
			require.Equal(t, []any{"put_if_absent", KVPutIfAbsent}, []any{op.Op, op.Kind})
			require.NotNil(t, op.Expect)
			require.Zero(t, *op.Expect, "putIfAbsent is put with expect 0")
		}},
		{"ValueCompacted", `{"op":"put","ns":"a","key":"k","value":{ "x" : [1, 2] },"ttlSeconds":30}`, func(t *testing.T, op KVOp) {
			require.Equal(t, `{"x":[1,2]}`, string(op.Value))
			require.Equal(t, 30*time.Second, op.TTL)
		}},
		{"NullValue", `{"op":"put","ns":"a","key":"k","value":null,"forever":true}`, func(t *testing.T, op KVOp) {
			require.Equal(t, "null", string(op.Value))
			require.Zero(t, op.TTL)
		}},
		{"ForeverFalseWithTTL", `{"op":"incr","ns":"a","key":"k","delta":-1.5,"min":0,"ttlSeconds":5,"forever":false}`, func(t *testing.T, op KVOp) {
			require.Equal(t, []string{"-1.5", "0", ""}, []string{op.Delta, op.Min, op.Max})
		}},
		{"NullBooleansAreAbsent", `{"op":"put","ns":"a","key":"k","value":1,"ttlSeconds":5,"forever":null,"required":null}`, func(t *testing.T, op KVOp) {
			require.Equal(t, 5*time.Second, op.TTL)
			require.False(t, op.Required)
		}},
		{"PrefixLimitClamped", `{"op":"getPrefix","ns":"a","prefix":"p","limit":5000}`, func(t *testing.T, op KVOp) {
			require.Equal(t, KVMaxLimit, op.Limit)
		}},
		{"PrefixLimitDefault", `{"op":"getPrefix","ns":"a","prefix":"p","limit":null}`, func(t *testing.T, op KVOp) {
			require.Equal(t, KVDefaultLimit, op.Limit)
		}},
		{"PrefixLimitNotANumberIsTheDefault", `{"op":"getPrefix","ns":"a","prefix":"p","limit":"3"}`, func(t *testing.T, op KVOp) {
			require.Equal(t, KVDefaultLimit, op.Limit)
		}},
		{"WholeNumbersWithAFraction", `{"op":"put","ns":"a","key":"k","value":1,"ttlSeconds":5.0,"expect":2e0}`, func(t *testing.T, op KVOp) {
			require.Equal(t, 5*time.Second, op.TTL)
			require.NotNil(t, op.Expect)
			require.Equal(t, int64(2), *op.Expect)
		}},
		{"WholeNumberWithAnExponent", `{"op":"put","ns":"a","key":"k","value":1,"ttlSeconds":1e3,"expect":0.0}`, func(t *testing.T, op KVOp) {
			require.Equal(t, 1000*time.Second, op.TTL)
			require.Equal(t, int64(0), *op.Expect)
		}},
		{"Float64ExtremesPass", `{"op":"put","ns":"a","key":"k","value":[1.7976931348623157e308,-5e-324,1e1000],"forever":true}`, func(t *testing.T, op KVOp) {
			require.Equal(t, `[1.7976931348623157e308,-5e-324,1e1000]`, string(op.Value))
		}},
		{"IncrBoundsAtTheLimit", `{"op":"incr","ns":"a","key":"k","delta":1e-1000,"max":1e1000,"forever":true}`, func(t *testing.T, op KVOp) {
			require.Equal(t, []string{"1e-1000", "", "1e1000"}, []string{op.Delta, op.Min, op.Max})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op, err := ParseKVOp(json.RawMessage(tc.op), "operations[0]")
			require.NoError(t, err)
			tc.check(t, op)
		})
	}
}

func TestParseKVOpsRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, ops, reason, field string
		lim                      KVBatchLimits
		tooLarge                 bool
	}{
		{"RequiredNotBool", `[{"op":"delete","ns":"a","key":"k","required":"yes"}]`, "kv_bad_body", "operations[0].required", KVCallLimits, false},
		{"TTLFraction", `[{"op":"put","ns":"a","key":"k","value":1,"ttlSeconds":1.5}]`, "kv_bad_ttl", "operations[0].ttlSeconds", KVCallLimits, false},
		{"TTLString", `[{"op":"put","ns":"a","key":"k","value":1,"ttlSeconds":"5"}]`, "kv_bad_ttl", "operations[0].ttlSeconds", KVCallLimits, false},
		{"ExpectFraction", `[{"op":"put","ns":"a","key":"k","value":1,"forever":true,"expect":0.5}]`, "kv_bad_expect", "operations[0].expect", KVCallLimits, false},
		{"ExpectBeyondExactFloats", `[{"op":"put","ns":"a","key":"k","value":1,"forever":true,"expect":1e300}]`, "kv_bad_expect", "operations[0].expect", KVCallLimits, false},
		{"DeltaString", `[{"op":"incr","ns":"a","key":"k","delta":"1","forever":true}]`, "kv_bad_body", "operations[0].delta", KVCallLimits, false},
		{"NULInKey", `[{"op":"get","ns":"a","key":"a\u0000b"}]`, "kv_bad_key", "operations[0].key", KVCallLimits, false},
		{"KeyOf513Bytes", `[{"op":"get","ns":"a","key":"` + repeat("é", 257) + `"}]`, "kv_key_too_large", "operations[0].key", KVCallLimits, true},
		{"PrefixInTransaction", `[{"op":"getPrefix","ns":"a","prefix":"p"}]`, "kv_bad_op", "operations[0]", KVTxLimits, false},
		{"TxKeys", `[{"op":"getMany","ns":"a","keys":[` + repeatComma(`"k"`, 257) + `]}]`, "kv_too_many_keys", "operations", KVTxLimits, false},
		// Values and numbers PostgreSQL cannot store, or would store far larger than sent.
		{"NULInValue", `[{"op":"put","ns":"a","key":"k","value":"a\u0000b","forever":true}]`, "kv_bad_body", "operations[0].value", KVCallLimits, false},
		{"LoneSurrogateInValue", `[{"op":"put","ns":"a","key":"k","value":{"x":"a\ud800b"},"forever":true}]`, "kv_bad_body", "operations[0].value", KVCallLimits, false},
		{"ValueNumberOverflows", `[{"op":"put","ns":"a","key":"k","value":1e200000,"forever":true}]`, "kv_bad_body", "operations[0].value", KVCallLimits, false},
		{"ValueNumberScaleOverflows", `[{"op":"putIfAbsent","ns":"a","key":"k","value":1e-20000,"forever":true}]`, "kv_bad_body", "operations[0].value", KVCallLimits, false},
		{"ValueNumberRendersHuge", `[{"op":"put","ns":"a","key":"k","value":[1e131000],"forever":true}]`, "kv_bad_body", "operations[0].value", KVCallLimits, false},
		{"DeltaOverflows", `[{"op":"incr","ns":"a","key":"k","delta":1e200000,"forever":true}]`, "kv_bad_body", "operations[0].delta", KVCallLimits, false},
		{"MinRendersHuge", `[{"op":"incr","ns":"a","key":"k","delta":1,"min":-1e1001,"forever":true}]`, "kv_bad_body", "operations[0].min", KVCallLimits, false},
		{"MaxOverflows", `[{"op":"incr","ns":"a","key":"k","delta":1,"max":1e200000,"forever":true}]`, "kv_bad_body", "operations[0].max", KVCallLimits, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var raw []json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(tc.ops), &raw))
			_, err := ParseKVOps(raw, "operations", tc.lim)
			var ke *KVError
			require.True(t, errors.As(err, &ke), "err: %v", err)
			require.Equal(t, []any{tc.reason, tc.field, tc.tooLarge}, []any{ke.Reason, ke.Field, ke.TooLarge})
		})
	}
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

func repeatComma(s string, n int) string {
	out := s
	for range n - 1 {
		out += "," + s
	}
	return out
}

// TestKVSerializedLen: a value's size is its serialization with strings in UTF-8,
// whatever escapes the sender wrote; numbers, literals and structure count as written.
func TestKVSerializedLen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int
	}{
		{`"é"`, 4}, {`"\u00e9"`, 4}, {`"\u00E9"`, 4},
		{`"\ud83d\ude00"`, 6}, // a surrogate pair is one 4-byte character
		{`"\ud800"`, 5},       // a lone surrogate reads as U+FFFD
		{`"\ud800\u0041"`, 6}, // ... also before another escape
		{`"\/"`, 3},           // the slash needs no escape
		{`"\n"`, 4}, {`"\u000a"`, 4}, {`"\u0001"`, 8}, {`"\""`, 4}, {`"\u0022"`, 4}, {`"\\"`, 4}, {`"\u005c"`, 4},
		{`{"\u00e9":[1,2.50,true,null,"x"]}`, len(`{"é":[1,2.50,true,null,"x"]}`)},
		{`1e400`, 5}, {`""`, 2}, {`null`, 4},
	} {
		require.Equal(t, tc.want, kvSerializedLen([]byte(tc.in)), tc.in)
	}
	// Any string, sent with everything beyond ASCII escaped (Python's json.dumps), counts
	// what a serializer that writes UTF-8 writes for it.
	for _, s := range []string{"plain", "中文字符", "emoji 😀 and ü", "ctl \x01\x1f\b\f\n\r\t \"q\" \\", "mixed é\x7f中😀"} {
		var ascii []byte
		ascii = append(ascii, '"')
		for _, r := range s {
			switch {
			case r == '"' || r == '\\':
				ascii = append(ascii, '\\', byte(r))
			case r < 0x20 || r >= 0x7f:
				for _, u := range utf16.Encode([]rune{r}) {
					ascii = fmt.Appendf(ascii, `\u%04x`, u)
				}
			default:
				ascii = append(ascii, byte(r))
			}
		}
		ascii = append(ascii, '"')
		var plain bytes.Buffer
		enc := json.NewEncoder(&plain)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(s))
		require.Equal(t, plain.Len()-1, kvSerializedLen(ascii), "%q sent as %s", s, ascii)
	}
}

// TestKVValueLimitCountsUTF8: a value near the limit is taken or refused by its UTF-8
// size, not by the escapes it was sent with.
func TestKVValueLimitCountsUTF8(t *testing.T) {
	t.Parallel()
	put := func(n int) error {
		_, err := ParseKVOp(json.RawMessage(`{"op":"put","ns":"a","key":"k","forever":true,"value":"`+
			strings.Repeat(`\u00e9`, n)+`"}`), "operations[0]")
		return err
	}
	require.NoError(t, put(20000), "120 002 bytes as sent, 40 002 serialized")
	require.NoError(t, put((KVMaxValueBytes-2)/2))
	err := put((KVMaxValueBytes-2)/2 + 1)
	var ke *KVError
	require.ErrorAs(t, err, &ke)
	require.Equal(t, KVError{TooLarge: true, Field: "operations[0].value", Code: "payload_too_large",
		Reason: "kv_value_too_large", Detail: "operations[0].value is 65538 bytes serialized; at most 65536"}, *ke)
}
