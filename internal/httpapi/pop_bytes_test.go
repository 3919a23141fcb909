package httpapi

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// TestPopAnswerBytes pins the pop answer's bytes for payloads as they come out of
// PostgreSQL: jsonb text has spaces after ':' and ',', which the answer must compact
// (encoding/json compacts json.RawMessage), and payload strings are HTML-escaped
// (api.PopResponse marshals with json.Marshal).
func TestPopAnswerBytes(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	const payload = `{"b": [1, 2.50, {"c": "<x> & y` + "\u2028" + `", "e": "\"q\" \\ \n"}], "a": null, "d": "é😀", "f": true}`

	t.Run("PayloadsReachTheEncoderAsJSONBText", func(t *testing.T) {
		t.Parallel()
		b.pushOne(t, "pop-bytes-raw", "p1", "t-1", payload)
		req := queue.PopRequest{Queue: "pop-bytes-raw", Batch: 1}
		require.NoError(t, b.broker.NormalizePop(&req))
		res, err := b.broker.Pop(t.Context(), req)
		require.NoError(t, err)
		require.Len(t, res.Messages, 1)
		require.Equal(t, `{"a": null, "b": [1, 2.50, {"c": "<x> & y`+"\u2028"+`", "e": "\"q\" \\ \n"}], "d": "é😀", "f": true}`,
			string(res.Messages[0].Payload))

		want, err := encodeJSON(popResponse(res))
		require.NoError(t, err)
		got, err := appendPop(nil, res)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	})

	t.Run("AnswerIsCompactAndEscaped", func(t *testing.T) {
		t.Parallel()
		b.pushOne(t, "pop-bytes-http", "p1", "t-1", payload)
		r := b.get(t, "/api/v1/pop/queue/pop-bytes-http?batch=1")
		requireStatus(t, http.StatusOK, r)
		require.Contains(t, string(r.body),
			`"data":{"a":null,"b":[1,2.50,{"c":"\u003cx\u003e \u0026 y\u2028","e":"\"q\" \\ \n"}],"d":"é😀","f":true},`)
	})
}
