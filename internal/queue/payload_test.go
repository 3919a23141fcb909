package queue_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

func TestCheckPayload(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		payload string
		ok      bool
	}{
		{"PlainObject", `{"a":"b"}`, true},
		{"NULEscape", `{"a":"x\u0000y"}`, false},
		{"EscapedBackslashThenText", `{"a":"x\\u0000y"}`, true},
		{"ThreeBackslashes", `{"a":"x\\\u0000y"}`, false},
		{"OtherEscape", `{"a":"\u0041"}`, true},
		{"InvalidUTF8", "{\"a\":\"\xff\"}", false},
		{"TrailingBackslashes", `"\\"`, true},
		{"SurrogatePair", `{"a":"\ud83d\ude00"}`, true},
		{"SurrogatePairUpperCase", `{"a":"\uD800\uDFFF"}`, true},
		{"LoneHighSurrogate", `{"a":"\ud800"}`, false},
		{"HighSurrogateThenText", `{"a":"\ud800x"}`, false},
		{"HighSurrogateThenOtherEscape", `{"a":"\ud800\u0041"}`, false},
		{"LoneLowSurrogate", `{"a":"\udc00"}`, false},
		{"SurrogateInKey", `{"\ud800":1}`, false},
		{"EscapedBackslashThenSurrogateText", `{"a":"\\ud800"}`, true},
		{"HighSurrogateAtTheEnd", `"\ud800`, false},
		{"NestedAtTheLimit", nested(queue.MaxPayloadDepth), true},
		{"NestedBeyondTheLimit", nested(queue.MaxPayloadDepth + 1), false},
		{"BracketsInStringsDoNotNest", `{"a":"` + strings.Repeat("[{", queue.MaxPayloadDepth) + `"}`, true},
		{"SiblingsDoNotNest", "[" + strings.Repeat("[[]],", queue.MaxPayloadDepth) + "[]]", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := queue.CheckPayload("items[0].payload", []byte(tc.payload))
			if tc.ok {
				require.NoError(t, err)
				return
			}
			var ve *queue.ValidationError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, "items[0].payload", ve.Field)
		})
	}
}

// nested is a document of arrays and objects depth levels deep.
func nested(depth int) string {
	open := strings.Repeat(`[{"a":`, depth/2) + strings.Repeat("[", depth%2)
	closing := strings.Repeat("]", depth%2) + strings.Repeat("}]", depth/2)
	return open + "1" + closing
}

// TestCheckPayloadNumbers: a number PostgreSQL cannot store, or whose full decimal
// rendering is more than MaxNumberGrowth digits longer than written, is refused
// naming the field; so are numbers that together grow a document past its budget.
// The boundaries were read from PostgreSQL 15 ('<n>'::jsonb and its ::text).
func TestCheckPayloadNumbers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		payload string
		ok      bool
	}{
		{"Float64Max", `1.7976931348623157e308`, true},
		{"Float64MaxUpperE", `-1.7976931348623157E+308`, true},
		{"Float64SmallestSubnormal", `5e-324`, true},
		{"Float64SmallestSubnormalLong", `4.9406564584124654e-324`, true},
		{"GrowthAtTheLimit", `[1e1000,1e-1000,0.5e1001,123e-998]`, true},
		{"GrowthOverTheLimit", `1e1001`, false},
		{"NegativeExponentOverTheLimit", `{"n":1e-1001}`, false},
		{"LeadingZerosDoNotCount", `0.000000001e1009`, true},
		{"ZeroWithHugeExponent", `0e200000`, true},
		{"ZeroWithHugeNegativeExponent", `0e-20000`, false},
		{"OverflowsNumeric", `{"n":1e200000}`, false},
		{"RendersHuge", `[1e131000]`, false},
		{"ScaleOverflows", `1e-20000`, false},
		{"HugeExponentDigits", `1e99999999999999999999999`, false},
		{"LongIntegerWithoutExponent", strings.Repeat("9", 131072), true},
		{"IntegerOverNumericDigits", strings.Repeat("9", 131073), false},
		{"LongFractionWithoutExponent", "0." + strings.Repeat("1", 16383), true},
		{"FractionOverNumericScale", "0." + strings.Repeat("1", 16384), false},
		{"NumbersInStringsAreText", `{"1e200000":"1e200000 \" 1e200000"}`, true},
		{"NumberAfterEscapedQuote", `["\"",1e200000]`, false},
		{"NumberAfterEscapedBackslash", `["\\",1e200000]`, false},
		{"DocumentWithinBudget", "[" + strings.Repeat("1e1000,", 65) + "1]", true},
		{"DocumentOverBudget", "[" + strings.Repeat("1e1000,", 80) + "1]", false},
		{"LargeDocumentOfSmallFloats", "[" + strings.Repeat("1.5e-20,", 200000) + "1]", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := queue.CheckPayload("items[0].payload", []byte(tc.payload))
			if tc.ok {
				require.NoError(t, err)
				return
			}
			var ve *queue.ValidationError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, "items[0].payload", ve.Field)
			require.Contains(t, ve.Message, "items[0].payload")
		})
	}
}

func TestIDGeneratorIsMonotonic(t *testing.T) {
	t.Parallel()
	g := queue.NewIDGenerator()
	prev := g.New()
	for i := 0; i < 20000; i++ {
		id := g.New()
		require.True(t, queue.IsUUID(id))
		require.Equal(t, byte('7'), id[14], "version 7")
		require.Greater(t, id, prev, "ids strictly increase within a process")
		prev = id
	}
}
