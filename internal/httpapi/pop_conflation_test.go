package httpapi

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPopConflation plays what a 1.1+ client sees of conflation (last-value delivery)
// on the HTTP routes: the refusals, the newest message of each partition and the ack
// that skips the rest, the echo on every answer (a 200 body even when empty), the
// stored policy winning over later requests, pop maintenance, the discovery route,
// the consumer-group and depth views, and a deleted group starting over.
func TestPopConflation(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	count := func(m map[string]any) int { return len(m["messages"].([]any)) }
	payloads := func(m map[string]any) []any {
		var out []any
		for _, x := range m["messages"].([]any) {
			out = append(out, x.(map[string]any)["data"])
		}
		return out
	}
	ackOne := func(t *testing.T, m map[string]any, i int, group, status string) map[string]any {
		t.Helper()
		msg := m["messages"].([]any)[i].(map[string]any)
		r := b.post(t, "/api/v1/ack/batch", mustJSON(t, map[string]any{"consumerGroup": group, "acknowledgments": []any{
			map[string]any{"transactionId": msg["transactionId"], "partitionId": msg["partitionId"],
				"leaseId": m["leaseId"], "status": status}}}))
		requireStatus(t, http.StatusOK, r)
		res := r.array(t)
		require.Len(t, res, 1)
		return res[0]
	}

	// Not parallel: pop maintenance is the broker's; the other cases wait for it.
	t.Run("Refusals", func(t *testing.T) {
		b.pushOne(t, "cf-ref", "p1", "", `1`)
		refusedAs := func(t *testing.T, path, want string) {
			t.Helper()
			r := b.get(t, path)
			requireStatus(t, http.StatusBadRequest, r)
			require.JSONEq(t, want, string(r.body))
		}
		needsGroup := `{"success":false,"error":"` + msgConflationNeedsGroup + `","code":"invalid_argument",` +
			`"field":"consumerGroup","messages":[]}`
		for _, path := range []string{
			"/api/v1/pop/queue/cf-ref/partition/p1?conflation=1",
			"/api/v1/pop?namespace=x&conflation=true&autoAck=true",
			"/api/v1/pop/queue/cf-ref?conflation=true&consumerGroup=__QUEUE_MODE__",
		} {
			refusedAs(t, path, needsGroup)
		}
		autoAck := `{"success":false,"error":"` + msgConflationAutoAck + `","code":"invalid_argument","field":"autoAck","messages":[]}`
		refusedAs(t, "/api/v1/pop/queue/cf-ref?conflation=true&autoAck=true&consumerGroup=g&batch=abc", autoAck)
		// Refused before pop maintenance answers.
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/system/maintenance/pop", `{"enabled":true}`))
		refusedAs(t, "/api/v1/pop/queue/cf-ref?conflation=true&autoAck=true&consumerGroup=g", autoAck)
		r := b.get(t, "/api/v1/pop/queue/cf-ref?conflation=true&consumerGroup=g")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"messages":[],"paused":true,"conflation":true}`, string(r.body))
		requireStatus(t, http.StatusNoContent, b.get(t, "/api/v1/pop/queue/cf-ref?consumerGroup=g"))
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/system/maintenance/pop", `{"enabled":false}`))
	})

	t.Run("NewestOfEachPartition", func(t *testing.T) {
		t.Parallel()
		for i := 1; i <= 5; i++ {
			b.pushOne(t, "cf-last", "a", "", mustJSON(t, i))
		}
		for i := 1; i <= 3; i++ {
			b.pushOne(t, "cf-last", "b", "", mustJSON(t, 10+i))
		}
		m := b.popOne(t, "cf-last", "consumerGroup=g&conflation=true&batch=10")
		require.Equal(t, true, m["conflation"])
		require.NotContains(t, m, "conflationConflict")
		require.ElementsMatch(t, []any{5.0, 13.0}, payloads(m), "the newest of each partition")
		for i := range 2 {
			res := ackOne(t, m, i, "g", "completed")
			require.Equal(t, true, res["success"], "%v", res)
			require.Equal(t, true, res["leaseReleased"], "%v", res)
			skipped := map[float64]float64{5: 4, 13: 2}[payloads(m)[i].(float64)]
			require.Equal(t, skipped, res["conflated"], "%v", res)
		}
		// Nothing is left; the empty answer still echoes the policy, with a body.
		r := b.get(t, "/api/v1/pop/queue/cf-last?consumerGroup=g")
		requireStatus(t, http.StatusOK, r)
		m = r.object(t)
		require.Equal(t, 0, count(m))
		require.Equal(t, true, m["conflation"], "absent: echoed because the stored policy is on")
		require.Equal(t, true, m["success"])

		// A message pushed after the claim stays pending for the next pop; its ack
		// skips nothing.
		b.pushOne(t, "cf-last", "a", "", `6`)
		m = b.popOne(t, "cf-last", "consumerGroup=g")
		require.Equal(t, []any{6.0}, payloads(m))
		res := ackOne(t, m, 0, "g", "completed")
		require.Equal(t, 0.0, res["conflated"], "%v", res)
	})

	t.Run("TheStoredPolicyWins", func(t *testing.T) {
		t.Parallel()
		for i := 1; i <= 3; i++ {
			b.pushOne(t, "cf-pol", "p", "", mustJSON(t, i))
		}
		// Registered without conflation: a later request for it conflicts, and
		// delivery is normal.
		m := b.popOne(t, "cf-pol", "consumerGroup=plain&batch=1")
		require.NotContains(t, m, "conflation")
		require.Equal(t, []any{1.0}, payloads(m))
		ackOne(t, m, 0, "plain", "completed")
		m = b.popOne(t, "cf-pol", "consumerGroup=plain&batch=5&conflation=true")
		require.Equal(t, true, m["conflationConflict"])
		require.NotContains(t, m, "conflation")
		require.Equal(t, []any{2.0, 3.0}, payloads(m))
		res := ackOne(t, m, 1, "plain", "completed")
		require.NotContains(t, res, "conflated", "not a conflating group")

		// Registered with conflation: asking for none conflicts and is served
		// conflated; not asking is served conflated.
		m = b.popOne(t, "cf-pol", "consumerGroup=last&conflation=true")
		require.Equal(t, true, m["conflation"])
		require.Equal(t, []any{3.0}, payloads(m))
		ackOne(t, m, 0, "last", "completed")
		b.pushOne(t, "cf-pol", "p", "", `4`)
		b.pushOne(t, "cf-pol", "p", "", `5`)
		m = b.popOne(t, "cf-pol", "consumerGroup=last&conflation=false")
		require.Equal(t, true, m["conflation"])
		require.Equal(t, true, m["conflationConflict"])
		require.Equal(t, []any{5.0}, payloads(m))
		r := b.get(t, "/api/v1/pop/queue/cf-pol?consumerGroup=last&conflation=false")
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, true, r.object(t)["conflationConflict"], "an empty answer echoes the conflict")

		// The views report the stored policy.
		r = b.get(t, "/api/v1/consumer-groups")
		requireStatus(t, http.StatusOK, r)
		seen := map[string]any{}
		for _, g := range r.array(t) {
			if g["queueName"] == "cf-pol" {
				seen[g["name"].(string)] = g["conflation"]
			}
		}
		require.Equal(t, map[string]any{"plain": false, "last": true}, seen)
		r = b.get(t, "/api/v1/consumer-groups/last")
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, true, r.object(t)["cf-pol"].(map[string]any)["conflation"])
		r = b.get(t, "/api/v1/resources/queues/cf-pol/depth?group=last")
		requireStatus(t, http.StatusOK, r)
		d := r.object(t)
		require.Equal(t, true, d["conflation"])
		require.Equal(t, 2.0, d["pending"], "4 and 5, leased")
		require.Equal(t, 1.0, d["effectivePending"], "one partition owes one message")
		r = b.get(t, "/api/v1/resources/queues/cf-pol/depth?group=plain")
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, false, r.object(t)["conflation"])
		// ... and so do the queue's views, group by group.
		for _, path := range []string{"/api/v1/status/queues/cf-pol", "/api/v1/resources/queues/cf-pol", "/api/v1/status?queue=cf-pol"} {
			r = b.get(t, path)
			requireStatus(t, http.StatusOK, r)
			lags := map[string]any{}
			for _, g := range r.object(t)["consumerGroups"].([]any) {
				if g := g.(map[string]any); g["queue"] == "cf-pol" {
					lags[g["group"].(string)] = g["conflation"]
				}
			}
			require.Equal(t, map[string]any{"plain": false, "last": true}, lags, path)
		}

		// A deleted group starts over: its next pop stores what it asks.
		requireStatus(t, http.StatusOK, b.do(t, http.MethodDelete, "/api/v1/consumer-groups/last/queues/cf-pol", ""))
		m = b.popOne(t, "cf-pol", "consumerGroup=last&batch=10&subscriptionMode=all")
		require.NotContains(t, m, "conflation")
		require.Equal(t, 5, count(m))
	})

	t.Run("DiscoveryAndNamedPartition", func(t *testing.T) {
		t.Parallel()
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure", `{"queue":"cf-disc","namespace":"cf-ns"}`))
		for i := 1; i <= 3; i++ {
			b.pushOne(t, "cf-disc", "p", "", mustJSON(t, i))
		}
		m := b.get(t, "/api/v1/pop?namespace=cf-ns&consumerGroup=g&conflation=true").object(t)
		require.Equal(t, true, m["conflation"])
		require.Equal(t, []any{3.0}, payloads(m))
		r := b.get(t, "/api/v1/pop?namespace=cf-ns&consumerGroup=g&conflation=true")
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, true, r.object(t)["conflation"], "empty, still echoed")

		b.pushOne(t, "cf-named", "p", "", `1`)
		b.pushOne(t, "cf-named", "p", "", `2`)
		r = b.get(t, "/api/v1/pop/queue/cf-named/partition/p?consumerGroup=g&conflation=true")
		requireStatus(t, http.StatusOK, r)
		m = r.object(t)
		require.Equal(t, true, m["conflation"])
		require.Equal(t, []any{2.0}, payloads(m))
		// A queue that does not exist yet, or no queue of the namespace: the request is
		// answered as applied, so a client that starts before its producers keeps
		// polling.
		r = b.get(t, "/api/v1/pop/queue/cf-nothing-yet?consumerGroup=g&conflation=true")
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, true, r.object(t)["conflation"])
		r = b.get(t, "/api/v1/pop?namespace=cf-no-such-ns&consumerGroup=g&conflation=true")
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, true, r.object(t)["conflation"])

		// Across queues: the answer is conflated, and says so, as its own queue's
		// policy is.
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure", `{"queue":"cf-mx.a","namespace":"cf-mx","options":{"priority":9}}`))
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure", `{"queue":"cf-mx.b","namespace":"cf-mx","options":{"priority":1}}`))
		b.pushOne(t, "cf-mx.a", "p", "", `1`)
		m = b.popOne(t, "cf-mx.a", "consumerGroup=gm&conflation=true")
		require.Equal(t, true, m["conflation"])
		ackOne(t, m, 0, "gm", "completed")
		for i := 1; i <= 3; i++ {
			b.pushOne(t, "cf-mx.b", "p", "", mustJSON(t, i))
		}
		m = b.popOne(t, "cf-mx.b", "consumerGroup=gm&batch=1") // stores no conflation for gm there
		ackOne(t, m, 0, "gm", "completed")
		r = b.get(t, "/api/v1/pop?namespace=cf-mx&consumerGroup=gm&batch=5")
		requireStatus(t, http.StatusOK, r)
		m = r.object(t)
		require.Equal(t, "cf-mx.b", m["queue"])
		require.Equal(t, 2, count(m), "not conflated: cf-mx.b's policy")
		require.NotContains(t, m, "conflation", "the answering queue does not conflate")
	})
}
