package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/encryption"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// millisRE matches a FormatMillis timestamp.
const millisRE = `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`

// adminBundle is a testBundle plus a direct pool on its database, for the few facts a
// test must arrange in SQL (message ages).
type adminBundle struct {
	*testBundle
	db *pgxpool.Pool
}

// setupAdmin starts a server over a broker configured with cfg on a new database.
func setupAdmin(t *testing.T, opts ...func(*broker.Config)) *adminBundle {
	t.Helper()
	dbURL := pgtest.NewDBURL(t)
	db, err := pgxpool.New(t.Context(), dbURL)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	st, err := store.Open(store.Options{ConnString: dbURL, MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	logger := testLogger(t)
	b := broker.New(brokerConfig(opts...), st, logger)
	srv := httptest.NewServer(New(Options{}, b, logger).Handler())
	t.Cleanup(srv.Close)
	return &adminBundle{testBundle: &testBundle{srv: srv, broker: b}, db: db}
}

// configure creates queueName with the given options object ("" = defaults).
func (b *testBundle) configure(t *testing.T, queueName, options string) {
	t.Helper()
	if options == "" {
		options = "{}"
	}
	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure",
		`{"queue":"`+queueName+`","options":`+options+`}`))
}

// pushed pushes one message and returns its partition id.
func (b *testBundle) pushed(t *testing.T, queueName, partition, txID, payload string) string {
	t.Helper()
	res := b.pushOne(t, queueName, partition, txID, payload)
	require.Equal(t, "queued", res["status"], "push: %v", res)
	return res["partition_id"].(string)
}

// popPartition pops up to batch messages of one partition for group ("" = queue
// mode) and returns them (each carries its leaseId).
func (b *testBundle) popPartition(t *testing.T, queueName, partition, group string, batch int) []map[string]any {
	t.Helper()
	q := url.Values{"batch": {itoa(batch)}}
	if group != "" {
		q.Set("consumerGroup", group)
	}
	r := b.get(t, "/api/v1/pop/queue/"+queueName+"/partition/"+partition+"?"+q.Encode())
	requireStatus(t, http.StatusOK, r)
	var out []map[string]any
	for _, m := range r.object(t)["messages"].([]any) {
		out = append(out, m.(map[string]any))
	}
	require.Len(t, out, batch)
	return out
}

// ack acknowledges a popped message with status ("completed", "dlq", ...).
func (b *testBundle) ack(t *testing.T, m map[string]any, group, status, errText string) {
	t.Helper()
	body := map[string]any{"transactionId": m["transactionId"], "partitionId": m["partitionId"],
		"leaseId": m["leaseId"], "status": status}
	if group != "" {
		body["consumerGroup"] = group
	}
	if errText != "" {
		body["error"] = errText
	}
	r := b.post(t, "/api/v1/ack", mustJSON(t, body))
	requireStatus(t, http.StatusOK, r)
	res := r.array(t)
	require.Len(t, res, 1)
	require.Equal(t, true, res[0]["success"], "ack: %s", r.body)
}

// list GETs path and returns its 200 object.
func (b *testBundle) list(t *testing.T, path string) map[string]any {
	t.Helper()
	r := b.get(t, path)
	requireStatus(t, http.StatusOK, r)
	return r.object(t)
}

// rows returns the objects of the array under key.
func rows(t *testing.T, m map[string]any, key string) []map[string]any {
	t.Helper()
	a, ok := m[key].([]any)
	require.True(t, ok, "%s is not an array: %v", key, m[key])
	out := make([]map[string]any, len(a))
	for i, v := range a {
		out[i] = v.(map[string]any)
	}
	return out
}

// field collects one key of every row.
func field(rs []map[string]any, key string) []any {
	out := make([]any, len(rs))
	for i, r := range rs {
		out[i] = r[key]
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

// messageSummaryKeys are the keys of one message of GET /api/v1/messages.
var messageSummaryKeys = sortedKeys("id", "transactionId", "partitionId", "queuePath", "queue", "partition",
	"namespace", "task", "status", "queueStatus", "busStatus", "traceId", "producerSub", "queuePriority",
	"createdAt", "leaseExpiresAt")

func TestMessageList(t *testing.T) {
	t.Parallel()

	t.Run("ToAloneLooksTheHourBeforeIt", func(t *testing.T) {
		t.Parallel()
		b := setupAdmin(t)
		b.pushed(t, "ml-to", "", "t-1", `{}`)
		at := func(d time.Duration) string { return url.QueryEscape(time.Now().Add(d).UTC().Format(time.RFC3339)) }
		m := b.list(t, "/api/v1/messages?queue=ml-to&to="+at(-2*time.Hour))
		require.Equal(t, float64(0), m["total"], "an hour before a to two hours ago: nothing, and no 400")
		m = b.list(t, "/api/v1/messages?queue=ml-to&to="+at(30*time.Minute))
		require.Equal(t, float64(1), m["total"])
		m = b.list(t, "/api/v1/messages?queue=ml-to&to="+at(90*time.Minute))
		require.Equal(t, float64(0), m["total"], "the hour before to began after the push")
	})

	t.Run("QueueModeStatuses", func(t *testing.T) {
		t.Parallel()
		b := setupAdmin(t)
		requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure",
			`{"queue":"ml-q","namespace":"billing","task":"invoice","options":{"priority":4}}`))
		for _, p := range []string{"pa", "pb", "pc", "pd"} {
			b.pushed(t, "ml-q", p, "t-"+p, `{"p":"`+p+`"}`)
		}
		b.ack(t, b.popPartition(t, "ml-q", "pa", "", 1)[0], "", "completed", "")
		b.popPartition(t, "ml-q", "pb", "", 1) // leased, not acked
		b.ack(t, b.popPartition(t, "ml-q", "pd", "", 1)[0], "", "dlq", "boom")

		m := b.list(t, "/api/v1/messages?queue=ml-q")
		require.Equal(t, sortedKeys("messages", "mode", "total", "pagination", "limit", "offset", "hasMore"), keys(m))
		require.Equal(t, map[string]any{"hasQueueMode": true, "busGroupsCount": float64(0), "type": "queue"}, m["mode"])
		require.Equal(t, float64(4), m["total"])
		require.Equal(t, map[string]any{"limit": float64(200), "offset": float64(0)}, m["pagination"])
		require.Equal(t, []any{float64(200), float64(0), false}, []any{m["limit"], m["offset"], m["hasMore"]})
		msgs := rows(t, m, "messages")
		require.Len(t, msgs, 4)
		byTx := map[string]map[string]any{}
		for _, msg := range msgs {
			require.Equal(t, messageSummaryKeys, keys(msg))
			require.True(t, queue.IsUUID(msg["id"].(string)))
			require.True(t, queue.IsUUID(msg["partitionId"].(string)))
			require.Equal(t, "ml-q/"+msg["partition"].(string), msg["queuePath"])
			require.Equal(t, "ml-q", msg["queue"])
			require.Equal(t, "billing", msg["namespace"])
			require.Equal(t, "invoice", msg["task"])
			require.Equal(t, float64(4), msg["queuePriority"])
			require.Nil(t, msg["traceId"])
			require.Nil(t, msg["producerSub"])
			require.Regexp(t, millisRE, msg["createdAt"])
			require.NotContains(t, msg, "payload")
			require.NotContains(t, msg, "data")
			byTx[msg["transactionId"].(string)] = msg
		}
		status := func(tx string) []any {
			return []any{byTx[tx]["status"], byTx[tx]["queueStatus"]}
		}
		require.Equal(t, []any{"completed", "completed"}, status("t-pa"))
		require.Equal(t, []any{"processing", "processing"}, status("t-pb"))
		require.Equal(t, []any{"pending", "pending"}, status("t-pc"))
		require.Equal(t, []any{"dead_letter", "dead_letter"}, status("t-pd"))
		require.Equal(t, map[string]any{"consumedBy": float64(1), "totalGroups": float64(1)}, byTx["t-pa"]["busStatus"])
		require.Equal(t, map[string]any{"consumedBy": float64(0), "totalGroups": float64(1)}, byTx["t-pb"]["busStatus"])
		require.Equal(t, map[string]any{"consumedBy": float64(0), "totalGroups": float64(0)}, byTx["t-pc"]["busStatus"])
		require.Regexp(t, millisRE, byTx["t-pb"]["leaseExpiresAt"])
		for _, tx := range []string{"t-pa", "t-pc", "t-pd"} {
			require.Nil(t, byTx[tx]["leaseExpiresAt"], tx)
		}

		for _, st := range []string{"pending", "processing", "completed", "dead_letter"} {
			m := b.list(t, "/api/v1/messages?queue=ml-q&status="+st)
			msgs := rows(t, m, "messages")
			require.Len(t, msgs, 1, st)
			require.Equal(t, st, msgs[0]["status"])
			require.Equal(t, float64(1), m["total"], st)
		}
		m = b.list(t, "/api/v1/messages?queue=ml-q&partition=pc")
		require.Equal(t, []any{"t-pc"}, field(rows(t, m, "messages"), "transactionId"))
		m = b.list(t, "/api/v1/messages?ns=billing&task=invoice&status=completed")
		require.Equal(t, []any{"t-pa"}, field(rows(t, m, "messages"), "transactionId"))
		require.Equal(t, float64(0), b.list(t, "/api/v1/messages?ns=shipping")["total"])
		empty := b.list(t, "/api/v1/messages?queue=nope")
		require.JSONEq(t, `{"messages":[],"mode":{"hasQueueMode":false,"busGroupsCount":0,"type":"none"},
			"total":0,"pagination":{"limit":200,"offset":0},"limit":200,"offset":0,"hasMore":false}`, mustJSON(t, empty))
	})

	t.Run("BusModeNeedsEveryGroup", func(t *testing.T) {
		t.Parallel()
		b := setupAdmin(t)
		b.pushed(t, "ml-bus", "", "t-1", `1`)
		first := b.popPartition(t, "ml-bus", "Default", "g1", 1)[0]
		second := b.popPartition(t, "ml-bus", "Default", "g2", 1)[0]
		b.ack(t, first, "g1", "completed", "")

		m := b.list(t, "/api/v1/messages?queue=ml-bus")
		require.Equal(t, map[string]any{"hasQueueMode": false, "busGroupsCount": float64(2), "type": "bus"}, m["mode"])
		msg := rows(t, m, "messages")[0]
		require.Equal(t, "pending", msg["status"])
		require.Equal(t, map[string]any{"consumedBy": float64(1), "totalGroups": float64(2)}, msg["busStatus"])
		require.Nil(t, msg["leaseExpiresAt"], "bus mode is never processing")

		b.ack(t, second, "g2", "completed", "")
		msg = rows(t, b.list(t, "/api/v1/messages?queue=ml-bus"), "messages")[0]
		require.Equal(t, "completed", msg["status"])
		require.Equal(t, map[string]any{"consumedBy": float64(2), "totalGroups": float64(2)}, msg["busStatus"])
	})

	t.Run("TimeWindowAndPaging", func(t *testing.T) {
		t.Parallel()
		b := setupAdmin(t)
		var pid string
		for i := 1; i <= 5; i++ {
			pid = b.pushed(t, "ml-win", "", "t-"+itoa(i), itoa(i))
		}
		_, err := b.db.Exec(t.Context(), `UPDATE queen.messages SET created_at = now() - interval '2 hours'
			WHERE partition_id = $1 AND transaction_id = 't-1'`, pid)
		require.NoError(t, err)

		txs := func(query string) ([]any, float64) {
			t.Helper()
			m := b.list(t, "/api/v1/messages?queue=ml-win&"+query)
			got := field(rows(t, m, "messages"), "transactionId")
			require.Equal(t, m["offset"].(float64)+float64(len(got)) < m["total"].(float64), m["hasMore"], query)
			return got, m["total"].(float64)
		}
		got, total := txs("")
		require.Equal(t, []any{"t-5", "t-4", "t-3", "t-2"}, got, "default window is the last hour, newest first")
		require.Equal(t, float64(4), total)

		threeHours := url.QueryEscape(time.Now().Add(-3 * time.Hour).UTC().Format(time.RFC3339))
		got, total = txs("from=" + threeHours)
		require.Equal(t, []any{"t-5", "t-4", "t-3", "t-2", "t-1"}, got)
		require.Equal(t, float64(5), total)

		ninety := time.Now().Add(-90 * time.Minute).UTC().Format(time.RFC3339)
		got, total = txs("from=" + threeHours + "&to=" + url.QueryEscape(ninety))
		require.Equal(t, []any{"t-1"}, got)
		require.Equal(t, float64(1), total)
		// An unescaped "+00:00" offset arrives as a space and is still accepted.
		got, _ = txs("from=" + threeHours + "&to=" + time.Now().Add(-90*time.Minute).UTC().Format("2006-01-02T15:04:05") + "+00:00")
		require.Equal(t, []any{"t-1"}, got)

		got, total = txs("limit=2")
		require.Equal(t, []any{"t-5", "t-4"}, got)
		require.Equal(t, float64(4), total)
		got, total = txs("limit=2&offset=2")
		require.Equal(t, []any{"t-3", "t-2"}, got)
		require.Equal(t, float64(4), total)
		got, total = txs("limit=2&offset=4")
		require.Empty(t, got)
		require.Equal(t, float64(4), total)
		m := b.list(t, "/api/v1/messages?queue=ml-win&limit=3&offset=1")
		require.Equal(t, map[string]any{"limit": float64(3), "offset": float64(1)}, m["pagination"])
		require.Equal(t, []any{float64(3), float64(1), false}, []any{m["limit"], m["offset"], m["hasMore"]})
		m = b.list(t, "/api/v1/messages?queue=ml-win&limit=2&offset=1")
		require.Equal(t, []any{float64(2), float64(1), true}, []any{m["limit"], m["offset"], m["hasMore"]})
		got, _ = txs("from=" + time.Now().UTC().Format("2006-01-02"))
		require.Contains(t, got, "t-5", "a date is midnight UTC")

		// to is rounded up to the end of its minute: the start of t-5's minute still
		// includes t-5.
		newest := rows(t, b.list(t, "/api/v1/messages?queue=ml-win&limit=1"), "messages")[0]
		created, err := time.Parse(time.RFC3339, newest["createdAt"].(string))
		require.NoError(t, err)
		got, _ = txs("to=" + created.Truncate(time.Minute).Format("2006-01-02T15:04"))
		require.Equal(t, "t-5", got[0])
	})

	t.Run("RejectsBadParameters", func(t *testing.T) {
		t.Parallel()
		b := setupAdmin(t)
		for _, tc := range []struct{ name, query, msg, field string }{
			{"Status", "status=failed", "status must be one of pending, processing, completed, dead_letter", "status"},
			{"LimitNotInteger", "limit=ten", "limit must be an integer", "limit"},
			{"LimitFraction", "limit=10.5", "limit must be an integer", "limit"},
			{"LimitExponent", "limit=1e4", "limit must be an integer", "limit"},
			{"LimitOverflow", "limit=99999999999999999999", "limit must be an integer", "limit"},
			{"LimitTooLarge", "limit=10001", "limit must be between 1 and 10000", "limit"},
			{"LimitHuge", "limit=4294967296", "limit must be between 1 and 10000", "limit"},
			{"LimitZero", "limit=0", "limit must be between 1 and 10000", "limit"},
			{"LimitNegative", "limit=-5", "limit must be between 1 and 10000", "limit"},
			{"OffsetNegative", "offset=-1", "offset must not be negative", "offset"},
			{"OffsetNotInteger", "offset=1.5", "offset must be an integer", "offset"},
			{"From", "from=yesterday", "from must be an RFC 3339 timestamp or a date (YYYY-MM-DD) in the years 0001–9999", "from"},
			{"To", "to=2026-13-45", "to must be an RFC 3339 timestamp or a date (YYYY-MM-DD) in the years 0001–9999", "to"},
			{"FromAfterTo", "from=2026-05-02&to=2026-05-01", "from must be before to", "from"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				requireError(t, b.get(t, "/api/v1/messages?"+tc.query), http.StatusBadRequest, "invalid_argument", tc.msg, tc.field)
			})
		}
	})
}

// TestMessageListLargePages pages MaxMessageListLimit + 50 messages spread over
// several partitions with the largest page queenctl asks for: a full page, then the
// rest, with total and hasMore telling the truth about each.
func TestMessageListLargePages(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	const (
		count      = broker.MaxMessageListLimit + 50
		partitions = 7
		pushes     = 2
	)
	// Push in item order: ids strictly increase and each push is stamped later than
	// the one before, so newest first is the reverse of the push order.
	newestFirst := make([]any, count)
	for n := range pushes {
		items := make([]any, 0, count/pushes+1)
		for i := n * count / pushes; i < (n+1)*count/pushes; i++ {
			tx := fmt.Sprintf("t-%05d", i)
			items = append(items, map[string]any{"queue": "ml-big", "partition": "p" + itoa(i%partitions),
				"transactionId": tx, "payload": i})
			newestFirst[count-1-i] = tx
		}
		r := b.post(t, "/api/v1/push", mustJSON(t, map[string]any{"items": items}))
		requireStatus(t, http.StatusCreated, r)
		require.Len(t, r.array(t), len(items))
	}

	page := func(t *testing.T, query string) (txs []any, meta []any) {
		t.Helper()
		m := b.list(t, "/api/v1/messages?queue=ml-big&"+query)
		msgs := rows(t, m, "messages")
		return field(msgs, "transactionId"), []any{m["total"], m["limit"], m["offset"], m["hasMore"], m["pagination"]}
	}
	pagination := func(limit, offset int) map[string]any {
		return map[string]any{"limit": float64(limit), "offset": float64(offset)}
	}

	t.Run("FullPageThenRest", func(t *testing.T) {
		t.Parallel()
		first, meta := page(t, "limit=10000")
		require.Equal(t, []any{float64(count), float64(10000), float64(0), true, pagination(10000, 0)}, meta)
		require.Len(t, first, 10000)
		require.Equal(t, newestFirst[:10000], first, "newest first across partitions")

		rest, meta := page(t, "limit=10000&offset=10000")
		require.Equal(t, []any{float64(count), float64(10000), float64(10000), false, pagination(10000, 10000)}, meta)
		require.Equal(t, newestFirst[10000:], rest)

		seen := make(map[any]bool, count)
		for _, tx := range append(first, rest...) {
			require.False(t, seen[tx], "%v on both pages", tx)
			seen[tx] = true
		}
		require.Len(t, seen, count)
	})

	t.Run("PageEndingAtTotal", func(t *testing.T) {
		t.Parallel()
		got, meta := page(t, "limit=50&offset=10000")
		require.Equal(t, []any{float64(count), float64(50), float64(10000), false, pagination(50, 10000)}, meta)
		require.Equal(t, newestFirst[10000:], got)
		got, meta = page(t, "limit=49&offset=10000")
		require.Equal(t, []any{float64(count), float64(49), float64(10000), true, pagination(49, 10000)}, meta)
		require.Equal(t, newestFirst[10000:10049], got)
	})

	t.Run("OffsetPastTotal", func(t *testing.T) {
		t.Parallel()
		for _, offset := range []int{count, count + 1, 1 << 30} {
			got, meta := page(t, "limit=10000&offset="+itoa(offset))
			require.Empty(t, got, "offset %d", offset)
			require.Equal(t, []any{float64(count), float64(10000), float64(offset), false, pagination(10000, offset)}, meta)
		}
	})

	t.Run("OnePartitionAndStatus", func(t *testing.T) {
		t.Parallel()
		var want []any
		for _, tx := range newestFirst {
			var i int
			_, err := fmt.Sscanf(tx.(string), "t-%d", &i)
			require.NoError(t, err)
			if i%partitions == 3 {
				want = append(want, tx)
			}
		}
		got, meta := page(t, "partition=p3&status=pending&limit=10000")
		require.Equal(t, []any{float64(len(want)), float64(10000), float64(0), false, pagination(10000, 0)}, meta)
		require.Equal(t, want, got)
	})

	t.Run("OtherListingsKeepTheirCap", func(t *testing.T) {
		t.Parallel()
		requireError(t, b.get(t, "/api/v1/dlq?limit=1001"), http.StatusBadRequest, "invalid_argument",
			"limit must be between 1 and 1000", "limit")
	})
}

func TestMessageDetailAndDelete(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	// An hour-long lease: the detail must still show the message processing however
	// slowly a loaded machine gets to the assertions.
	b.configure(t, "md-q", `{"leaseTime":3600,"retryLimit":2,"retryDelay":500,"ttl":120,"priority":3}`)
	pid := b.pushed(t, "md-q", "", "t-1", `{"x":1}`)
	b.ack(t, b.popPartition(t, "md-q", "Default", "g1", 1)[0], "g1", "completed", "")
	b.popPartition(t, "md-q", "Default", "", 1) // queue mode holds a lease

	t.Run("Shape", func(t *testing.T) {
		t.Parallel()
		r := b.get(t, "/api/v1/messages/"+pid+"/t-1")
		requireStatus(t, http.StatusOK, r)
		d := r.object(t)
		require.Equal(t, sortedKeys("id", "transactionId", "partitionId", "queuePath", "queue", "partition", "namespace",
			"task", "status", "payload", "isEncrypted", "traceId", "producerSub", "createdAt", "errorMessage", "retryCount",
			"leaseExpiresAt", "queueConfig", "mode", "consumerGroups"), keys(d))
		require.True(t, queue.IsUUID(d["id"].(string)))
		require.Equal(t, "t-1", d["transactionId"])
		require.Equal(t, pid, d["partitionId"])
		require.Equal(t, "md-q/Default", d["queuePath"])
		require.Equal(t, "", d["namespace"])
		require.Equal(t, "processing", d["status"])
		require.Equal(t, map[string]any{"x": float64(1)}, d["payload"])
		require.Equal(t, false, d["isEncrypted"])
		require.Nil(t, d["traceId"])
		require.Nil(t, d["errorMessage"])
		require.Nil(t, d["retryCount"])
		require.Regexp(t, millisRE, d["createdAt"])
		require.Regexp(t, millisRE, d["leaseExpiresAt"])
		require.Equal(t, map[string]any{"leaseTime": float64(3600), "retryLimit": float64(2), "retryDelay": float64(500),
			"ttl": float64(120), "priority": float64(3)}, d["queueConfig"])
		require.Equal(t, map[string]any{"hasQueueMode": true, "busGroupsCount": float64(1), "consumedByGroups": float64(1),
			"type": "hybrid"}, d["mode"])
		groups := rows(t, d, "consumerGroups")
		require.Len(t, groups, 2)
		require.Equal(t, sortedKeys("name", "consumed", "leaseExpiresAt"), keys(groups[0]))
		require.Equal(t, "__QUEUE_MODE__", groups[0]["name"])
		require.Equal(t, false, groups[0]["consumed"])
		require.Regexp(t, millisRE, groups[0]["leaseExpiresAt"])
		require.Equal(t, map[string]any{"name": "g1", "consumed": true, "leaseExpiresAt": nil}, groups[1])
	})

	t.Run("UnknownIs404", func(t *testing.T) {
		t.Parallel()
		for _, path := range []string{pid + "/nope", "00000000-0000-0000-0000-000000000001/t-1", "not-a-uuid/t-1"} {
			r := b.get(t, "/api/v1/messages/"+path)
			requireError(t, r, http.StatusNotFound, "not_found", "Message not found", "")
			require.JSONEq(t, `{"error":"Message not found","code":"not_found"}`, string(r.body))
		}
	})

	t.Run("DeleteCascades", func(t *testing.T) {
		t.Parallel()
		b := setupAdmin(t)
		pid := b.pushed(t, "md-del", "", "t-del", `{"gone":true}`)
		b.pushed(t, "md-del", "", "t-keep", `2`)
		b.ack(t, b.popPartition(t, "md-del", "Default", "", 1)[0], "", "dlq", "bad")
		requireStatus(t, http.StatusCreated, b.post(t, "/api/v1/traces",
			`{"transactionId":"t-del","partitionId":"`+pid+`","data":{"n":1},"traceNames":"del-flow"}`))
		require.Equal(t, float64(1), b.list(t, "/api/v1/dlq")["total"])

		r := b.do(t, http.MethodDelete, "/api/v1/messages/"+pid+"/t-del", "")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"success":true,"partitionId":"`+pid+`","transactionId":"t-del",
			"message":"Message deleted successfully"}`, string(r.body))
		requireError(t, b.get(t, "/api/v1/messages/"+pid+"/t-del"), http.StatusNotFound, "not_found", "Message not found", "")
		require.JSONEq(t, `{"messages":[],"total":0,"pagination":{"limit":100,"offset":0}}`, string(b.get(t, "/api/v1/dlq").body))
		require.JSONEq(t, `{"traces":[]}`, string(b.get(t, "/api/v1/traces/"+pid+"/t-del").body))
		require.Equal(t, float64(0), b.list(t, "/api/v1/traces/by-name/del-flow")["total"])

		r = b.do(t, http.MethodDelete, "/api/v1/messages/"+pid+"/t-del", "")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"success":false,"partitionId":"`+pid+`","transactionId":"t-del",
			"message":"Message not found"}`, string(r.body))
		r = b.do(t, http.MethodDelete, "/api/v1/messages/not-a-uuid/t-del", "")
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, false, r.object(t)["success"])

		// The cursor is untouched: the queue-mode group stays past the deleted message
		// and the next message is still delivered.
		next := b.popPartition(t, "md-del", "Default", "", 1)[0]
		require.Equal(t, "t-keep", next["transactionId"])
	})
}

func TestQueryTimestamp(t *testing.T) {
	t.Parallel()
	utc := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err)
		return ts
	}
	for _, tc := range []struct {
		name, raw string
		want      time.Time
		bad       bool
	}{
		{name: "Absent", raw: ""},
		{name: "RFC3339", raw: "2026-04-26T10:59:28Z", want: utc("2026-04-26T10:59:28Z")},
		{name: "RFC3339Millis", raw: "2026-04-26T10:59:28.267Z", want: utc("2026-04-26T10:59:28.267Z")},
		{name: "Offset", raw: "2026-04-26T12:59:28+02:00", want: utc("2026-04-26T10:59:28Z")},
		{name: "OffsetPlusAsSpace", raw: "2026-04-26T12:59:28 02:00", want: utc("2026-04-26T10:59:28Z")},
		{name: "NoZoneIsUTC", raw: "2026-04-26T10:59:28", want: utc("2026-04-26T10:59:28Z")},
		{name: "Minutes", raw: "2026-04-26T10:59", want: utc("2026-04-26T10:59:00Z")},
		{name: "Date", raw: "2026-04-26", want: utc("2026-04-26T00:00:00Z")},
		{name: "Garbage", raw: "last tuesday", bad: true},
		{name: "UnixSeconds", raw: "1777200000", bad: true},
		{name: "BadDate", raw: "2026-02-30", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := queryTimestamp(url.Values{"from": {tc.raw}}, "from")
			if tc.bad {
				var ve *queue.ValidationError
				require.ErrorAs(t, err, &ve)
				require.Equal(t, "from", ve.Field)
				return
			}
			require.NoError(t, err)
			require.True(t, tc.want.Equal(got), "got %v, want %v", got, tc.want)
		})
	}
}

func TestDLQList(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	b.pushed(t, "dlq-a", "", "a-1", `{"n":1}`)
	b.pushed(t, "dlq-a", "", "a-2", `{"n":2}`)
	b.pushed(t, "dlq-b", "pb", "b-1", `{"n":3}`)
	popped := b.popPartition(t, "dlq-a", "Default", "", 2)
	b.ack(t, popped[0], "", "dlq", "first failure")
	// The dead letter released the lease: a-2 is claimable at once.
	b.ack(t, b.popPartition(t, "dlq-a", "Default", "", 1)[0], "", "dlq", "second failure")
	b.ack(t, b.popPartition(t, "dlq-b", "pb", "workers", 1)[0], "workers", "dlq", "")

	all := b.list(t, "/api/v1/dlq")
	require.Equal(t, sortedKeys("messages", "total", "pagination"), keys(all))
	require.Equal(t, float64(3), all["total"])
	require.Equal(t, map[string]any{"limit": float64(100), "offset": float64(0)}, all["pagination"])
	msgs := rows(t, all, "messages")
	require.Equal(t, []any{"b-1", "a-2", "a-1"}, field(msgs, "transactionId"), "newest failure first")
	for _, m := range msgs {
		require.Equal(t, sortedKeys("id", "transactionId", "partitionId", "queue", "queueName", "partition", "consumerGroup",
			"errorMessage", "retryCount", "data", "producerSub", "createdAt", "failedAt", "dlqId"), keys(m))
		require.True(t, queue.IsUUID(m["id"].(string)))
		require.True(t, queue.IsUUID(m["dlqId"].(string)))
		require.NotEqual(t, m["id"], m["dlqId"], "the entry's id, not the message's")
		require.True(t, queue.IsUUID(m["partitionId"].(string)))
		require.Equal(t, m["queue"], m["queueName"])
		require.IsType(t, float64(0), m["retryCount"])
		require.Nil(t, m["producerSub"])
		require.Regexp(t, millisRE, m["createdAt"])
		require.Regexp(t, millisRE, m["failedAt"])
	}
	require.Equal(t, map[string]any{"n": float64(2)}, msgs[1]["data"])
	require.Equal(t, "second failure", msgs[1]["errorMessage"])
	require.Equal(t, "__QUEUE_MODE__", msgs[1]["consumerGroup"])
	require.Equal(t, "Default", msgs[1]["partition"])
	require.Equal(t, "workers", msgs[0]["consumerGroup"])
	require.Equal(t, "pb", msgs[0]["partition"])

	t.Run("Paging", func(t *testing.T) {
		t.Parallel()
		m := b.list(t, "/api/v1/dlq?limit=1&offset=1")
		require.Equal(t, float64(3), m["total"])
		require.Equal(t, map[string]any{"limit": float64(1), "offset": float64(1)}, m["pagination"])
		require.Equal(t, []any{"a-2"}, field(rows(t, m, "messages"), "transactionId"))
		m = b.list(t, "/api/v1/dlq?offset=3")
		require.Empty(t, rows(t, m, "messages"))
		require.Equal(t, float64(3), m["total"])
	})

	t.Run("Filters", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name, query string
			want        []any
		}{
			{"ConsumerGroup", "consumerGroup=workers", []any{"b-1"}},
			{"Queue", "queue=dlq-a", []any{"a-2", "a-1"}},
			{"QueueAndGroup", "queue=dlq-a&consumerGroup=workers", []any{}},
			{"Partition", "partition=pb", []any{"b-1"}},
			{"FromPast", "from=2020-01-01", []any{"b-1", "a-2", "a-1"}},
			{"FromFuture", "from=2999-01-01T00:00:00Z", []any{}},
			{"ToPast", "to=2020-01-01", []any{}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				m := b.list(t, "/api/v1/dlq?"+tc.query)
				require.Equal(t, tc.want, field(rows(t, m, "messages"), "transactionId"))
				require.Equal(t, float64(len(tc.want)), m["total"])
			})
		}
	})

	t.Run("RejectsBadParameters", func(t *testing.T) {
		t.Parallel()
		requireError(t, b.get(t, "/api/v1/dlq?limit=x"), http.StatusBadRequest, "invalid_argument", "limit must be an integer", "limit")
		requireError(t, b.get(t, "/api/v1/dlq?limit=5000"), http.StatusBadRequest, "invalid_argument", "limit must be between 1 and 1000", "limit")
		requireError(t, b.get(t, "/api/v1/dlq?offset=-2"), http.StatusBadRequest, "invalid_argument", "offset must not be negative", "offset")
		requireError(t, b.get(t, "/api/v1/dlq?to=soon"), http.StatusBadRequest, "invalid_argument",
			"to must be an RFC 3339 timestamp or a date (YYYY-MM-DD) in the years 0001–9999", "to")
		requireError(t, b.get(t, "/api/v1/dlq?from=2026-05-02&to=2026-05-01"), http.StatusBadRequest, "invalid_argument",
			"from must not be after to", "from")
		requireError(t, b.get(t, "/api/v1/dlq?consumerGroup=%00"), http.StatusBadRequest, "invalid_argument",
			"consumerGroup must be valid UTF-8 without NUL characters", "consumerGroup")
	})

	t.Run("EmptyDLQ", func(t *testing.T) {
		t.Parallel()
		b := setupAdmin(t)
		r := b.get(t, "/api/v1/dlq")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"messages":[],"total":0,"pagination":{"limit":100,"offset":0}}`, string(r.body))
	})
}

// TestEncryptedPayloadsAreOpened checks that the admin reads decrypt what push sealed:
// message detail, DLQ data and the by-name trace payload.
func TestEncryptedPayloadsAreOpened(t *testing.T) {
	t.Parallel()
	sealer, err := encryption.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	b := setupAdmin(t, withSealer(sealer))
	b.configure(t, "enc-q", `{"encryptionEnabled":true}`)
	pid := b.pushed(t, "enc-q", "", "t-enc", `{"secret":42}`)

	var stored []byte
	require.NoError(t, b.db.QueryRow(t.Context(),
		`SELECT payload::text FROM queen.messages WHERE transaction_id = 't-enc'`).Scan(&stored))
	require.True(t, encryption.LooksSealed(stored), "stored sealed: %s", stored)

	b.ack(t, b.popPartition(t, "enc-q", "Default", "", 1)[0], "", "dlq", "x")
	requireStatus(t, http.StatusCreated, b.post(t, "/api/v1/traces",
		`{"transactionId":"t-enc","partitionId":"`+pid+`","data":{},"traceNames":["enc"]}`))

	d := b.list(t, "/api/v1/messages/"+pid+"/t-enc")
	require.Equal(t, true, d["isEncrypted"])
	require.Equal(t, map[string]any{"secret": float64(42)}, d["payload"])
	require.Equal(t, "dead_letter", d["status"])
	require.Equal(t, "x", d["errorMessage"])
	require.Equal(t, float64(0), d["retryCount"])

	dlq := rows(t, b.list(t, "/api/v1/dlq"), "messages")
	require.Len(t, dlq, 1)
	require.Equal(t, map[string]any{"secret": float64(42)}, dlq[0]["data"])

	traces := rows(t, b.list(t, "/api/v1/traces/by-name/enc"), "traces")
	require.Len(t, traces, 1)
	require.Equal(t, map[string]any{"secret": float64(42)}, traces[0]["message_payload"])
}
