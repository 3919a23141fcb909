package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// cgMillisRE matches a FormatMillis timestamp.
const cgMillisRE = `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`

// Keys of the consumer-group answers.
var (
	// inFlight is queen's; conflation the 1.x brokers'; the others are upstream's.
	cgSummaryKeys = sortedKeys("name", "topics", "queueName", "members", "partitionsWithLag", "totalLag", "inFlight",
		"maxTimeLag", "state", "subscriptionMode", "subscriptionTimestamp", "subscriptionCreatedAt", "conflation")
	cgLaggingKeys = sortedKeys("consumer_group", "queue_name", "partition_name", "partition_id", "worker_id",
		"offset_lag", "time_lag_seconds", "lag_hours", "oldest_unconsumed_at", "last_consumed_at")
	cgPartitionKeys = sortedKeys("partition", "workerId", "lastConsumedAt", "totalConsumed", "offsetLag",
		"timeLagSeconds", "leaseActive")
)

// cgDBBundle is a testBundle plus a direct pool on its database, for the facts a test
// must arrange or observe in SQL (message ages, advisory locks).
type cgDBBundle struct {
	*testBundle
	db *pgxpool.Pool
}

func cgSetupDB(t *testing.T) *cgDBBundle {
	t.Helper()
	dbURL := pgtest.NewDBURL(t)
	db, err := pgxpool.New(t.Context(), dbURL)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	st, err := store.Open(store.Options{ConnString: dbURL, MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	return &cgDBBundle{testBundle: start(t, Options{}, st), db: db}
}

// cgPop runs a pop (path and query under /api/v1/pop/queue/) and returns its messages;
// nil for a 204.
func cgPop(t *testing.T, b *testBundle, path string) []map[string]any {
	t.Helper()
	r := b.get(t, "/api/v1/pop/queue/"+path)
	if r.status == http.StatusNoContent {
		require.Empty(t, r.body)
		return nil
	}
	requireStatus(t, http.StatusOK, r)
	var out []map[string]any
	for _, m := range r.object(t)["messages"].([]any) {
		out = append(out, m.(map[string]any))
	}
	require.NotEmpty(t, out)
	return out
}

// cgData returns the payloads of msgs, in order.
func cgData(msgs []map[string]any) []any {
	out := make([]any, len(msgs))
	for i, m := range msgs {
		out[i] = m["data"]
	}
	return out
}

// cgAck acknowledges msg (completed) for the group it was popped by.
func cgAck(t *testing.T, b *testBundle, msg map[string]any) {
	t.Helper()
	r := b.post(t, "/api/v1/ack", mustJSON(t, map[string]any{
		"transactionId": msg["transactionId"], "partitionId": msg["partitionId"], "leaseId": msg["leaseId"],
		"consumerGroup": msg["consumerGroup"], "status": "completed",
	}))
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, true, r.array(t)[0]["success"], "ack: %s", r.body)
}

// cgPushN pushes payloads 1..n to (queueName, partition), one push each.
func cgPushN(t *testing.T, b *testBundle, queueName, partition string, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		res := b.pushOne(t, queueName, partition, "", fmt.Sprint(i))
		require.Equal(t, "queued", res["status"], "push: %v", res)
	}
}

// cgSummary returns the element of GET /api/v1/consumer-groups for (group, queueName).
func cgSummary(t *testing.T, b *testBundle, group, queueName string) map[string]any {
	t.Helper()
	r := b.get(t, "/api/v1/consumer-groups")
	requireStatus(t, http.StatusOK, r)
	for _, g := range r.array(t) {
		if g["name"] == group && g["queueName"] == queueName {
			return g
		}
	}
	require.Failf(t, "group not listed", "%s on %s in %s", group, queueName, r.body)
	return nil
}

// cgPartitions returns the partitions of queueName in GET /api/v1/consumer-groups/{group}.
func cgPartitions(t *testing.T, b *testBundle, group, queueName string) []map[string]any {
	t.Helper()
	r := b.get(t, "/api/v1/consumer-groups/"+url.PathEscape(group))
	requireStatus(t, http.StatusOK, r)
	q, ok := r.object(t)[queueName].(map[string]any)
	require.True(t, ok, "queue %s in %s", queueName, r.body)
	var out []map[string]any
	for _, p := range q["partitions"].([]any) {
		out = append(out, p.(map[string]any))
	}
	return out
}

func (b *testBundle) cgSeek(t *testing.T, group, queueName, body string) map[string]any {
	t.Helper()
	r := b.post(t, "/api/v1/consumer-groups/"+group+"/queues/"+queueName+"/seek", body)
	requireStatus(t, http.StatusOK, r)
	return r.object(t)
}

func TestConsumerGroupViews(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})

	// cg-view/p1 holds 1, 2, 3. Group lw pops all three under one lease and acks the
	// first; queue mode consumes one with autoAck; ld pops one and never acks; ln
	// subscribes with mode new and gets nothing.
	cgPushN(t, b, "cg-view", "p1", 1, 3)
	lw := cgPop(t, b, "cg-view?consumerGroup=lw&batch=3")
	require.Equal(t, []any{1.0, 2.0, 3.0}, cgData(lw))
	cgAck(t, b, lw[0])
	require.Len(t, cgPop(t, b, "cg-view?autoAck=true"), 1)
	ld := cgPop(t, b, "cg-view?consumerGroup=ld")
	require.Nil(t, cgPop(t, b, "cg-view?consumerGroup=ln&subscriptionMode=new"))

	t.Run("ListShapeAndLag", func(t *testing.T) {
		t.Parallel()
		g := cgSummary(t, b, "lw", "cg-view")
		require.Equal(t, cgSummaryKeys, keys(g))
		require.Equal(t, false, g["conflation"], "queen refuses conflation")
		require.Equal(t, []any{"cg-view"}, g["topics"])
		require.Equal(t, 1.0, g["members"])
		require.Equal(t, 1.0, g["partitionsWithLag"])
		require.Equal(t, 2.0, g["totalLag"])
		require.Equal(t, 2.0, g["inFlight"], "three leased, one acked")
		require.IsType(t, 0.0, g["maxTimeLag"])
		require.Less(t, g["maxTimeLag"], 300.0)
		require.Equal(t, "Stable", g["state"])
		require.Nil(t, g["subscriptionMode"])
		require.Nil(t, g["subscriptionTimestamp"])
		require.Nil(t, g["subscriptionCreatedAt"])

		qm := cgSummary(t, b, "__QUEUE_MODE__", "cg-view")
		require.Equal(t, 2.0, qm["totalLag"])
		require.Equal(t, "Stable", qm["state"])

		dead := cgSummary(t, b, "ld", "cg-view")
		require.Equal(t, 3.0, dead["totalLag"], "a lease is not consumption")
		require.Equal(t, 1.0, dead["inFlight"])
		require.Equal(t, "Dead", dead["state"])

		sub := cgSummary(t, b, "ln", "cg-view")
		require.Equal(t, "new", sub["subscriptionMode"])
		require.Regexp(t, cgMillisRE, sub["subscriptionTimestamp"])
		require.Regexp(t, cgMillisRE, sub["subscriptionCreatedAt"])
		require.Equal(t, 0.0, sub["totalLag"])
		require.Equal(t, 0.0, sub["partitionsWithLag"])
	})

	t.Run("GroupDetail", func(t *testing.T) {
		t.Parallel()
		r := b.get(t, "/api/v1/consumer-groups/lw")
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, []string{"cg-view"}, keys(r.object(t)))
		q := r.object(t)["cg-view"].(map[string]any)
		require.Equal(t, []string{"conflation", "partitions"}, keys(q))
		require.Equal(t, false, q["conflation"], "queen refuses conflation")
		parts := cgPartitions(t, b, "lw", "cg-view")
		require.Len(t, parts, 1)
		p := parts[0]
		require.Equal(t, cgPartitionKeys, keys(p))
		require.Equal(t, "p1", p["partition"])
		require.Equal(t, lw[0]["leaseId"], p["workerId"])
		require.Regexp(t, cgMillisRE, p["lastConsumedAt"])
		require.Equal(t, 1.0, p["totalConsumed"])
		require.Equal(t, 2.0, p["offsetLag"], "3 pushed, 1 acked")
		require.IsType(t, 0.0, p["timeLagSeconds"])
		require.Equal(t, true, p["leaseActive"], "two of the three leased messages are not acked yet")

		p = cgPartitions(t, b, "ld", "cg-view")[0]
		require.Equal(t, ld[0]["leaseId"], p["workerId"])
		require.Nil(t, p["lastConsumedAt"])
		require.Equal(t, 3.0, p["offsetLag"])
		require.Equal(t, true, p["leaseActive"])
	})

	t.Run("DetailOfAGroupThatOnlyPolledAnEmptyQueue", func(t *testing.T) {
		t.Parallel()
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure", `{"queue":"cg-view-empty"}`))
		requireStatus(t, http.StatusNoContent, b.get(t, "/api/v1/pop/queue/cg-view-empty?consumerGroup=reg"))
		require.Equal(t, "cg-view-empty", cgSummary(t, b, "reg", "cg-view-empty")["queueName"], "listed")
		r := b.get(t, "/api/v1/consumer-groups/reg")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"cg-view-empty":{"partitions":[],"conflation":false}}`, string(r.body),
			"the detail shows what the list shows")
	})

	t.Run("Lagging", func(t *testing.T) {
		t.Parallel()
		r := b.get(t, "/api/v1/consumer-groups/lagging?minLagSeconds=0")
		requireStatus(t, http.StatusOK, r)
		byGroup := map[string]map[string]any{}
		for _, row := range r.array(t) {
			require.Equal(t, cgLaggingKeys, keys(row))
			byGroup[row["consumer_group"].(string)] = row
		}
		require.NotContains(t, byGroup, "ln", "nothing unconsumed")
		row := byGroup["lw"]
		require.NotNil(t, row, "body: %s", r.body)
		require.Equal(t, "cg-view", row["queue_name"])
		require.Equal(t, "p1", row["partition_name"])
		require.True(t, queue.IsUUID(row["partition_id"].(string)))
		require.Equal(t, lw[0]["leaseId"], row["worker_id"])
		require.Equal(t, 2.0, row["offset_lag"])
		require.IsType(t, 0.0, row["time_lag_seconds"])
		require.IsType(t, 0.0, row["lag_hours"])
		require.Regexp(t, cgMillisRE, row["oldest_unconsumed_at"])
		require.Regexp(t, cgMillisRE, row["last_consumed_at"])
		require.Nil(t, byGroup["ld"]["last_consumed_at"])

		// The default threshold is an hour: nothing here is that old.
		r = b.get(t, "/api/v1/consumer-groups/lagging")
		requireStatus(t, http.StatusOK, r)
		for _, row := range r.array(t) {
			require.NotEqual(t, "cg-view", row["queue_name"])
		}
	})

	t.Run("Errors", func(t *testing.T) {
		t.Parallel()
		// An unknown group is an empty object, as upstream answers it.
		r := b.get(t, "/api/v1/consumer-groups/nobody")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{}`, string(r.body))
		requireError(t, b.get(t, "/api/v1/consumer-groups/lagging?minLagSeconds=1h"), http.StatusBadRequest,
			"invalid_argument", "minLagSeconds must be an integer", "minLagSeconds")
		requireError(t, b.get(t, "/api/v1/consumer-groups/lagging?minLagSeconds=-5"), http.StatusBadRequest,
			"invalid_argument", "minLagSeconds must not be negative", "minLagSeconds")
		requireError(t, b.get(t, "/api/v1/consumer-groups/"+strings.Repeat("g", 256)), http.StatusBadRequest,
			"invalid_argument", "group must be at most 255 characters", "group")
	})
}

func TestConsumerGroupEmptyLists(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	for _, path := range []string{"/api/v1/consumer-groups", "/api/v1/consumer-groups/lagging?minLagSeconds=0"} {
		r := b.get(t, path)
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, "[]", string(r.body))
	}
}

func TestConsumerGroupLaggingState(t *testing.T) {
	t.Parallel()
	b := cgSetupDB(t)
	res := b.pushOne(t, "cg-old", "p1", "", `1`)
	b.pushOne(t, "cg-old", "p1", "", `2`)
	// Both messages were produced an hour ago.
	_, err := b.db.Exec(t.Context(), `UPDATE queen.messages SET created_at = created_at - interval '1 hour'
		WHERE partition_id = $1`, res["partition_id"])
	require.NoError(t, err)
	_, err = b.db.Exec(t.Context(), `UPDATE queen.partition_lookup
		SET last_message_created_at = last_message_created_at - interval '1 hour' WHERE partition_id = $1`, res["partition_id"])
	require.NoError(t, err)
	require.Equal(t, []any{1.0}, cgData(cgPop(t, b.testBundle, "cg-old?consumerGroup=g&autoAck=true")))
	require.Equal(t, []any{1.0}, cgData(cgPop(t, b.testBundle, "cg-old"))) // queue mode: leased, not acked

	g := cgSummary(t, b.testBundle, "g", "cg-old")
	require.Equal(t, "Lagging", g["state"])
	require.GreaterOrEqual(t, g["maxTimeLag"], 3600.0)
	require.Equal(t, 1.0, g["totalLag"])

	r := b.get(t, "/api/v1/consumer-groups/lagging") // default threshold: one hour
	requireStatus(t, http.StatusOK, r)
	rows := r.array(t)
	require.Len(t, rows, 2, "g and queue mode: body %s", r.body)
	require.Equal(t, "__QUEUE_MODE__", rows[0]["consumer_group"], "most lagging first: queue mode waits since message 1")
	require.Equal(t, 2.0, rows[0]["offset_lag"])
	require.Equal(t, "g", rows[1]["consumer_group"])
	require.Equal(t, 1.0, rows[1]["offset_lag"])
	require.GreaterOrEqual(t, rows[1]["time_lag_seconds"], 3600.0)
	require.GreaterOrEqual(t, rows[1]["lag_hours"], 1.0)

	p := cgPartitions(t, b.testBundle, "g", "cg-old")[0]
	require.Equal(t, 1.0, p["offsetLag"])
	require.GreaterOrEqual(t, p["timeLagSeconds"], 3600.0)
}

func TestConsumerGroupDelete(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})

	t.Run("DeletedGroupResubscribesFromNow", func(t *testing.T) {
		t.Parallel()
		cgPushN(t, b, "cg-del", "", 1, 1)
		require.Nil(t, cgPop(t, b, "cg-del?consumerGroup=g&subscriptionMode=new"))
		cgPushN(t, b, "cg-del", "", 2, 2)

		r := b.do(t, http.MethodDelete, "/api/v1/consumer-groups/g?deleteMetadata=true", "")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"success":true,"consumerGroup":"g","deletedPartitions":1,"metadataDeleted":true}`, string(r.body))
		r = b.get(t, "/api/v1/consumer-groups/g")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{}`, string(r.body), "the deleted group is unknown")

		// A fresh "new" subscription: message 2 is history now.
		require.Nil(t, cgPop(t, b, "cg-del?consumerGroup=g&subscriptionMode=new"))
		cgPushN(t, b, "cg-del", "", 3, 3)
		require.Equal(t, []any{3.0}, cgData(cgPop(t, b, "cg-del?consumerGroup=g&subscriptionMode=new&autoAck=true")))
	})

	t.Run("KeepMetadataKeepsTheSubscription", func(t *testing.T) {
		t.Parallel()
		cgPushN(t, b, "cg-keep", "", 1, 1)
		require.Nil(t, cgPop(t, b, "cg-keep?consumerGroup=k&subscriptionMode=new"))
		cgPushN(t, b, "cg-keep", "", 2, 2)

		r := b.do(t, http.MethodDelete, "/api/v1/consumer-groups/k?deleteMetadata=false", "")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"success":true,"consumerGroup":"k","deletedPartitions":1,"metadataDeleted":false}`, string(r.body))
		// The subscription is still listed by the group view, without cursors.
		require.Empty(t, cgPartitions(t, b, "k", "cg-keep"))
		// The old subscription time still applies: message 2 came after it.
		require.Equal(t, []any{2.0}, cgData(cgPop(t, b, "cg-keep?consumerGroup=k&subscriptionMode=new&autoAck=true")))
	})

	t.Run("OneQueue", func(t *testing.T) {
		t.Parallel()
		for _, q := range []string{"cg-qa", "cg-qb"} {
			cgPushN(t, b, q, "", 1, 1)
			require.Len(t, cgPop(t, b, q+"?consumerGroup=two&autoAck=true"), 1)
		}
		r := b.do(t, http.MethodDelete, "/api/v1/consumer-groups/two/queues/cg-qa", "")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"success":true,"consumerGroup":"two","queueName":"cg-qa","deletedPartitions":1,"metadataDeleted":true}`,
			string(r.body))
		r = b.get(t, "/api/v1/consumer-groups/two")
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, []string{"cg-qb"}, keys(r.object(t)))
		// The group reads cg-qa from the beginning again.
		require.Equal(t, []any{1.0}, cgData(cgPop(t, b, "cg-qa?consumerGroup=two")))
	})

	t.Run("NothingToDelete", func(t *testing.T) {
		t.Parallel()
		r := b.do(t, http.MethodDelete, "/api/v1/consumer-groups/ghost", "")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"success":true,"consumerGroup":"ghost","deletedPartitions":0,"metadataDeleted":true}`, string(r.body))
		r = b.do(t, http.MethodDelete, "/api/v1/consumer-groups/ghost/queues/nowhere?deleteMetadata=0", "")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"success":true,"consumerGroup":"ghost","queueName":"nowhere","deletedPartitions":0,"metadataDeleted":false}`,
			string(r.body))
	})
}

func TestConsumerGroupSubscriptionUpdate(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})

	t.Run("MovesTheStartOfPartitionsWithoutCursor", func(t *testing.T) {
		t.Parallel()
		cgPushN(t, b, "cg-sub", "p1", 1, 1)
		require.Nil(t, cgPop(t, b, "cg-sub?consumerGroup=s&subscriptionMode=new"))
		// p2 is new to the group: it would be read from the subscription time.
		cgPushN(t, b, "cg-sub", "p2", 2, 2)
		future := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
		r := b.post(t, "/api/v1/consumer-groups/s/subscription",
			`{"subscriptionTimestamp":"`+future.Format(time.RFC3339Nano)+`"}`)
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"success":true,"consumerGroup":"s","newTimestamp":"`+future.Format("2006-01-02T15:04:05.000Z")+
			`","rowsUpdated":1}`, string(r.body))
		require.Nil(t, cgPop(t, b, "cg-sub?consumerGroup=s&partitions=5&batch=5"))
		require.Equal(t, future.Format("2006-01-02T15:04:05.000Z"), cgSummary(t, b, "s", "cg-sub")["subscriptionTimestamp"])
	})

	t.Run("UnknownGroupUpdatesNothing", func(t *testing.T) {
		t.Parallel()
		r := b.post(t, "/api/v1/consumer-groups/nobody/subscription", `{"subscriptionTimestamp":"2026-01-02T03:04:05Z"}`)
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"success":true,"consumerGroup":"nobody","newTimestamp":"2026-01-02T03:04:05.000Z","rowsUpdated":0}`,
			string(r.body))
	})

	t.Run("Validation", func(t *testing.T) {
		t.Parallel()
		const path = "/api/v1/consumer-groups/s/subscription"
		requireError(t, b.post(t, path, `{}`), http.StatusBadRequest, "invalid_argument",
			"Missing subscriptionTimestamp in request body", "subscriptionTimestamp")
		requireError(t, b.post(t, path, `{"subscriptionTimestamp":null}`), http.StatusBadRequest, "invalid_argument",
			"Missing subscriptionTimestamp in request body", "subscriptionTimestamp")
		requireError(t, b.post(t, path, `{"subscriptionTimestamp":5}`), http.StatusBadRequest, "invalid_argument",
			"subscriptionTimestamp must be a string", "subscriptionTimestamp")
		requireError(t, b.post(t, path, `{"subscriptionTimestamp":"yesterday"}`), http.StatusBadRequest, "invalid_argument",
			"subscriptionTimestamp must be an RFC 3339 timestamp (e.g. 2026-01-02T15:04:05Z) in the years 0001–9999", "subscriptionTimestamp")
		requireError(t, b.post(t, path, ``), http.StatusBadRequest, "invalid_argument", "Empty request body", "")
	})
}

// TestConsumerGroupViewAfterADeadLetter: a dead letter releases the lease (the rest of
// the batch is claimable at once), and the views say so: no workerId, no live lease,
// while the lease id is still taken as an ack without a lease.
func TestConsumerGroupViewAfterADeadLetter(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	cgPushN(t, b, "cg-dead", "", 1, 3)
	msgs := cgPop(t, b, "cg-dead?consumerGroup=d&batch=3")
	require.Len(t, msgs, 3)
	p := cgPartitions(t, b, "d", "cg-dead")[0]
	require.Equal(t, msgs[0]["leaseId"], p["workerId"], "leased")
	b.ack(t, msgs[0], "d", "dlq", "poison")
	p = cgPartitions(t, b, "d", "cg-dead")[0]
	require.Equal(t, false, p["leaseActive"])
	require.Nil(t, p["workerId"], "the dead letter released the lease")
	b.ack(t, msgs[1], "d", "completed", "") // the pop's lease id, as a 0.15 consumer sends it
	require.Equal(t, []any{3.0}, cgData(cgPop(t, b, "cg-dead?consumerGroup=d&batch=3")))
}

func TestConsumerGroupSeek(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})

	t.Run("ToEndThenNothingToPop", func(t *testing.T) {
		t.Parallel()
		cgPushN(t, b, "cg-end", "", 1, 3)
		require.Len(t, cgPop(t, b, "cg-end?consumerGroup=e"), 1) // leased, never acked
		m := b.cgSeek(t, "e", "cg-end", `{"toEnd":true}`)
		require.JSONEq(t, `{"success":true,"consumerGroup":"e","queueName":"cg-end","seekToEnd":true,
			"targetTimestamp":null,"partitionsUpdated":1}`, mustJSON(t, m))
		p := cgPartitions(t, b, "e", "cg-end")[0]
		require.Equal(t, false, p["leaseActive"], "the seek released the lease")
		require.Nil(t, p["workerId"])
		require.Equal(t, 0.0, p["offsetLag"])
		require.Nil(t, cgPop(t, b, "cg-end?consumerGroup=e"))
		cgPushN(t, b, "cg-end", "", 4, 4)
		require.Equal(t, []any{4.0}, cgData(cgPop(t, b, "cg-end?consumerGroup=e&batch=10")))
	})

	t.Run("ToEndCoversPartitionsTheGroupNeverTouched", func(t *testing.T) {
		t.Parallel()
		cgPushN(t, b, "cg-end2", "p1", 1, 1)
		cgPushN(t, b, "cg-end2", "p2", 2, 2)
		require.Len(t, cgPop(t, b, "cg-end2/partition/p1?consumerGroup=e&autoAck=true"), 1)
		require.Equal(t, 2.0, b.cgSeek(t, "e", "cg-end2", `{"toEnd":true}`)["partitionsUpdated"])
		require.Nil(t, cgPop(t, b, "cg-end2?consumerGroup=e&partitions=5&batch=5"))
	})

	t.Run("TimestampBeforeFirstMessageRedeliversAll", func(t *testing.T) {
		t.Parallel()
		cgPushN(t, b, "cg-replay", "", 1, 3)
		require.Len(t, cgPop(t, b, "cg-replay?batch=10&autoAck=true"), 3)
		require.Nil(t, cgPop(t, b, "cg-replay"))
		m := b.cgSeek(t, "__QUEUE_MODE__", "cg-replay", `{"timestamp":"1970-01-01T00:00:00Z"}`)
		require.JSONEq(t, `{"success":true,"consumerGroup":"__QUEUE_MODE__","queueName":"cg-replay","seekToEnd":false,
			"targetTimestamp":"1970-01-01T00:00:00.000Z","partitionsUpdated":1}`, mustJSON(t, m))
		require.Equal(t, []any{1.0, 2.0, 3.0}, cgData(cgPop(t, b, "cg-replay?batch=10")))
	})

	t.Run("TimestampOfAMessageResumesAfterIt", func(t *testing.T) {
		t.Parallel()
		cgPushN(t, b, "cg-mid", "", 1, 3)
		msgs := cgPop(t, b, "cg-mid?consumerGroup=m&batch=10&autoAck=true")
		require.Len(t, msgs, 3)
		b.cgSeek(t, "m", "cg-mid", `{"timestamp":"`+msgs[0]["createdAt"].(string)+`"}`)
		require.Equal(t, []any{2.0, 3.0}, cgData(cgPop(t, b, "cg-mid?consumerGroup=m&batch=10")))
	})

	// queen's fix over upstream: a "new" group seeking back before its subscription
	// time replays the history it asked for instead of being re-seeded from the old
	// subscription time.
	t.Run("BeforeTheSubscriptionReplaysHistory", func(t *testing.T) {
		t.Parallel()
		cgPushN(t, b, "cg-back", "", 1, 2)
		require.Nil(t, cgPop(t, b, "cg-back?consumerGroup=n&subscriptionMode=new"))
		cgPushN(t, b, "cg-back", "", 3, 3)
		require.Equal(t, []any{3.0}, cgData(cgPop(t, b, "cg-back?consumerGroup=n&subscriptionMode=new&autoAck=true")))

		b.cgSeek(t, "n", "cg-back", `{"timestamp":"1970-01-01T00:00:00Z"}`)
		require.Equal(t, []any{1.0, 2.0, 3.0},
			cgData(cgPop(t, b, "cg-back?consumerGroup=n&subscriptionMode=new&batch=10")))
		g := cgSummary(t, b, "n", "cg-back")
		require.Equal(t, "new", g["subscriptionMode"])
		require.Equal(t, "1970-01-01T00:00:00.000Z", g["subscriptionTimestamp"])
	})

	t.Run("BeforeTheSubscriptionCoversUntouchedPartitions", func(t *testing.T) {
		t.Parallel()
		cgPushN(t, b, "cg-back2", "p1", 1, 1)
		cgPushN(t, b, "cg-back2", "p2", 2, 2)
		// A partition-specific subscription on p1 only.
		require.Nil(t, cgPop(t, b, "cg-back2/partition/p1?consumerGroup=n&subscriptionMode=new"))
		require.Equal(t, 2.0, b.cgSeek(t, "n", "cg-back2", `{"timestamp":"2000-01-01T00:00:00Z"}`)["partitionsUpdated"])
		got := cgData(cgPop(t, b, "cg-back2?consumerGroup=n&subscriptionMode=new&partitions=5&batch=5"))
		require.ElementsMatch(t, []any{1.0, 2.0}, got)
	})

	t.Run("UnknownQueue", func(t *testing.T) {
		t.Parallel()
		requireError(t, b.post(t, "/api/v1/consumer-groups/g/queues/cg-none/seek", `{"toEnd":true}`),
			http.StatusNotFound, "not_found", "Queue not found", "")
	})

	t.Run("Validation", func(t *testing.T) {
		t.Parallel()
		const path = "/api/v1/consumer-groups/g/queues/cg-any/seek"
		const neither = "Must specify either 'toEnd': true or 'timestamp'"
		for _, tc := range []struct {
			name, body, msg, field string
		}{
			{"Neither", `{}`, neither, "timestamp"},
			{"ToEndFalse", `{"toEnd":false}`, neither, "timestamp"},
			{"ToEndNotBoolean", `{"toEnd":"yes"}`, "toEnd must be a boolean", "toEnd"},
			{"TimestampNotString", `{"timestamp":0}`, "timestamp must be a string", "timestamp"},
			{"TimestampGarbage", `{"timestamp":"last tuesday"}`,
				"timestamp must be an RFC 3339 timestamp (e.g. 2026-01-02T15:04:05Z) in the years 0001–9999", "timestamp"},
			{"EmptyBody", ``, "Empty request body", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				requireError(t, b.post(t, path, tc.body), http.StatusBadRequest, "invalid_argument", tc.msg, tc.field)
			})
		}
		requireError(t, b.post(t, "/api/v1/consumer-groups/"+strings.Repeat("g", 256)+"/queues/cg-any/seek", `{"toEnd":true}`),
			http.StatusBadRequest, "invalid_argument", "group must be at most 255 characters", "group")
	})
}

func TestConsumerGroupPartitionSeek(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	cgPushN(t, b, "cg-ps", "p1", 1, 2)
	cgPushN(t, b, "cg-ps", "p2", 3, 3)
	require.Len(t, cgPop(t, b, "cg-ps/partition/p1?consumerGroup=g"), 1) // leased

	const path = "/api/v1/consumer-groups/g/queues/cg-ps/partitions/p1/seek"
	for _, body := range []string{`{}`, ``} { // go sends {}, the dashboard nothing
		r := b.post(t, path, body)
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, sortedKeys("success", "consumerGroup", "queueName", "partitionName", "updated", "cursorMovedTo"), keys(m))
		require.Equal(t, true, m["success"])
		require.Equal(t, "g", m["consumerGroup"])
		require.Equal(t, "cg-ps", m["queueName"])
		require.Equal(t, "p1", m["partitionName"])
		require.Equal(t, true, m["updated"])
		require.Regexp(t, cgMillisRE, m["cursorMovedTo"])
	}
	require.Nil(t, cgPop(t, b, "cg-ps/partition/p1?consumerGroup=g"))
	// Only p1 moved.
	require.Equal(t, []any{3.0}, cgData(cgPop(t, b, "cg-ps?consumerGroup=g&partitions=5&batch=5")))

	t.Run("EmptyPartitionNeverConsumed", func(t *testing.T) {
		t.Parallel()
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure", `{"queue":"cg-ps-empty"}`))
		r := b.post(t, "/api/v1/consumer-groups/g/queues/cg-ps-empty/partitions/Default/seek", "")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"success":true,"consumerGroup":"g","queueName":"cg-ps-empty","partitionName":"Default",
			"updated":false,"cursorMovedTo":null}`, string(r.body))
	})

	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		requireError(t, b.post(t, "/api/v1/consumer-groups/g/queues/cg-ps/partitions/p9/seek", ""),
			http.StatusNotFound, "not_found", "Partition not found", "")
		requireError(t, b.post(t, "/api/v1/consumer-groups/g/queues/cg-nope/partitions/p1/seek", ""),
			http.StatusNotFound, "not_found", "Partition not found", "")
	})
}

// TestConsumerGroupSeekWaitsForAck checks that a seek waits for an ack of the same
// group on the same partition: while another transaction holds the cursor row locked,
// as an ack does from its lookup to its commit, the seek waits.
func TestConsumerGroupSeekWaitsForAck(t *testing.T) {
	t.Parallel()
	b := cgSetupDB(t)
	res := b.pushOne(t, "cg-lock", "", "", `1`)
	require.Len(t, cgPop(t, b.testBundle, "cg-lock?consumerGroup=g"), 1)

	tx, err := b.db.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(t.Context())) }()
	_, err = tx.Exec(t.Context(), `SELECT pg_advisory_xact_lock(queen.ack_lock_key($1::uuid, 'g'))`, res["partition_id"])
	require.NoError(t, err)
	var locked int
	require.NoError(t, tx.QueryRow(t.Context(), `SELECT count(*) FROM (SELECT 1 FROM queen.partition_consumers
		WHERE partition_id = $1::uuid AND consumer_group = 'g' FOR UPDATE) c`, res["partition_id"]).Scan(&locked))
	require.Equal(t, 1, locked)

	done := make(chan response, 1)
	go func() { // no require here: not the test goroutine
		r := response{status: -1}
		defer func() { done <- r }()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost,
			b.srv.URL+"/api/v1/consumer-groups/g/queues/cg-lock/seek", strings.NewReader(`{"toEnd":true}`))
		if err != nil {
			return
		}
		resp, err := b.srv.Client().Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		r.body, _ = io.ReadAll(resp.Body)
		r.status, r.header = resp.StatusCode, resp.Header
	}()
	require.Eventually(t, func() bool {
		var waiting int
		err := b.db.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks WHERE NOT granted`).Scan(&waiting)
		return err == nil && waiting > 0
	}, 10*time.Second, 10*time.Millisecond)
	select {
	case r := <-done:
		require.Failf(t, "seek did not wait for the ack", "answered %d %s", r.status, r.body)
	default:
	}
	require.NoError(t, tx.Commit(t.Context()))
	r := <-done
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, 1.0, r.object(t)["partitionsUpdated"])
}
