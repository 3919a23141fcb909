package httpapi

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// defaultOptionsEcho is the options echo of a configure that sets nothing.
const defaultOptionsEcho = `{"priority":0,"leaseTime":300,"retryLimit":3,"retryDelay":0,"maxSize":0,
	"ttl":0,"deadLetterQueue":true,"dlqAfterMaxRetries":true,"delayedProcessing":0,
	"windowBuffer":0,"retentionSeconds":0,"completedRetentionSeconds":0,
	"retentionEnabled":false,"encryptionEnabled":false,"maxWaitTimeSeconds":0,
	"minPopWaitTime":0,"dedupWindowSeconds":3600,"retentionSinkHold":"","retentionSinkHoldMaxSeconds":604800}`

func TestConfigure(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})

	t.Run("ValidationMessages", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name, body, msg, field string
		}{
			{"QueueMissing", `{"options":{}}`, "queue is required", "queue"},
			{"QueueNull", `{"queue":null}`, "queue is required", "queue"},
			{"QueueNotString", `{"queue":5}`, "queue is required", "queue"},
			{"QueueEmpty", `{"queue":""}`, "queue is required", "queue"},
			{"IntOptionString", `{"queue":"c","options":{"leaseTime":"300"}}`, "options.leaseTime must be an integer of 32 bits (-2147483648 to 2147483647)", "options.leaseTime"},
			{"IntOptionFraction", `{"queue":"c","options":{"priority":1.5}}`, "options.priority must be an integer of 32 bits (-2147483648 to 2147483647)", "options.priority"},
			{"IntOptionOverflow", `{"queue":"c","options":{"ttl":99999999999}}`, "options.ttl must be an integer of 32 bits (-2147483648 to 2147483647)", "options.ttl"},
			{"IntOptionJustOver", `{"queue":"c","options":{"leaseTime":2147483648}}`, "options.leaseTime must be an integer of 32 bits (-2147483648 to 2147483647)", "options.leaseTime"},
			{"BoolOptionNumber", `{"queue":"c","options":{"retentionEnabled":1}}`, "options.retentionEnabled must be a boolean", "options.retentionEnabled"},
			{"NegativeOption", `{"queue":"c","options":{"leaseTime":-1}}`, "options.leaseTime must not be negative", "options.leaseTime"},
			{"EncryptionWithoutKey", `{"queue":"c","options":{"encryptionEnabled":true}}`,
				"options.encryptionEnabled needs QUEEN_ENCRYPTION_KEY (64 hex characters) configured on the broker", "options.encryptionEnabled"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				requireError(t, b.post(t, "/api/v1/configure", tc.body), http.StatusBadRequest, "invalid_argument", tc.msg, tc.field)
			})
		}
	})

	t.Run("EchoHasEveryOption", func(t *testing.T) {
		t.Parallel()
		r := b.post(t, "/api/v1/configure", `{"queue":"cfg-echo","namespace":"billing","task":"invoice",
			"options":{"leaseTime":60,"retryLimit":5,"priority":7,"retentionEnabled":true,"delayedProcessing":2.0,
			           "unknownKey":"ignored","windowBuffer":null}}`)
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, sortedKeys("configured", "queueId", "partitionId", "queue", "namespace", "task", "options"), keys(m))
		require.Equal(t, true, m["configured"])
		require.True(t, queue.IsUUID(m["queueId"].(string)))
		require.True(t, queue.IsUUID(m["partitionId"].(string)))
		require.Equal(t, "cfg-echo", m["queue"])
		require.Equal(t, "billing", m["namespace"])
		require.Equal(t, "invoice", m["task"])
		opts := m["options"].(map[string]any)
		require.Len(t, opts, 19, "every option but namespace and task")
		require.Equal(t, float64(60), opts["leaseTime"])
		require.Equal(t, float64(5), opts["retryLimit"])
		require.Equal(t, float64(7), opts["priority"])
		require.Equal(t, float64(2), opts["delayedProcessing"])
		require.Equal(t, true, opts["retentionEnabled"])
		require.Equal(t, float64(0), opts["windowBuffer"])

		// The Default partition exists and is the one reported.
		d := b.get(t, "/api/v1/resources/queues/cfg-echo").object(t)
		parts := d["partitions"].([]any)
		require.Len(t, parts, 1)
		require.Equal(t, m["partitionId"], parts[0].(map[string]any)["id"])
	})

	t.Run("FullReplacement", func(t *testing.T) {
		t.Parallel()
		first := b.post(t, "/api/v1/configure", `{"queue":"cfg-replace","namespace":"ns","options":{"leaseTime":10,"priority":3}}`)
		requireStatus(t, http.StatusOK, first)
		r := b.post(t, "/api/v1/configure", `{"queue":"cfg-replace","mode":"replace","namespace":null,"task":7,"options":[1,2]}`)
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, first.object(t)["queueId"], m["queueId"])
		require.Equal(t, "", m["namespace"])
		require.Equal(t, "", m["task"])
		require.JSONEq(t, defaultOptionsEcho, mustJSON(t, m["options"]))
	})
}

func TestQueueResources(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	for _, body := range []string{
		`{"queue":"res-a","namespace":"billing","task":"invoice"}`,
		`{"queue":"res-b","namespace":"billing","task":"refund"}`,
		`{"queue":"res-c","namespace":"shipping"}`,
	} {
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure", body))
	}
	b.pushOne(t, "res-a", "p1", "", `1`)
	b.pushOne(t, "res-a", "p1", "", `2`)

	names := func(t *testing.T, query string) []string {
		t.Helper()
		r := b.get(t, "/api/v1/resources/queues"+query)
		requireStatus(t, http.StatusOK, r)
		var out []string
		for _, q := range r.object(t)["queues"].([]any) {
			out = append(out, q.(map[string]any)["name"].(string))
		}
		return out
	}

	t.Run("ListShapeNewestFirst", func(t *testing.T) {
		t.Parallel()
		r := b.get(t, "/api/v1/resources/queues")
		requireStatus(t, http.StatusOK, r)
		qs := r.object(t)["queues"].([]any)
		require.Len(t, qs, 3)
		var a map[string]any
		for _, q := range qs {
			if q.(map[string]any)["name"] == "res-a" {
				a = q.(map[string]any)
			}
		}
		require.Equal(t, sortedKeys("id", "name", "namespace", "task", "createdAt", "partitions", "messages"), keys(a))
		require.Equal(t, "billing", a["namespace"])
		require.Equal(t, float64(2), a["partitions"], "Default and p1")
		require.Equal(t, map[string]any{"total": float64(2), "pending": float64(2), "processing": float64(0),
			"completed": float64(0)}, a["messages"])
	})

	t.Run("FiltersAndPaging", func(t *testing.T) {
		t.Parallel()
		require.ElementsMatch(t, []string{"res-a", "res-b"}, names(t, "?namespace=billing"))
		require.Equal(t, []string{"res-b"}, names(t, "?namespace=billing&task=refund"))
		require.Empty(t, names(t, "?namespace=nothing"))
		all := names(t, "")
		require.Equal(t, all[:2], names(t, "?limit=2"))
		require.Equal(t, all[1:], names(t, "?offset=1&limit=0"))
		require.Empty(t, names(t, "?offset=9"))
		requireError(t, b.get(t, "/api/v1/resources/queues?limit=x"), http.StatusBadRequest, "invalid_argument", "limit must be an integer", "limit")
		requireError(t, b.get(t, "/api/v1/resources/queues?offset=-1"), http.StatusBadRequest, "invalid_argument", "offset must not be negative", "offset")
	})

	t.Run("DetailShape", func(t *testing.T) {
		t.Parallel()
		r := b.get(t, "/api/v1/resources/queues/res-a")
		requireStatus(t, http.StatusOK, r)
		d := r.object(t)
		require.Equal(t, sortedKeys("id", "name", "namespace", "task", "createdAt", "partitions", "totals",
			"options", "enforcedOptions"), keys(d), "consumerGroups is omitted: nobody consumes the queue")
		require.Equal(t, "res-a", d["name"])
		opts := d["options"].(map[string]any)
		require.Equal(t, "billing", opts["namespace"], "namespace and task are options too")
		require.Equal(t, "invoice", opts["task"])
		delete(opts, "namespace")
		delete(opts, "task")
		require.JSONEq(t, defaultOptionsEcho, mustJSON(t, opts), "the configure echo's shape")
		require.Equal(t, map[string]any{"ttl": true, "retryDelay": true, "maxSize": true}, d["enforcedOptions"])
		require.Equal(t, "invoice", d["task"])
		parts := d["partitions"].([]any)
		require.Len(t, parts, 2)
		for _, p := range parts {
			pm := p.(map[string]any)
			require.Equal(t, sortedKeys("id", "name", "createdAt", "stats", "oldestMessage", "newestMessage"), keys(pm))
			if pm["name"] == "Default" {
				require.Nil(t, pm["oldestMessage"])
			} else {
				require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, pm["oldestMessage"])
			}
		}
		require.Equal(t, map[string]any{"total": float64(2), "pending": float64(2), "processing": float64(0),
			"completed": float64(0), "failed": float64(0), "deadLetter": float64(0)}, d["totals"])
	})

	t.Run("DetailUnknownIs404", func(t *testing.T) {
		t.Parallel()
		r := b.get(t, "/api/v1/resources/queues/res-nope")
		requireError(t, r, http.StatusNotFound, "not_found", "Queue not found", "")
		require.JSONEq(t, `{"error":"Queue not found","code":"not_found"}`, string(r.body))
	})

	t.Run("Delete", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Options{}) // its own database: the list subtests count queues
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure", `{"queue":"res-del"}`))
		r := b.do(t, http.MethodDelete, "/api/v1/resources/queues/res-del", "")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"deleted":true,"queue":"res-del","existed":true}`, string(r.body))
		r = b.do(t, http.MethodDelete, "/api/v1/resources/queues/res-del", "")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"deleted":true,"queue":"res-del","existed":false}`, string(r.body))
		requireStatus(t, http.StatusNotFound, b.get(t, "/api/v1/resources/queues/res-del"))
	})
}
