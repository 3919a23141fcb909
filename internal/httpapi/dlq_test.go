package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/encryption"
	"github.com/queenmq/queen/internal/queue"
)

// popUpTo pops at most batch messages of one partition for group ("" = queue mode)
// and returns their transaction ids (none on 204).
func (b *testBundle) popUpTo(t *testing.T, queueName, partition, group string, batch int) []map[string]any {
	t.Helper()
	q := url.Values{"batch": {itoa(batch)}}
	if group != "" {
		q.Set("consumerGroup", group)
	}
	r := b.get(t, "/api/v1/pop/queue/"+queueName+"/partition/"+partition+"?"+q.Encode())
	if r.status == http.StatusNoContent {
		return nil
	}
	requireStatus(t, http.StatusOK, r)
	return rows(t, r.object(t), "messages")
}

// deadLetter pushes one message to (queueName, partition) and dead-letters it for
// group; it returns the partition id.
func (b *testBundle) deadLetter(t *testing.T, queueName, partition, txID, group, payload string) string {
	t.Helper()
	pid := b.pushed(t, queueName, partition, txID, payload)
	msgs := b.popUpTo(t, queueName, partition, group, 1)
	require.Len(t, msgs, 1)
	require.Equal(t, txID, msgs[0]["transactionId"])
	b.ack(t, msgs[0], group, "dlq", "failed "+txID)
	return pid
}

// dlqTransactions lists the transaction ids of the dead-letter entries matching query.
func (b *testBundle) dlqTransactions(t *testing.T, query string) []any {
	t.Helper()
	return field(rows(t, b.list(t, "/api/v1/dlq?"+query), "messages"), "transactionId")
}

// messageCount counts the stored messages of queueName.
func (b *adminBundle) messageCount(t *testing.T, queueName string) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.QueryRow(t.Context(), `SELECT count(*) FROM queen.messages m
JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
WHERE q.name = $1`, queueName).Scan(&n))
	return n
}

func TestDLQRequeue(t *testing.T) {
	t.Parallel()

	t.Run("ItemIsPushedAgainAfterTheExistingMessages", func(t *testing.T) {
		t.Parallel()
		b := setupAdmin(t)
		pid := b.deadLetter(t, "rq-order", "p1", "t-1", "", `{"n":1}`)
		b.pushed(t, "rq-order", "p1", "t-2", `{"n":2}`)
		b.pushed(t, "rq-order", "p1", "t-3", `{"n":3}`)

		r := b.post(t, "/api/v1/dlq/requeue", mustJSON(t, map[string]any{"items": []any{
			map[string]any{"partitionId": pid, "transactionId": "t-1", "consumerGroup": "__QUEUE_MODE__"},
		}}))
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, sortedKeys("requeued", "entries", "more", "items"), keys(m))
		require.Equal(t, []any{float64(1), float64(1), false}, []any{m["requeued"], m["entries"], m["more"]})
		items := rows(t, m, "items")
		require.Len(t, items, 1)
		require.Equal(t, sortedKeys("partitionId", "transactionId", "newTransactionId", "newMessageId", "queue"), keys(items[0]))
		require.Equal(t, pid, items[0]["partitionId"])
		require.Equal(t, "t-1", items[0]["transactionId"])
		require.Equal(t, "rq-order", items[0]["queue"])
		newTx := items[0]["newTransactionId"].(string)
		require.True(t, queue.IsUUID(newTx), "a fresh transaction id: %s", newTx)
		require.True(t, queue.IsUUID(items[0]["newMessageId"].(string)))

		require.Empty(t, b.dlqTransactions(t, "queue=rq-order"), "the dead-letter entry is gone")
		require.Equal(t, "completed", b.list(t, "/api/v1/messages/"+pid+"/t-1")["status"],
			"the original stays, consumed")

		// Queue mode continues after its cursor: the requeued message comes last.
		got := b.popUpTo(t, "rq-order", "p1", "", 10)
		require.Equal(t, []any{"t-2", "t-3", newTx}, field(got, "transactionId"))
		require.Equal(t, map[string]any{"n": float64(1)}, got[2]["data"])
		require.Equal(t, items[0]["newMessageId"], got[2]["id"])
		// A fresh consumer group reads the partition's history in order, the copy last.
		fresh := b.popUpTo(t, "rq-order", "p1", "fresh", 10)
		require.Equal(t, []any{"t-1", "t-2", "t-3", newTx}, field(fresh, "transactionId"))
	})

	t.Run("Filter", func(t *testing.T) {
		t.Parallel()
		b := setupAdmin(t)
		b.deadLetter(t, "rq-f", "pa", "a-1", "", `1`)
		b.deadLetter(t, "rq-f", "pb", "b-1", "", `2`)
		b.deadLetter(t, "rq-f", "pc", "c-1", "workers", `3`)
		b.deadLetter(t, "rq-f-other", "pa", "o-1", "", `4`)

		r := b.post(t, "/api/v1/dlq/requeue", `{"filter":{"queue":"rq-f","consumerGroup":"workers"}}`)
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		require.Equal(t, float64(1), m["requeued"])
		require.Equal(t, []any{"c-1"}, field(rows(t, m, "items"), "transactionId"))
		require.ElementsMatch(t, []any{"a-1", "b-1"}, b.dlqTransactions(t, "queue=rq-f"))

		r = b.post(t, "/api/v1/dlq/requeue", `{"filter":{"queue":"rq-f","from":"2000-01-01","to":"2999-01-01T00:00:00Z"}}`)
		requireStatus(t, http.StatusOK, r)
		m = r.object(t)
		require.Equal(t, []any{float64(2), float64(2), false}, []any{m["requeued"], m["entries"], m["more"]})
		require.ElementsMatch(t, []any{"a-1", "b-1"}, field(rows(t, m, "items"), "transactionId"))
		require.Empty(t, b.dlqTransactions(t, "queue=rq-f"))
		require.Equal(t, []any{"o-1"}, b.dlqTransactions(t, "queue=rq-f-other"), "other queues are left alone")
		require.Equal(t, 6, b.messageCount(t, "rq-f"), "three originals, three copies")

		r = b.post(t, "/api/v1/dlq/requeue", `{"filter":{"queue":"rq-f"}}`)
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"requeued":0,"entries":0,"more":false,"items":[]}`, string(r.body))
	})

	t.Run("FilterTakesAtMostTheLimitPerCall", func(t *testing.T) {
		t.Parallel()
		b := setupAdmin(t)
		n := broker.MaxRequeueItems + 1
		push := make([]any, n)
		for i := range push {
			push[i] = map[string]any{"queue": "rq-big", "transactionId": "t-" + itoa(i), "payload": i}
		}
		requireStatus(t, http.StatusCreated, b.post(t, "/api/v1/push", mustJSON(t, map[string]any{"items": push})))
		_, err := b.db.Exec(t.Context(), `INSERT INTO queen.dead_letter_queue (message_id, partition_id, consumer_group, error_message)
SELECT m.id, m.partition_id, '__QUEUE_MODE__', 'x' FROM queen.messages m`)
		require.NoError(t, err)

		m := b.post(t, "/api/v1/dlq/requeue", `{"filter":{"queue":"rq-big"}}`).object(t)
		require.Equal(t, []any{float64(broker.MaxRequeueItems), true}, []any{m["requeued"], m["more"]})
		m = b.post(t, "/api/v1/dlq/requeue", `{"filter":{"queue":"rq-big"}}`).object(t)
		require.Equal(t, []any{float64(1), false}, []any{m["requeued"], m["more"]})
		require.Equal(t, 2*n, b.messageCount(t, "rq-big"))
	})

	t.Run("EveryGroupOfAMessageAtOnce", func(t *testing.T) {
		t.Parallel()
		b := setupAdmin(t)
		pid := b.pushed(t, "rq-groups", "p", "t-g", `"g"`)
		for _, g := range []string{"ga", "gb", "gc"} {
			b.ack(t, b.popPartition(t, "rq-groups", "p", g, 1)[0], g, "dlq", "no "+g)
		}
		// One group's entry: the message is pushed once, the other entries stay.
		r := b.post(t, "/api/v1/dlq/requeue", `{"items":[{"partitionId":"`+pid+`","transactionId":"t-g","consumerGroup":"ga"}]}`)
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, []any{float64(1), float64(1)}, []any{r.object(t)["requeued"], r.object(t)["entries"]})
		require.Equal(t, []any{"t-g", "t-g"}, b.dlqTransactions(t, "queue=rq-groups"))
		// Without a group (and named twice): every entry, one new message.
		r = b.post(t, "/api/v1/dlq/requeue", `{"items":[{"partitionId":"`+pid+`","transactionId":"t-g"},
			{"partitionId":"`+pid+`","transactionId":"t-g","consumerGroup":"gb"}]}`)
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, []any{float64(1), float64(2)}, []any{r.object(t)["requeued"], r.object(t)["entries"]})
		require.Empty(t, b.dlqTransactions(t, "queue=rq-groups"))
		require.Equal(t, 3, b.messageCount(t, "rq-groups"))
	})

	t.Run("MissingItemChangesNothing", func(t *testing.T) {
		t.Parallel()
		b := setupAdmin(t)
		pid := b.deadLetter(t, "rq-atomic", "p", "t-ok", "", `1`)
		b.pushed(t, "rq-atomic", "p", "t-live", `2`) // a message without a dead-letter entry
		body := `{"items":[{"partitionId":"` + pid + `","transactionId":"t-ok"},
			{"partitionId":"` + pid + `","transactionId":"t-live"}]}`
		requireError(t, b.post(t, "/api/v1/dlq/requeue", body), http.StatusNotFound, "not_found",
			`items[1]: message "t-live" in partition `+pid+` has no dead-letter entry`, "")
		body = `{"items":[{"partitionId":"` + pid + `","transactionId":"t-ok","consumerGroup":"other"}]}`
		requireError(t, b.post(t, "/api/v1/dlq/requeue", body), http.StatusNotFound, "not_found",
			`items[0]: message "t-ok" in partition `+pid+` has no dead-letter entry for consumer group "other"`, "")
		require.Equal(t, []any{"t-ok"}, b.dlqTransactions(t, "queue=rq-atomic"))
		require.Equal(t, 2, b.messageCount(t, "rq-atomic"), "nothing was pushed")
	})

	t.Run("FullQueueRollsBack", func(t *testing.T) {
		t.Parallel()
		b := setupAdmin(t)
		b.configure(t, "rq-full", `{"maxSize":1}`)
		pid := b.deadLetter(t, "rq-full", "p", "t-1", "", `1`)
		requireError(t, b.post(t, "/api/v1/dlq/requeue", `{"items":[{"partitionId":"`+pid+`","transactionId":"t-1"}]}`),
			http.StatusConflict, "conflict", `queue "rq-full" is full: maxSize reached; nothing was requeued`, "")
		require.Equal(t, []any{"t-1"}, b.dlqTransactions(t, "queue=rq-full"))
		require.Equal(t, 1, b.messageCount(t, "rq-full"))
	})

	t.Run("PayloadsStaySealed", func(t *testing.T) {
		t.Parallel()
		sealer, err := encryption.New(bytes.Repeat([]byte{9}, 32))
		require.NoError(t, err)
		b := setupAdmin(t, withSealer(sealer))
		b.configure(t, "rq-enc", `{"encryptionEnabled":true}`)
		b.deadLetter(t, "rq-enc", "p", "t-sealed", "", `{"secret":1}`)
		b.configure(t, "rq-plain", "")
		b.deadLetter(t, "rq-plain", "p", "t-plain", "", `{"secret":2}`)
		b.configure(t, "rq-plain", `{"encryptionEnabled":true}`) // turned on after the push
		// A sealed payload whose row does not say so (written by another broker, or
		// repaired by hand): the readers open it, and so does its copy.
		b.configure(t, "rq-unflagged", `{"encryptionEnabled":true}`)
		b.deadLetter(t, "rq-unflagged", "p", "t-unflagged", "", `{"secret":3}`)
		_, err = b.db.Exec(t.Context(), `UPDATE queen.messages SET is_encrypted = NULL WHERE transaction_id = 't-unflagged'`)
		require.NoError(t, err)

		for _, q := range []string{"rq-enc", "rq-plain", "rq-unflagged"} {
			requireStatus(t, http.StatusOK, b.post(t, "/api/v1/dlq/requeue", `{"filter":{"queue":"`+q+`"}}`))
		}
		stored := map[string]bool{}
		dbRows, err := b.db.Query(t.Context(), `SELECT transaction_id, payload::text, is_encrypted FROM queen.messages`)
		require.NoError(t, err)
		for dbRows.Next() {
			var tx, payload string
			var enc *bool
			require.NoError(t, dbRows.Scan(&tx, &payload, &enc))
			if tx == "t-unflagged" {
				require.Nil(t, enc)
				continue
			}
			require.NotNil(t, enc, tx)
			require.Equal(t, encryption.LooksSealed([]byte(payload)), *enc, "%s: %s", tx, payload)
			stored[tx] = *enc
		}
		require.NoError(t, dbRows.Err())
		require.Len(t, stored, 5)
		require.Equal(t, 4, countTrue(stored), "every copy is sealed; only the plaintext original is not: %v", stored)
		require.False(t, stored["t-plain"])
		require.Equal(t, map[string]any{"secret": float64(1)}, b.popUpTo(t, "rq-enc", "p", "", 1)[0]["data"])
		require.Equal(t, map[string]any{"secret": float64(2)}, b.popUpTo(t, "rq-plain", "p", "", 1)[0]["data"])
		require.Equal(t, map[string]any{"secret": float64(3)}, b.popUpTo(t, "rq-unflagged", "p", "", 1)[0]["data"],
			"sealed once, not twice")
	})

	t.Run("RefusedDuringPushMaintenance", func(t *testing.T) {
		t.Parallel()
		b := setupAdmin(t)
		pid := b.deadLetter(t, "rq-maint", "p", "t-1", "", `1`)
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/system/maintenance", `{"enabled":true}`))
		r := b.post(t, "/api/v1/dlq/requeue", `{"items":[{"partitionId":"`+pid+`","transactionId":"t-1"}]}`)
		requireStatus(t, http.StatusServiceUnavailable, r)
		require.Equal(t, "unavailable", r.object(t)["code"])
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/system/maintenance", `{"enabled":false}`))
		require.Equal(t, []any{"t-1"}, b.dlqTransactions(t, "queue=rq-maint"))
	})

	t.Run("BadInput", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Options{})
		uuid := "0195e7a0-0000-7000-8000-000000000000"
		for _, tc := range []struct{ name, body, field, msg string }{
			{"Empty", `{}`, "items", "items or filter is required"},
			{"ItemsNotArray", `{"items":{}}`, "items", "items must be an array"},
			{"NoItems", `{"items":[]}`, "items", "items must hold 1 to 1000 entries (got 0)"},
			{"Both", `{"items":[],"filter":{"queue":"q"}}`, "filter", "give either items or filter, not both"},
			{"FilterNotObject", `{"filter":"q"}`, "filter", "filter must be an object"},
			{"FilterWithoutQueue", `{"filter":{"consumerGroup":"g"}}`, "filter.queue",
				"filter.queue is required: name the queue whose dead letters to select"},
			{"FilterQueueNotString", `{"filter":{"queue":7}}`, "filter.queue", "filter.queue must be a string"},
			{"FilterBadFrom", `{"filter":{"queue":"q","from":"soon"}}`, "filter.from",
				"filter.from must be an RFC 3339 timestamp or a date (YYYY-MM-DD) in the years 0001–9999"},
			{"FilterFromAfterTo", `{"filter":{"queue":"q","from":"2026-02-01","to":"2026-01-01"}}`, "filter.from",
				"filter.from must not be after filter.to"},
			{"ItemNotObject", `{"items":[1]}`, "items[0]", "items[0] must be an object"},
			{"NoPartitionID", `{"items":[{"transactionId":"t"}]}`, "items[0].partitionId", "items[0].partitionId is required"},
			{"PartitionIDNotUUID", `{"items":[{"partitionId":"p","transactionId":"t"}]}`, "items[0].partitionId",
				"items[0].partitionId must be a UUID"},
			{"NoTransactionID", `{"items":[{"partitionId":"` + uuid + `"}]}`, "items[0].transactionId",
				"items[0].transactionId is required"},
			{"EmptyTransactionID", `{"items":[{"partitionId":"` + uuid + `","transactionId":""}]}`, "items[0].transactionId",
				"items[0].transactionId is required"},
			{"LongTransactionID", `{"items":[{"partitionId":"` + uuid + `","transactionId":"` + strings.Repeat("x", 256) + `"}]}`,
				"items[0].transactionId", "items[0].transactionId must be at most 255 characters"},
			{"GroupNotString", `{"items":[{"partitionId":"` + uuid + `","transactionId":"t","consumerGroup":1}]}`,
				"items[0].consumerGroup", "items[0].consumerGroup must be a string"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				requireError(t, b.post(t, "/api/v1/dlq/requeue", tc.body), http.StatusBadRequest, "invalid_argument", tc.msg, tc.field)
			})
		}
		requireError(t, b.post(t, "/api/v1/dlq/requeue", ""), http.StatusBadRequest, "invalid_argument", "Empty request body", "")
		many := make([]any, broker.MaxRequeueItems+1)
		for i := range many {
			many[i] = map[string]any{"partitionId": uuid, "transactionId": "t"}
		}
		requireError(t, b.post(t, "/api/v1/dlq/requeue", mustJSON(t, map[string]any{"items": many})), http.StatusBadRequest,
			"invalid_argument", "items must hold 1 to 1000 entries (got 1001)", "items")
	})
}

func countTrue(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}

func TestDLQPurge(t *testing.T) {
	t.Parallel()

	t.Run("DeletesTheMatchingEntriesOnly", func(t *testing.T) {
		t.Parallel()
		b := setupAdmin(t)
		pid := b.deadLetter(t, "pg-a", "p", "a-1", "", `1`)
		b.deadLetter(t, "pg-a", "p", "a-2", "", `2`)
		b.deadLetter(t, "pg-a", "pw", "a-3", "workers", `3`)
		b.deadLetter(t, "pg-b", "p", "b-1", "", `4`)

		r := b.do(t, http.MethodDelete, "/api/v1/dlq?queue=pg-a&consumerGroup=workers", "")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"deleted":1,"more":false}`, string(r.body))
		require.ElementsMatch(t, []any{"a-1", "a-2"}, b.dlqTransactions(t, "queue=pg-a"))

		r = b.do(t, http.MethodDelete, "/api/v1/dlq?queue=pg-a&from=2000-01-01&to=2999-01-01", "")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"deleted":2,"more":false}`, string(r.body))
		require.Empty(t, b.dlqTransactions(t, "queue=pg-a"))
		require.Equal(t, []any{"b-1"}, b.dlqTransactions(t, "queue=pg-b"), "other queues are left alone")
		require.Equal(t, 3, b.messageCount(t, "pg-a"), "the messages stay")
		require.Equal(t, "completed", b.list(t, "/api/v1/messages/"+pid+"/a-1")["status"])

		r = b.do(t, http.MethodDelete, "/api/v1/dlq?queue=pg-a", "")
		require.JSONEq(t, `{"deleted":0,"more":false}`, string(r.body))
	})

	t.Run("DeletesAtMostTheLimitPerCall", func(t *testing.T) {
		t.Parallel()
		b := setupAdmin(t)
		b.deadLetter(t, "pg-big", "p", "t", "", `1`)
		_, err := b.db.Exec(t.Context(), `INSERT INTO queen.dead_letter_queue (message_id, partition_id, consumer_group)
SELECT d.message_id, d.partition_id, 'g' || n FROM queen.dead_letter_queue d, generate_series(1, $1) n`, broker.MaxDLQPurge)
		require.NoError(t, err)
		r := b.do(t, http.MethodDelete, "/api/v1/dlq?queue=pg-big", "")
		require.JSONEq(t, `{"deleted":10000,"more":true}`, string(r.body))
		r = b.do(t, http.MethodDelete, "/api/v1/dlq?queue=pg-big", "")
		require.JSONEq(t, `{"deleted":1,"more":false}`, string(r.body))
	})

	t.Run("BadInput", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Options{})
		requireError(t, b.do(t, http.MethodDelete, "/api/v1/dlq", ""), http.StatusBadRequest, "invalid_argument",
			"queue is required: name the queue whose dead letters to select", "queue")
		requireError(t, b.do(t, http.MethodDelete, "/api/v1/dlq?queue=&consumerGroup=g", ""), http.StatusBadRequest,
			"invalid_argument", "queue is required: name the queue whose dead letters to select", "queue")
		requireError(t, b.do(t, http.MethodDelete, "/api/v1/dlq?queue=q&to=later", ""), http.StatusBadRequest,
			"invalid_argument", "to must be an RFC 3339 timestamp or a date (YYYY-MM-DD) in the years 0001–9999", "to")
		requireError(t, b.do(t, http.MethodDelete, "/api/v1/dlq?queue=q&from=2026-02-01&to=2026-01-01", ""),
			http.StatusBadRequest, "invalid_argument", "from must not be after to", "from")
	})
}

// TestDLQRequeueConcurrent: concurrent requeues never push a message twice: filters
// skip the entries another call holds, and an item taken by another call is a 404.
func TestDLQRequeueConcurrent(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	const entries, callers = 20, 6
	pid := ""
	for i := range entries {
		pid = b.deadLetter(t, "rq-race", "p", "t-"+itoa(i), "", itoa(i))
	}
	type outcome struct {
		status   int
		requeued float64
	}
	// The callers only send; every check runs on the test goroutine.
	run := func(body string) []outcome {
		type answer struct {
			status int
			body   []byte
			err    error
		}
		answers := make(chan answer, callers)
		for range callers {
			go func() {
				resp, err := b.srv.Client().Post(b.srv.URL+"/api/v1/dlq/requeue", "application/json", strings.NewReader(body))
				if err != nil {
					answers <- answer{err: err}
					return
				}
				defer resp.Body.Close()
				data, err := io.ReadAll(resp.Body)
				answers <- answer{status: resp.StatusCode, body: data, err: err}
			}()
		}
		res := make([]outcome, callers)
		for i := range res {
			a := <-answers
			require.NoError(t, a.err)
			res[i].status = a.status
			if a.status == http.StatusOK {
				res[i].requeued = response{status: a.status, body: a.body}.object(t)["requeued"].(float64)
			}
		}
		return res
	}

	ok, total := 0, 0.0
	for _, o := range run(`{"items":[{"partitionId":"` + pid + `","transactionId":"t-0"}]}`) {
		if o.status == http.StatusOK {
			ok++
			total += o.requeued
		} else {
			require.Equal(t, http.StatusNotFound, o.status)
		}
	}
	require.Equal(t, []any{1, 1.0}, []any{ok, total}, "exactly one caller requeues the item")

	total = 0
	for _, o := range run(`{"filter":{"queue":"rq-race"}}`) {
		require.Equal(t, http.StatusOK, o.status)
		total += o.requeued
	}
	require.Equal(t, float64(entries-1), total)
	require.Equal(t, 2*entries, b.messageCount(t, "rq-race"), "each dead letter pushed once")
	require.Empty(t, b.dlqTransactions(t, "queue=rq-race"))
}
