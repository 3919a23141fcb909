package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

func TestTransactionKVRider(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})

	t.Run("AppliedWithTheAckAndThePush", func(t *testing.T) {
		t.Parallel()
		in := b.pushOne(t, "rider-in", "", "in-1", `{"x":1}`)
		b.popOne(t, "rider-in", "consumerGroup=g")
		r := b.post(t, "/api/v1/transaction", fmt.Sprintf(`{"operations":[
			{"type":"ack","transactionId":"in-1","partitionId":%q,"status":"completed","consumerGroup":"g"},
			{"type":"push","items":[{"queue":"rider-out","payload":1},{"queue":"rider-out","payload":2}]}],
			"kv":[{"op":"putIfAbsent","ns":"idem","key":"in-1","value":true,"ttlSeconds":86400,"required":true},
			      {"op":"get","ns":"idem","key":"in-1"}]}`, in["partition_id"]))
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, true, m["success"], "body: %s", r.body)
		res := m["results"].([]any)
		require.Len(t, res, 5)
		kv := res[3].(map[string]any)
		require.Equal(t, []any{float64(3), float64(0), "kv", "putIfAbsent", true},
			[]any{kv["index"], kv["opIndex"], kv["type"], kv["op"], kv["applied"]})
		get := res[4].(map[string]any)
		require.Equal(t, []any{float64(4), float64(1), true}, []any{get["index"], get["opIndex"], get["found"]})
		got := b.kvResults(t, `[{"op":"get","ns":"idem","key":"in-1"}]`)[0].(map[string]any)
		require.Equal(t, true, got["value"])
		requireStatus(t, http.StatusOK, b.get(t, "/api/v1/pop/queue/rider-out"))
	})

	t.Run("RequiredFailureRollsBackAckAndPush", func(t *testing.T) {
		t.Parallel()
		b.kvResults(t, `[{"op":"put","ns":"idem","key":"dup","value":"winner","forever":true}]`)
		in := b.pushOne(t, "rb-in", "", "rb-1", `{"x":1}`)
		b.popOne(t, "rb-in", "consumerGroup=g")
		r := b.post(t, "/api/v1/transaction", fmt.Sprintf(`{"operations":[
			{"type":"ack","transactionId":"rb-1","partitionId":%q,"status":"completed","consumerGroup":"g"},
			{"type":"push","items":[{"queue":"rb-out","payload":1}]}],
			"kv":[{"op":"put","ns":"idem","key":"side","value":1,"forever":true},
			      {"op":"putIfAbsent","ns":"idem","key":"dup","value":"loser","forever":true,"required":true}]}`, in["partition_id"]))
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, sortedKeys("transactionId", "success", "ok", "reason", "error", "failedIndex", "kvReason",
			"version", "value", "results"), keys(m))
		require.Equal(t, []any{false, false, "kv_precondition", "kv_precondition_failed", float64(3), "exists", "winner"},
			[]any{m["success"], m["ok"], m["reason"], m["error"], m["failedIndex"], m["kvReason"], m["value"]})
		require.Empty(t, m["results"])
		requireStatus(t, http.StatusNoContent, b.get(t, "/api/v1/pop/queue/rb-out"))
		got := b.kvResults(t, `[{"op":"get","ns":"idem","key":"side"}]`)[0].(map[string]any)
		require.Equal(t, false, got["found"], "the rider's other write was rolled back")
		// The ack was rolled back too: the message is still leased to g, then redelivered.
		r = b.post(t, "/api/v1/ack", fmt.Sprintf(`{"transactionId":"rb-1","partitionId":%q,"status":"completed","consumerGroup":"g"}`,
			in["partition_id"]))
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, true, r.array(t)[0]["success"], "the message was still unacked: %s", r.body)
	})

	t.Run("RiderOnly", func(t *testing.T) {
		t.Parallel()
		r := b.post(t, "/api/v1/transaction", `{"kv":[{"op":"incr","ns":"cnt","key":"c","delta":2,"forever":true}]}`)
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, true, m["success"], "body: %s", r.body)
		res := m["results"].([]any)
		require.Equal(t, float64(2), res[0].(map[string]any)["value"])
	})

	t.Run("Refusals", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name, body string
			status     int
			reason     string
		}{
			{"Neither", `{}`, 400, "bad_request"},
			{"Timers", `{"operations":[{"type":"push","items":[{"queue":"t-never","payload":1}]}],"timers":[{"op":"schedule"}]}`, 400, "bad_request"},
			{"KVNotArray", `{"operations":[{"type":"push","items":[{"queue":"t-never","payload":1}]}],"kv":{}}`, 400, "bad_request"},
			{"GetPrefix", `{"kv":[{"op":"getPrefix","ns":"a","prefix":"p"}]}`, 400, "bad_request"},
			{"TooManyOps", `{"kv":[` + repeatJoin(`{"op":"get","ns":"a","key":"k"}`, 65) + `]}`, 400, "bad_request"},
			{"ValueTooLarge", `{"kv":[{"op":"put","ns":"a","key":"k","forever":true,"value":"` + strings.Repeat("x", 65537) + `"}]}`, 413, "payload_too_large"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				r := b.post(t, "/api/v1/transaction", tc.body)
				requireStatus(t, tc.status, r)
				m := r.object(t)
				require.Equal(t, []any{false, tc.reason}, []any{m["success"], m["reason"]}, "body: %s", r.body)
				require.NotEmpty(t, m["error"])
				require.True(t, queue.IsUUID(m["transactionId"].(string)), "the envelope carries a minted id: %s", r.body)
			})
		}
		requireStatus(t, http.StatusNoContent, b.get(t, "/api/v1/pop/queue/t-never"))
		r := b.post(t, "/api/v1/transaction", `{"operations":[{"type":"kv","op":"get"}]}`)
		requireError(t, r, http.StatusBadRequest, "invalid_argument",
			`operations[0].type "kv" is not an operation: KV ops and timers go in the top-level "kv" and "timers" arrays`, "operations[0].type")
	})
}

// repeatJoin joins n copies of s with commas.
func repeatJoin(s string, n int) string {
	out := s
	for range n - 1 {
		out += "," + s
	}
	return out
}
