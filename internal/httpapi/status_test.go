package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/store"
)

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// requireTypes checks that m has every key of want, each with the JSON type named
// there ("string", "number", "bool", "array", "object", "null", or alternatives
// joined by "|").
func requireTypes(t *testing.T, m map[string]any, want map[string]string) {
	t.Helper()
	for key, types := range want {
		v, ok := m[key]
		require.True(t, ok, "missing key %q in %v", key, m)
		require.Contains(t, strings.Split(types, "|"), jsonType(v), "key %q = %v", key, v)
	}
}

func obj(t *testing.T, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	require.True(t, ok, "not an object: %v", v)
	return m
}

func arr(t *testing.T, v any) []any {
	t.Helper()
	a, ok := v.([]any)
	require.True(t, ok, "not an array: %v", v)
	return a
}

// findBy returns the first object of list whose key equals value.
func findBy(t *testing.T, list any, key string, value any) map[string]any {
	t.Helper()
	for _, e := range arr(t, list) {
		if m := obj(t, e); m[key] == value {
			return m
		}
	}
	require.Failf(t, "not found", "no element with %s=%v in %v", key, value, list)
	return nil
}

// seeded describes the activity seedActivity created in queue sq (namespace
// "billing", task "invoice", partition "p0"): 3 pushed; a pop of 2 acked completed
// and dlq; a pop of 1 left leased; one empty pop; a transaction pushing 1 message to
// queue tq.
type seeded struct {
	sq, tq      string
	partitionID string
}

func (b *testBundle) seedActivity(t *testing.T) seeded {
	t.Helper()
	s := seeded{sq: "st-orders", tq: "st-tx"}
	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure",
		`{"queue":"st-orders","namespace":"billing","task":"invoice"}`))
	r := b.post(t, "/api/v1/push", `{"items":[
		{"queue":"st-orders","partition":"p0","transactionId":"m0","payload":{"n":0}},
		{"queue":"st-orders","partition":"p0","transactionId":"m1","payload":{"n":1}},
		{"queue":"st-orders","partition":"p0","transactionId":"m2","payload":{"n":2}}]}`)
	requireStatus(t, http.StatusCreated, r)
	s.partitionID = r.array(t)[0]["partition_id"].(string)

	pop := b.popOne(t, s.sq, "batch=2")
	msgs := arr(t, pop["messages"])
	require.Len(t, msgs, 2)
	acks := make([]map[string]any, 2)
	for i, status := range []string{"completed", "dlq"} {
		m := obj(t, msgs[i])
		acks[i] = map[string]any{"transactionId": m["transactionId"], "partitionId": m["partitionId"],
			"leaseId": pop["leaseId"], "status": status, "error": "boom"}
	}
	r = b.post(t, "/api/v1/ack/batch", mustJSON(t, map[string]any{"acknowledgments": acks}))
	requireStatus(t, http.StatusOK, r)
	for _, res := range r.array(t) {
		require.Equal(t, true, res["success"], "ack: %s", r.body)
	}
	leased := b.popOne(t, s.sq, "batch=1")
	require.Len(t, arr(t, leased["messages"]), 1)
	requireStatus(t, http.StatusNoContent, b.get(t, "/api/v1/pop/queue/st-orders?batch=1"))

	r = b.post(t, "/api/v1/transaction", `{"operations":[{"type":"push","items":[{"queue":"st-tx","payload":{}}]}]}`)
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, true, r.object(t)["success"], "tx: %s", r.body)

	_, err := b.broker.Analytics().Flush(t.Context())
	require.NoError(t, err)
	return s
}

func TestStatusRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	sd := b.seedActivity(t)

	t.Run("Status", func(t *testing.T) {
		t.Parallel()
		r := b.get(t, "/api/v1/status")
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		requireTypes(t, m, map[string]string{"timeRange": "object", "bucketMinutes": "number", "pointCount": "number",
			"throughput": "array", "queues": "array", "messages": "object", "leases": "object",
			"deadLetterQueue": "object", "workers": "array", "errors": "object", "statsAge": "number"})
		require.Equal(t, float64(1), m["bucketMinutes"])
		require.Equal(t, float64(60), m["bucketSeconds"], "the exact width, queen only")
		require.Equal(t, float64(60), m["pointCount"])
		require.Len(t, arr(t, m["throughput"]), 60)
		requireTypes(t, obj(t, m["timeRange"]), map[string]string{"from": "string", "to": "string"})
		require.GreaterOrEqual(t, m["statsAge"], float64(0))

		var ingested, popped, processed, dlq float64
		for _, p := range arr(t, m["throughput"]) {
			pm := obj(t, p)
			requireTypes(t, pm, map[string]string{"timestamp": "string", "ingested": "number", "processed": "number",
				"popMessages": "number", "ingestedPerSecond": "number", "processedPerSecond": "number",
				"popPerSecond": "number", "avgLagMs": "number", "maxLagMs": "number", "avgEventLoopLagMs": "number",
				"maxEventLoopLagMs": "number", "minFreeSlots": "number|null", "dbErrors": "number",
				"ackFailed": "number", "dlqCount": "number", "queenCpuUserPct": "number", "queenCpuSysPct": "number",
				"queenRssMb": "number", "dbPoolActive": "number", "dbPoolIdle": "number", "dbPoolSize": "number"})
			require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:00Z$`, pm["timestamp"])
			ingested += pm["ingested"].(float64)
			popped += pm["popMessages"].(float64)
			processed += pm["processed"].(float64)
			dlq += pm["dlqCount"].(float64)
		}
		require.Equal(t, float64(4), ingested, "3 pushed + 1 by the transaction")
		require.Equal(t, float64(3), popped)
		require.Equal(t, float64(1), processed)
		require.Equal(t, float64(1), dlq)

		q := findBy(t, m["queues"], "name", sd.sq)
		requireTypes(t, q, map[string]string{"id": "string", "name": "string", "namespace": "string",
			"task": "string", "partitions": "number", "totalConsumed": "number"})
		require.Equal(t, "billing", q["namespace"])
		require.Equal(t, float64(2), q["partitions"], "Default (configure) and p0")

		msgs := obj(t, m["messages"])
		requireTypes(t, msgs, map[string]string{"total": "number", "pending": "number", "processing": "number",
			"completed": "number", "failed": "number", "deadLetter": "number", "requests": "object",
			"batchEfficiency": "object"})
		require.Equal(t, float64(4), msgs["total"])
		require.Equal(t, float64(1), msgs["processing"])
		require.Equal(t, float64(1), msgs["deadLetter"])
		require.Equal(t, float64(1), msgs["completed"])
		require.Equal(t, float64(1), msgs["pending"], "the transaction's message")
		req := obj(t, msgs["requests"])
		require.Equal(t, map[string]any{"push": float64(1), "pop": float64(3), "ack": float64(1)}, req)
		requireTypes(t, obj(t, msgs["batchEfficiency"]), map[string]string{"push": "number", "pop": "number", "ack": "number"})
		require.Equal(t, float64(4), obj(t, msgs["batchEfficiency"])["push"], "pushed messages (the transaction's too) per push request")

		require.Equal(t, map[string]any{"active": float64(1), "partitionsWithLeases": float64(1),
			"totalBatchSize": float64(1), "totalAcked": float64(0)}, m["leases"])
		dl := obj(t, m["deadLetterQueue"])
		require.Equal(t, float64(1), dl["totalMessages"])
		require.Equal(t, float64(1), dl["affectedPartitions"])
		require.Equal(t, []any{map[string]any{"error": "boom", "count": float64(1)}}, dl["topErrors"])

		w := obj(t, arr(t, m["workers"])[0])
		requireTypes(t, w, map[string]string{"hostname": "string", "workerId": "string", "avgEventLoopLagMs": "number",
			"maxEventLoopLagMs": "number", "freeSlots": "number", "dbConnections": "number", "jobQueueSize": "number",
			"messagesProcessed": "number"})
		require.Equal(t, float64(4+3), w["messagesProcessed"])
		require.Equal(t, map[string]any{"dbErrors": float64(0), "ackFailed": float64(1), "dlqMessages": float64(1)}, m["errors"])
	})

	t.Run("StatusFilteredByQueue", func(t *testing.T) {
		t.Parallel()
		m := b.get(t, "/api/v1/status?queue="+sd.tq).object(t)
		require.Equal(t, float64(1), obj(t, m["messages"])["total"])
		require.Len(t, arr(t, m["queues"]), 1)
		require.Equal(t, map[string]any{"push": float64(0), "pop": float64(0), "ack": float64(0)},
			obj(t, m["messages"])["requests"], "a transaction is no push request")
	})

	t.Run("StatusRejectsBadTimes", func(t *testing.T) {
		t.Parallel()
		requireError(t, b.get(t, "/api/v1/status?from=yesterday"), http.StatusBadRequest, "invalid_argument",
			"from must be an RFC 3339 timestamp or a date (YYYY-MM-DD) in the years 0001–9999", "from")
		requireError(t, b.get(t, "/api/v1/analytics/queue-ops?to=2026-13-01T00:00:00Z"), http.StatusBadRequest,
			"invalid_argument", "to must be an RFC 3339 timestamp or a date (YYYY-MM-DD) in the years 0001–9999", "to")
		requireError(t, b.get(t, "/api/v1/status?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z"),
			http.StatusBadRequest, "invalid_argument", "from must be before to", "from")
	})

	t.Run("StatusBucketsFollowTheRange", func(t *testing.T) {
		t.Parallel()
		to := time.Now().UTC()
		for _, tc := range []struct {
			span    time.Duration
			minutes float64
		}{{6 * time.Hour, 5}, {24 * time.Hour, 15}, {7 * 24 * time.Hour, 60}, {30 * 24 * time.Hour, 360}} {
			q := fmt.Sprintf("/api/v1/status?from=%s&to=%s", to.Add(-tc.span).Format(time.RFC3339), to.Format(time.RFC3339))
			m := b.get(t, q).object(t)
			require.Equal(t, tc.minutes, m["bucketMinutes"], tc.span.String())
			require.Equal(t, float64(tc.span/time.Minute)/tc.minutes, m["pointCount"], tc.span.String())
		}
	})

	t.Run("StatusQueues", func(t *testing.T) {
		t.Parallel()
		m := b.get(t, "/api/v1/status/queues").object(t)
		requireTypes(t, m, map[string]string{"queues": "array", "pagination": "object"})
		require.Equal(t, map[string]any{"limit": float64(100), "offset": float64(0)}, m["pagination"])
		q := findBy(t, m["queues"], "name", sd.sq)
		requireTypes(t, q, map[string]string{"id": "string", "name": "string", "namespace": "string", "task": "string",
			"createdAt": "string", "partitions": "number", "messages": "object"})
		require.Equal(t, map[string]any{"total": float64(3), "pending": float64(0), "processing": float64(1),
			"completed": float64(1)}, q["messages"])
		one := arr(t, b.get(t, "/api/v1/status/queues?queue="+sd.sq).object(t)["queues"])
		require.Len(t, one, 1, "queue filters by exact name")
		require.Equal(t, sd.sq, obj(t, one[0])["name"])
		require.Empty(t, arr(t, b.get(t, "/api/v1/status/queues?queue=no-such-queue").object(t)["queues"]))

		page := b.get(t, "/api/v1/status/queues?limit=1&offset=1").object(t)
		require.Len(t, arr(t, page["queues"]), 1)
		first := b.get(t, "/api/v1/status/queues?limit=1").object(t)
		require.NotEqual(t, obj(t, arr(t, first["queues"])[0])["name"], obj(t, arr(t, page["queues"])[0])["name"])
		require.Empty(t, arr(t, b.get(t, "/api/v1/status/queues?offset=2").object(t)["queues"]))
		only := b.get(t, "/api/v1/status/queues?namespace=billing&task=invoice").object(t)
		require.Len(t, arr(t, only["queues"]), 1)
		requireError(t, b.get(t, "/api/v1/status/queues?limit=0"), http.StatusBadRequest, "invalid_argument",
			"limit must be between 1 and 1000", "limit")
	})

	t.Run("StatusQueue", func(t *testing.T) {
		t.Parallel()
		m := b.get(t, "/api/v1/status/queues/"+sd.sq+"?includePartitions=true").object(t)
		requireTypes(t, m, map[string]string{"queue": "object", "partitions": "array", "totals": "object"})
		q := obj(t, m["queue"])
		requireTypes(t, q, map[string]string{"id": "string", "name": "string", "namespace": "string", "task": "string",
			"priority": "number", "createdAt": "string", "config": "object"})
		requireTypes(t, obj(t, q["config"]), map[string]string{"leaseTime": "number", "retryLimit": "number",
			"retryDelay": "number", "ttl": "number", "maxQueueSize": "number", "deadLetterQueue": "bool"})
		p := findBy(t, m["partitions"], "name", "p0")
		requireTypes(t, p, map[string]string{"id": "string", "name": "string", "createdAt": "string", "messages": "object",
			"stats": "object", "cursor": "object", "lastActivity": "string", "oldestMessage": "string",
			"newestMessage": "string"})
		six := map[string]any{"total": float64(3), "pending": float64(0), "processing": float64(1),
			"completed": float64(1), "failed": float64(1), "deadLetter": float64(1)}
		require.Equal(t, six, p["messages"])
		require.Equal(t, six, p["stats"])
		require.Equal(t, map[string]any{"totalConsumed": float64(1), "batchesConsumed": float64(0)}, p["cursor"],
			"the completed message; the dead letter is not counted as consumed")
		totals := obj(t, m["totals"])
		require.Equal(t, six, totals["messages"])
		require.Equal(t, float64(3), totals["total"])
		require.Equal(t, float64(1), totals["deadLetter"])

		requireError(t, b.get(t, "/api/v1/status/queues/nope"), http.StatusNotFound, "not_found", "Queue not found", "")
	})

	t.Run("StatusQueueMessages", func(t *testing.T) {
		t.Parallel()
		all := b.get(t, "/api/v1/status/queues/"+sd.sq+"/messages").array(t)
		require.Len(t, all, 3)
		for _, m := range all {
			requireTypes(t, m, map[string]string{"id": "string", "transactionId": "string", "partitionId": "string",
				"queuePath": "string", "queue": "string", "partition": "string", "status": "string", "createdAt": "string"})
			require.Equal(t, sd.sq+"/p0", m["queuePath"])
		}
		status := map[any]any{}
		for _, m := range all {
			status[m["transactionId"]] = m["status"]
		}
		require.Equal(t, map[any]any{"m0": "completed", "m1": "dead_letter", "m2": "processing"}, status)
		require.Equal(t, "m2", all[0]["transactionId"], "newest first")

		page := b.get(t, "/api/v1/status/queues/"+sd.sq+"/messages?limit=1&offset=1").array(t)
		require.Len(t, page, 1)
		require.Equal(t, all[1]["id"], page[0]["id"])
		for _, offset := range []string{"3", "2147483647"} { // the largest offset is past the end too
			r := b.get(t, "/api/v1/status/queues/"+sd.sq+"/messages?offset="+offset)
			requireStatus(t, http.StatusOK, r)
			require.Equal(t, "[]", string(r.body))
		}
		requireError(t, b.get(t, "/api/v1/status/queues/nope/messages"), http.StatusNotFound, "not_found", "Queue not found", "")
	})

	t.Run("StatusAnalytics", func(t *testing.T) {
		t.Parallel()
		m := b.get(t, "/api/v1/status/analytics?interval=minute&queue="+sd.sq).object(t)
		requireTypes(t, m, map[string]string{"dataPoints": "array", "interval": "string", "from": "string", "to": "string"})
		require.Equal(t, "minute", m["interval"])
		points := arr(t, m["dataPoints"])
		from, err := time.Parse(time.RFC3339Nano, m["from"].(string))
		require.NoError(t, err)
		to, err := time.Parse(time.RFC3339Nano, m["to"].(string))
		require.NoError(t, err)
		require.Equal(t, 24*time.Hour, to.Sub(from), "the default 24 h, not cut to whole buckets")
		minutes := int(to.Add(-time.Millisecond).Truncate(time.Minute).Sub(from.Truncate(time.Minute))/time.Minute) + 1
		require.Len(t, points, minutes, "zero-filled minutes of the default 24 h, the first one partial")
		var sum float64
		for _, p := range points {
			pm := obj(t, p)
			requireTypes(t, pm, map[string]string{"timestamp": "string", "messages": "number"})
			sum += pm["messages"].(float64)
		}
		require.Equal(t, float64(3), sum)
		require.Equal(t, "hour", b.get(t, "/api/v1/status/analytics").object(t)["interval"])
		since := time.Now().Add(-72 * time.Hour).UTC().Truncate(time.Second)
		day := b.get(t, "/api/v1/status/analytics?interval=day&from="+since.Format(time.RFC3339)).object(t)
		require.Equal(t, api.FormatMillis(since), day["from"], "the window starts where asked, in a partial day")
		days := arr(t, day["dataPoints"])
		require.Len(t, days, 4, "the partial day of from, two whole days, and today")
		require.Equal(t, since.Truncate(24*time.Hour).Format(time.RFC3339), obj(t, days[0])["timestamp"])
		requireError(t, b.get(t, "/api/v1/status/analytics?interval=week"), http.StatusBadRequest, "invalid_argument",
			"interval must be minute, hour or day", "interval")
	})

	t.Run("StatusBuffers", func(t *testing.T) {
		t.Parallel()
		m := b.get(t, "/api/v1/status/buffers").object(t)
		requireTypes(t, m, map[string]string{"pending": "number", "failed": "number", "dbHealthy": "bool", "worker": "number"})
		require.Equal(t, true, m["dbHealthy"])
		require.Equal(t, float64(0), m["pending"])
	})

	t.Run("SystemMetrics", func(t *testing.T) {
		t.Parallel()
		m := b.get(t, "/api/v1/analytics/system-metrics").object(t)
		requireTypes(t, m, map[string]string{"timeRange": "object", "replicas": "array", "replicaCount": "number",
			"bucketMinutes": "number", "pointCount": "number"})
		require.Equal(t, float64(1), m["replicaCount"])
		rep := obj(t, arr(t, m["replicas"])[0])
		requireTypes(t, rep, map[string]string{"hostname": "string", "workerId": "string", "timeSeries": "array"})
		p := obj(t, arr(t, rep["timeSeries"])[0])
		requireTypes(t, p, map[string]string{"timestamp": "string", "sampleCount": "number", "metrics": "object"})
		metrics := obj(t, p["metrics"])
		for group, key := range map[string]string{"database": "pool_size", "runtime": "goroutines", "memory": "rss_bytes"} {
			st := obj(t, obj(t, metrics[group])[key])
			requireTypes(t, st, map[string]string{"avg": "number", "min": "number", "max": "number", "last": "number"})
			require.Positive(t, st["max"], "%s.%s", group, key)
		}
		none := b.get(t, "/api/v1/analytics/system-metrics?hostname=elsewhere").object(t)
		require.Empty(t, arr(t, none["replicas"]))
	})

	t.Run("WorkerMetrics", func(t *testing.T) {
		t.Parallel()
		m := b.get(t, "/api/v1/analytics/worker-metrics").object(t)
		requireTypes(t, m, map[string]string{"timeRange": "object", "bucketMinutes": "number", "pointCount": "number",
			"timeSeries": "array", "workers": "array", "queues": "array", "summary": "object"})
		require.Len(t, arr(t, m["timeSeries"]), int(m["pointCount"].(float64)))
		var pushes float64
		for _, p := range arr(t, m["timeSeries"]) {
			pm := obj(t, p)
			requireTypes(t, pm, map[string]string{"timestamp": "string", "pushMessages": "number", "popMessages": "number",
				"ackMessages": "number", "pushRequests": "number", "popRequests": "number", "ackRequests": "number",
				"jobsDone": "number", "pushPerSecond": "number", "popPerSecond": "number", "ackPerSecond": "number",
				"avgEventLoopLagMs": "number", "maxEventLoopLagMs": "number", "avgFreeSlots": "number",
				"minFreeSlots": "number|null", "dbConnections": "number", "avgJobQueueSize": "number",
				"maxJobQueueSize": "number", "backoffSize": "number", "avgLagMs": "number", "maxLagMs": "number",
				"lagCount": "number", "dbErrors": "number", "ackSuccess": "number", "ackFailed": "number", "dlqCount": "number"})
			pushes += pm["pushMessages"].(float64)
		}
		require.Equal(t, float64(4), pushes)
		w := obj(t, arr(t, m["workers"])[0])
		requireTypes(t, w, map[string]string{"hostname": "string", "workerId": "string", "avgEventLoopLagMs": "number",
			"maxEventLoopLagMs": "number", "freeSlots": "number", "dbConnections": "number", "jobQueueSize": "number",
			"backoffSize": "number", "messagesProcessed": "number", "lastSeen": "string"})
		q := findBy(t, m["queues"], "queueName", sd.sq)
		requireTypes(t, q, map[string]string{"queueName": "string", "popCount": "number", "avgLagMs": "number", "maxLagMs": "number"})
		require.Equal(t, float64(3), q["popCount"])
		sum := obj(t, m["summary"])
		requireTypes(t, sum, map[string]string{"totalPushMessages": "number", "totalPopMessages": "number",
			"totalAckMessages": "number", "totalPushRequests": "number", "totalPopRequests": "number",
			"totalAckRequests": "number", "totalDbErrors": "number", "totalAckFailed": "number", "totalDlq": "number",
			"pendingMessages": "number"})
		require.Equal(t, float64(2), sum["totalAckMessages"])
		require.Equal(t, float64(2), sum["pendingMessages"], "the leased message and the transaction's")
	})

	t.Run("QueueLag", func(t *testing.T) {
		t.Parallel()
		rows := b.get(t, "/api/v1/analytics/queue-lag?queue="+sd.sq).array(t)
		require.NotEmpty(t, rows)
		var pops float64
		for _, r := range rows {
			requireTypes(t, r, map[string]string{"queueName": "string", "popCount": "number", "avgLagMs": "number",
				"maxLagMs": "number", "bucketTime": "string"})
			require.Equal(t, sd.sq, r["queueName"])
			pops += r["popCount"].(float64)
		}
		require.Equal(t, float64(3), pops)
		r := b.get(t, "/api/v1/analytics/queue-lag?queue=nope")
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, "[]", string(r.body))
	})

	t.Run("QueueOps", func(t *testing.T) {
		t.Parallel()
		m := b.get(t, "/api/v1/analytics/queue-ops").object(t)
		requireTypes(t, m, map[string]string{"timeRange": "object", "bucketMinutes": "number", "series": "array", "queues": "array"})
		require.ElementsMatch(t, []any{sd.sq, sd.tq}, m["queues"])
		var push, popEmpty, ackOK, ackFail, created float64
		for _, p := range arr(t, m["series"]) {
			pm := obj(t, p)
			requireTypes(t, pm, map[string]string{"bucket": "string", "queueName": "string", "pushRequests": "number",
				"pushMessages": "number", "popMessages": "number", "popEmpty": "number", "ackRequests": "number",
				"ackSuccess": "number", "ackFailed": "number", "transactions": "number", "partitionsCreated": "number",
				"partitionsDeleted": "number", "partitionCount": "number", "avgLagMs": "number", "maxLagMs": "number",
				"pushPerSecond": "number", "popPerSecond": "number", "ackPerSecond": "number", "emptyPerSecond": "number",
				"parkedCount": "number"})
			if pm["queueName"] == sd.sq {
				push += pm["pushMessages"].(float64)
				popEmpty += pm["popEmpty"].(float64)
				ackOK += pm["ackSuccess"].(float64)
				ackFail += pm["ackFailed"].(float64)
				created += pm["partitionsCreated"].(float64)
				require.Equal(t, float64(2), pm["partitionCount"], "Default and p0")
			} else {
				require.Equal(t, float64(1), pm["transactions"])
			}
		}
		require.Equal(t, []float64{3, 1, 1, 1}, []float64{push, popEmpty, ackOK, ackFail})
		require.GreaterOrEqual(t, created, float64(1))
	})

	t.Run("Retention", func(t *testing.T) {
		t.Parallel()
		m := b.get(t, "/api/v1/analytics/retention").object(t)
		requireTypes(t, m, map[string]string{"timeRange": "object", "bucketMinutes": "number", "series": "array", "totals": "object"})
		require.Empty(t, arr(t, m["series"]), "no retention job writes retention_history yet")
		requireTypes(t, obj(t, m["totals"]), map[string]string{"retentionMsgs": "number", "completedRetentionMsgs": "number",
			"evictionMsgs": "number", "totalMsgs": "number", "eventCount": "number"})
	})

	t.Run("PostgresStats", func(t *testing.T) {
		t.Parallel()
		m := b.get(t, "/api/v1/analytics/postgres-stats").object(t)
		requireTypes(t, m, map[string]string{"databaseCache": "object", "tableCache": "array", "indexCache": "array",
			"cacheSummary": "object", "deadTuples": "array", "hotUpdates": "array", "activeQueries": "array",
			"autovacuumStatus": "array", "bufferConfig": "object", "bufferUsage": "object", "tableSizes": "array"})
		findBy(t, m["tableSizes"], "table", "messages")
		requireTypes(t, obj(t, m["bufferConfig"]), map[string]string{"shared_buffers": "object"})
	})

	t.Run("Overview", func(t *testing.T) {
		t.Parallel()
		m := b.get(t, "/api/v1/resources/overview").object(t)
		requireTypes(t, m, map[string]string{"queues": "number", "partitions": "number", "namespaces": "number",
			"tasks": "number", "messages": "object", "lag": "object", "throughput": "object", "timestamp": "string",
			"statsAge": "number"})
		require.Equal(t, float64(2), m["queues"])
		require.Equal(t, float64(3), m["partitions"], "Default and p0 of st-orders, Default of st-tx")
		require.Equal(t, float64(2), m["namespaces"], "billing, and st-tx derived from the auto-created queue's name")
		require.Equal(t, float64(1), m["tasks"])
		require.Equal(t, float64(0), m["statsAge"])
		require.Equal(t, map[string]any{"total": float64(4), "pending": float64(1), "processing": float64(1),
			"completed": float64(1), "failed": float64(1), "deadLetter": float64(1)}, m["messages"])
		lag := obj(t, m["lag"])
		for _, k := range []string{"time", "offset"} {
			requireTypes(t, obj(t, lag[k]), map[string]string{"avg": "number", "median": "number", "min": "number", "max": "number"})
		}
		require.Equal(t, float64(1), obj(t, lag["offset"])["max"])
		requireTypes(t, obj(t, m["throughput"]), map[string]string{"ingestedPerSecond": "number", "processedPerSecond": "number"})
	})

	t.Run("NamespacesAndTasks", func(t *testing.T) {
		t.Parallel()
		ns := b.get(t, "/api/v1/resources/namespaces").object(t)
		require.Len(t, arr(t, ns["namespaces"]), 2, "billing, and st-tx derived from the auto-created queue's name")
		n := findBy(t, ns["namespaces"], "namespace", "billing")
		requireTypes(t, n, map[string]string{"namespace": "string", "queues": "number", "partitions": "number", "messages": "object"})
		require.Equal(t, "billing", n["namespace"])
		require.Equal(t, float64(2), n["partitions"])
		requireTypes(t, obj(t, n["messages"]), map[string]string{"total": "number", "pending": "number"})
		require.Equal(t, float64(3), obj(t, n["messages"])["total"])

		tasks := b.get(t, "/api/v1/resources/tasks").object(t)
		task := obj(t, arr(t, tasks["tasks"])[0])
		requireTypes(t, task, map[string]string{"task": "string", "queues": "number", "partitions": "number", "messages": "object"})
		require.Equal(t, "invoice", task["task"])
		require.Equal(t, float64(1), task["queues"])
	})

	t.Run("Partitions", func(t *testing.T) {
		t.Parallel()
		m := b.get(t, "/api/v1/resources/partitions?queue="+sd.sq).object(t)
		requireTypes(t, m, map[string]string{"partitions": "array", "pagination": "object"})
		require.Len(t, arr(t, m["partitions"]), 2)
		p := findBy(t, m["partitions"], "name", "p0")
		requireTypes(t, p, map[string]string{"id": "string", "name": "string", "queue": "string", "queueId": "string",
			"namespace": "string", "task": "string", "createdAt": "string", "messages": "object", "cursor": "object",
			"lastActivity": "string|null", "oldestMessage": "string|null", "newestMessage": "string|null"})
		require.Equal(t, sd.partitionID, p["id"])
		require.Equal(t, float64(3), obj(t, p["messages"])["total"])

		all := b.get(t, "/api/v1/resources/partitions").object(t)
		require.Len(t, arr(t, all["partitions"]), 3)
		page := b.get(t, "/api/v1/resources/partitions?limit=2&offset=2").object(t)
		require.Len(t, arr(t, page["partitions"]), 1)
		requireError(t, b.get(t, "/api/v1/resources/partitions?queue=nope"), http.StatusNotFound, "not_found",
			"Queue not found", "")
	})
}

func TestStatsRefreshFlushesActivity(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.pushOne(t, "refresh-q", "", "", `{}`)

	r := b.post(t, "/api/v1/stats/refresh", "")
	requireStatus(t, http.StatusOK, r)
	m := r.object(t)
	requireTypes(t, m, map[string]string{"refreshed": "bool", "mode": "string", "flushed": "object"})
	require.Equal(t, true, m["refreshed"])
	require.Equal(t, "live", m["mode"])
	f := obj(t, m["flushed"])
	requireTypes(t, f, map[string]string{"minutes": "number", "queueRows": "number", "workerRows": "number",
		"parkedRows": "number", "systemRows": "number"})
	require.Equal(t, float64(1), f["queueRows"])

	ops := b.get(t, "/api/v1/analytics/queue-ops?queue=refresh-q").object(t)
	require.Equal(t, float64(1), obj(t, arr(t, ops["series"])[0])["pushMessages"])

	// A second refresh adds only what happened since: the row is not counted twice.
	b.pushOne(t, "refresh-q", "", "", `{}`)
	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/stats/refresh", "{}"))
	var total float64
	for _, p := range arr(t, b.get(t, "/api/v1/analytics/queue-ops?queue=refresh-q").object(t)["series"]) {
		total += obj(t, p)["pushMessages"].(float64)
	}
	require.Equal(t, float64(2), total)
}

func TestParkedLongPollsAreRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.pushOne(t, "parked-q", "", "", `{}`) // creates the queue
	b.popOne(t, "parked-q", "autoAck=true")

	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet,
			b.srv.URL+"/api/v1/pop/queue/parked-q?wait=true&timeout=20000", nil)
		resp, err := b.srv.Client().Do(req)
		if err != nil {
			done <- -1
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		done <- resp.StatusCode
	}()
	require.Eventually(t, func() bool { return b.broker.ParkedPolls() == 1 }, 5*time.Second, 10*time.Millisecond)
	_, err := b.broker.Analytics().Flush(t.Context())
	require.NoError(t, err)
	b.pushOne(t, "parked-q", "", "", `{}`) // wakes the long-poll
	require.Equal(t, http.StatusOK, <-done)

	m := b.get(t, "/api/v1/analytics/queue-parked-replicas").object(t)
	requireTypes(t, m, map[string]string{"timeRange": "object", "bucketMinutes": "number", "series": "array", "replicas": "array"})
	p := findBy(t, m["series"], "queueName", "parked-q")
	requireTypes(t, p, map[string]string{"bucket": "string", "queueName": "string", "hostname": "string",
		"workerId": "string", "parkedCount": "number"})
	require.Positive(t, p["parkedCount"])
	rep := obj(t, arr(t, m["replicas"])[0])
	require.Equal(t, p["workerId"], rep["workerId"])

	ops := b.get(t, "/api/v1/analytics/queue-ops?queue=parked-q").object(t)
	require.Positive(t, obj(t, arr(t, ops["series"])[0])["parkedCount"])
}

func TestMaintenance(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})

	r := b.get(t, "/api/v1/system/maintenance")
	requireStatus(t, http.StatusOK, r)
	m := r.object(t)
	requireTypes(t, m, map[string]string{"maintenanceMode": "bool", "popMaintenanceMode": "bool",
		"bufferedMessages": "number", "bufferHealthy": "bool", "bufferStats": "object"})
	bs := obj(t, m["bufferStats"])
	requireTypes(t, bs, map[string]string{"pendingCount": "number", "failedCount": "number", "dbHealthy": "bool",
		"failedFiles": "object"})
	requireTypes(t, obj(t, bs["failedFiles"]), map[string]string{"count": "number", "totalBytes": "number",
		"totalMB": "number", "failoverCount": "number", "qos0Count": "number"})
	require.Equal(t, false, m["maintenanceMode"])

	for _, path := range []string{"/api/v1/system/maintenance", "/api/v1/system/maintenance/pop"} {
		for _, body := range []string{`{}`, `{"enabled":"true"}`, `{"enabled":1}`, `{"enabled":null}`} {
			requireError(t, b.post(t, path, body), http.StatusBadRequest, "invalid_argument",
				"enabled (boolean) is required", "enabled")
		}
		requireError(t, b.post(t, path, ""), http.StatusBadRequest, "invalid_argument", "Empty request body", "")
	}

	t.Run("PushMaintenanceRefusesPushes", func(t *testing.T) {
		r := b.post(t, "/api/v1/system/maintenance", `{"enabled":true}`)
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		requireTypes(t, m, map[string]string{"maintenanceMode": "bool", "bufferedMessages": "number",
			"bufferHealthy": "bool", "message": "string"})
		require.Equal(t, true, m["maintenanceMode"])
		require.Equal(t, false, m["bufferHealthy"])
		push, pop := b.broker.Paused()
		require.True(t, push)
		require.False(t, pop)

		r = b.post(t, "/api/v1/push", `{"items":[{"queue":"maint-q","payload":{"a":1}}]}`)
		requireStatus(t, http.StatusServiceUnavailable, r)
		require.Equal(t, "1", r.header.Get("Retry-After"))
		body := r.object(t)
		require.Equal(t, "push maintenance mode is on and this broker has no spool; retry when maintenance is off", body["error"])
		require.Equal(t, "unavailable", body["code"])
		requireError(t, b.get(t, "/api/v1/resources/queues/maint-q"), http.StatusNotFound, "not_found", "Queue not found", "")
		require.Equal(t, true, b.get(t, "/api/v1/system/maintenance").object(t)["maintenanceMode"])

		// An empty push has nothing to refuse; transactions ignore maintenance (upstream).
		r = b.post(t, "/api/v1/push", `{"items":[]}`)
		requireStatus(t, http.StatusCreated, r)
		r = b.post(t, "/api/v1/transaction", `{"operations":[{"type":"push","items":[{"queue":"maint-tx","payload":{}}]}]}`)
		require.Equal(t, true, r.object(t)["success"])

		r = b.post(t, "/api/v1/system/maintenance", `{"enabled":false}`)
		require.Equal(t, false, r.object(t)["maintenanceMode"])
		require.Equal(t, true, r.object(t)["bufferHealthy"])
		b.pushOne(t, "maint-q", "", "", `{"a":1}`)
	})

	t.Run("PopMaintenanceAnswers204AtOnce", func(t *testing.T) {
		b.pushOne(t, "maint-pop", "", "", `{}`)
		r := b.post(t, "/api/v1/system/maintenance/pop", `{"enabled":true}`)
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		requireTypes(t, m, map[string]string{"popMaintenanceMode": "bool", "message": "string"})
		require.Equal(t, true, m["popMaintenanceMode"])
		require.Equal(t, true, b.get(t, "/api/v1/system/maintenance/pop").object(t)["popMaintenanceMode"])
		require.Equal(t, true, b.get(t, "/api/v1/system/maintenance").object(t)["popMaintenanceMode"])

		start := time.Now()
		r = b.get(t, "/api/v1/pop/queue/maint-pop?wait=true&timeout=30000")
		requireStatus(t, http.StatusNoContent, r)
		require.Empty(t, r.body)
		require.Less(t, time.Since(start), 10*time.Second, "answered at once, not after the 30 s long-poll")

		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/system/maintenance/pop", `{"enabled":false}`))
		require.Len(t, arr(t, b.popOne(t, "maint-pop", "")["messages"]), 1)
	})

	t.Run("ParkedPopsAnswerWhenPopsPause", func(t *testing.T) {
		// A long-poll parked before the switch answers 204 at once, and takes nothing
		// pushed meanwhile.
		type answer struct {
			status int
			err    error
		}
		done := make(chan answer, 1)
		go func() {
			resp, err := b.srv.Client().Get(b.srv.URL + "/api/v1/pop/queue/maint-parked?wait=true&timeout=30000")
			if err != nil {
				done <- answer{err: err}
				return
			}
			resp.Body.Close()
			done <- answer{status: resp.StatusCode}
		}()
		require.Eventually(t, func() bool { return b.broker.ParkedPolls() == 1 }, 10*time.Second, 10*time.Millisecond)
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/system/maintenance/pop", `{"enabled":true}`))
		var got answer
		select {
		case got = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the parked pop was not answered when pops paused")
		}
		require.NoError(t, got.err)
		require.Equal(t, http.StatusNoContent, got.status)
		b.pushOne(t, "maint-parked", "", "", `{}`)
		requireStatus(t, http.StatusNoContent, b.get(t, "/api/v1/pop/queue/maint-parked?wait=true&timeout=30000"))
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/system/maintenance/pop", `{"enabled":false}`))
		require.Len(t, arr(t, b.popOne(t, "maint-parked", "")["messages"]), 1, "the message pushed during the pause")
	})
}

// runBroker runs b's background loops until the test ends, waiting for them to stop
// before the store closes.
func runBroker(t *testing.T, b *broker.Broker) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func TestMaintenanceReachesOtherReplicas(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDBURL(t)
	open := func() *store.Store {
		st, err := store.Open(store.Options{ConnString: dbURL, MaxConns: 4})
		require.NoError(t, err)
		t.Cleanup(st.Close)
		return st
	}
	a, b := start(t, Options{}, open()), start(t, Options{}, open())
	runBroker(t, a.broker)
	runBroker(t, b.broker)

	requireStatus(t, http.StatusOK, a.post(t, "/api/v1/system/maintenance", `{"enabled":true}`))
	require.Eventually(t, func() bool { push, _ := b.broker.Paused(); return push },
		5*time.Second, 20*time.Millisecond, "replica b never saw push maintenance")
	requireStatus(t, http.StatusServiceUnavailable, b.post(t, "/api/v1/push", `{"items":[{"queue":"two","payload":1}]}`))

	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/system/maintenance/pop", `{"enabled":true}`))
	require.Eventually(t, func() bool { _, pop := a.broker.Paused(); return pop },
		5*time.Second, 20*time.Millisecond, "replica a never saw pop maintenance")

	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/system/maintenance", `{"enabled":false}`))
	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/system/maintenance/pop", `{"enabled":false}`))
	require.Eventually(t, func() bool { push, pop := a.broker.Paused(); return !push && !pop },
		5*time.Second, 20*time.Millisecond, "replica a never saw maintenance end")
	b.pushOne(t, "two", "", "", `1`)
	requireStatus(t, http.StatusOK, a.get(t, "/api/v1/pop/queue/two"))
}
