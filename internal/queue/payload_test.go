package queue_test

import (
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
