package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// traceKeys are the keys of one trace of GET /api/v1/traces/{p}/{t}.
var traceKeys = sortedKeys("id", "event_type", "data", "consumer_group", "worker_id", "created_at", "trace_names")

// traceByNameKeys are the keys of one trace of GET /api/v1/traces/by-name/{n}.
var traceByNameKeys = sortedKeys("id", "transaction_id", "partition_id", "event_type", "data", "consumer_group",
	"worker_id", "created_at", "queue_name", "partition_name", "message_payload", "trace_names")

// addTrace posts a trace and returns its id.
func (b *testBundle) addTrace(t *testing.T, body string) string {
	t.Helper()
	r := b.post(t, "/api/v1/traces", body)
	requireStatus(t, http.StatusCreated, r)
	m := r.object(t)
	require.Equal(t, sortedKeys("success", "traceId"), keys(m))
	require.Equal(t, true, m["success"])
	id, ok := m["traceId"].(string)
	require.True(t, ok && queue.IsUUID(id), "traceId: %v", m["traceId"])
	return id
}

func TestTraceCreate(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	pid := b.pushed(t, "tr-q", "", "t-1", `{"order":1}`)

	t.Run("Validation", func(t *testing.T) {
		t.Parallel()
		long := strings.Repeat("n", 256)
		deep := strings.Repeat("[", queue.MaxPayloadDepth+1) + strings.Repeat("]", queue.MaxPayloadDepth+1)
		for _, tc := range []struct{ name, body, msg, field string }{
			{"NoTransactionID", `{"partitionId":"` + pid + `","data":{}}`, "transactionId and partitionId are required", "transactionId"},
			{"NoPartitionID", `{"transactionId":"t-1","partitionId":null,"data":{}}`, "transactionId and partitionId are required", "partitionId"},
			{"NoData", `{"transactionId":"t-1","partitionId":"` + pid + `"}`, "data is required", "data"},
			{"NullData", `{"transactionId":"t-1","partitionId":"` + pid + `","data":null}`, "data is required", "data"},
			{"NamesNumber", `{"transactionId":"t-1","partitionId":"` + pid + `","data":1,"traceNames":5}`,
				"traceNames must be a string or an array of strings", "traceNames"},
			{"NamesMixed", `{"transactionId":"t-1","partitionId":"` + pid + `","data":1,"traceNames":["a",2]}`,
				"traceNames must be a string or an array of strings", "traceNames"},
			{"NameTooLong", `{"transactionId":"t-1","partitionId":"` + pid + `","data":1,"traceNames":["ok","` + long + `"]}`,
				"traceNames[1] must be at most 255 characters", "traceNames[1]"},
			{"GroupNotString", `{"transactionId":"t-1","partitionId":"` + pid + `","data":1,"consumerGroup":7}`,
				"consumerGroup must be a string", "consumerGroup"},
			{"EventTypeTooLong", `{"transactionId":"t-1","partitionId":"` + pid + `","data":1,"eventType":"` + long[:101] + `"}`,
				"eventType must be at most 100 characters", "eventType"},
			{"EmptyBody", ``, "Empty request body", ""},
			{"DataTooDeep", `{"transactionId":"t-1","partitionId":"` + pid + `","data":` + deep + `}`,
				fmt.Sprintf("data nests arrays and objects more than %d levels deep", queue.MaxPayloadDepth), "data"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				requireError(t, b.post(t, "/api/v1/traces", tc.body), http.StatusBadRequest, "invalid_argument", tc.msg, tc.field)
			})
		}
	})

	t.Run("UnknownMessageIs404", func(t *testing.T) {
		t.Parallel()
		for _, body := range []string{
			`{"transactionId":"nope","partitionId":"` + pid + `","data":{}}`,
			`{"transactionId":"t-1","partitionId":"not-a-uuid","data":{}}`,
		} {
			r := b.post(t, "/api/v1/traces", body)
			requireStatus(t, http.StatusNotFound, r)
			require.JSONEq(t, `{"success":false,"error":"Message not found","code":"not_found"}`, string(r.body))
		}
	})

	t.Run("ReadBackByMessage", func(t *testing.T) {
		t.Parallel()
		b := setupAdmin(t)
		pid := b.pushed(t, "tr-read", "", "t-1", `1`)
		first := b.addTrace(t, `{"transactionId":"t-1","partitionId":"`+pid+`","data":{"text":"started"},"traceNames":"flow-a"}`)
		second := b.addTrace(t, `{"transactionId":"t-1","partitionId":"`+pid+`","consumerGroup":"workers","eventType":"step",
			"data":[1,2],"traceNames":["flow-a","flow-b","flow-a",""]}`)
		third := b.addTrace(t, `{"transactionId":"t-1","partitionId":"`+pid+`","data":"plain","traceNames":null}`)

		m := b.list(t, "/api/v1/traces/"+pid+"/t-1")
		require.Equal(t, []string{"traces"}, keys(m))
		traces := rows(t, m, "traces")
		require.Equal(t, []any{first, second, third}, field(traces, "id"), "oldest first")
		for _, tr := range traces {
			require.Equal(t, traceKeys, keys(tr))
			require.Equal(t, "queen", tr["worker_id"])
			require.Regexp(t, millisRE, tr["created_at"])
		}
		require.Equal(t, "info", traces[0]["event_type"])
		require.Equal(t, "__QUEUE_MODE__", traces[0]["consumer_group"])
		require.Equal(t, map[string]any{"text": "started"}, traces[0]["data"])
		require.Equal(t, []any{"flow-a"}, traces[0]["trace_names"])
		require.Equal(t, "step", traces[1]["event_type"])
		require.Equal(t, "workers", traces[1]["consumer_group"])
		require.Equal(t, []any{float64(1), float64(2)}, traces[1]["data"])
		require.Equal(t, []any{"flow-a", "flow-b"}, traces[1]["trace_names"], "deduplicated, empty names dropped")
		require.Equal(t, []any{}, traces[2]["trace_names"])

		m = b.list(t, "/api/v1/traces/"+pid+"/t-1?limit=1&offset=1")
		require.Equal(t, []any{second}, field(rows(t, m, "traces"), "id"))

		for _, path := range []string{pid + "/nope", "not-a-uuid/t-1"} {
			r := b.get(t, "/api/v1/traces/"+path)
			requireStatus(t, http.StatusOK, r)
			require.JSONEq(t, `{"traces":[]}`, string(r.body))
		}
	})
}

func TestTraceByNameAndNames(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	p1 := b.pushed(t, "tn-q", "", "m-1", `{"m":1}`)
	p2 := b.pushed(t, "tn-q", "east", "m-2", `{"m":2}`)
	ids := []string{
		b.addTrace(t, `{"transactionId":"m-1","partitionId":"`+p1+`","data":{"i":1},"traceNames":["paged","other"]}`),
		b.addTrace(t, `{"transactionId":"m-2","partitionId":"`+p2+`","data":{"i":2},"traceNames":"paged"}`),
		b.addTrace(t, `{"transactionId":"m-1","partitionId":"`+p1+`","data":{"i":3},"traceNames":["paged"]}`),
	}
	b.addTrace(t, `{"transactionId":"m-2","partitionId":"`+p2+`","data":{},"traceNames":"order flow/2"}`)

	t.Run("ByNameShape", func(t *testing.T) {
		t.Parallel()
		m := b.list(t, "/api/v1/traces/by-name/paged")
		require.Equal(t, sortedKeys("traces", "total", "pagination"), keys(m))
		require.Equal(t, float64(3), m["total"])
		require.Equal(t, map[string]any{"limit": float64(100), "offset": float64(0)}, m["pagination"])
		traces := rows(t, m, "traces")
		require.Equal(t, []any{ids[0], ids[1], ids[2]}, field(traces, "id"), "oldest first")
		for _, tr := range traces {
			require.Equal(t, traceByNameKeys, keys(tr))
			require.Equal(t, "tn-q", tr["queue_name"])
			require.Equal(t, "queen", tr["worker_id"])
			require.Equal(t, "info", tr["event_type"])
			require.Regexp(t, millisRE, tr["created_at"])
		}
		require.Equal(t, "m-2", traces[1]["transaction_id"])
		require.Equal(t, p2, traces[1]["partition_id"])
		require.Equal(t, "east", traces[1]["partition_name"])
		require.Equal(t, map[string]any{"m": float64(2)}, traces[1]["message_payload"])
		require.Equal(t, map[string]any{"i": float64(2)}, traces[1]["data"])
		require.Equal(t, []any{"paged", "other"}, traces[0]["trace_names"])
	})

	t.Run("ByNamePaging", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			query string
			want  []any
		}{
			{"limit=2&offset=1", []any{ids[1], ids[2]}},
			{"limit=2&offset=2", []any{ids[2]}},
			{"limit=1", []any{ids[0]}},
			{"offset=3", []any{}},
		} {
			m := b.list(t, "/api/v1/traces/by-name/paged?"+tc.query)
			require.Equal(t, tc.want, field(rows(t, m, "traces"), "id"), tc.query)
			require.Equal(t, float64(3), m["total"], tc.query)
		}
		m := b.list(t, "/api/v1/traces/by-name/paged?limit=2&offset=1")
		require.Equal(t, map[string]any{"limit": float64(2), "offset": float64(1)}, m["pagination"])
	})

	t.Run("ByNameIsDecoded", func(t *testing.T) {
		t.Parallel()
		m := b.list(t, "/api/v1/traces/by-name/order%20flow%2F2")
		require.Equal(t, float64(1), m["total"])
		require.Equal(t, []any{"order flow/2"}, rows(t, m, "traces")[0]["trace_names"])
		r := b.get(t, "/api/v1/traces/by-name/unknown")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"traces":[],"total":0,"pagination":{"limit":100,"offset":0}}`, string(r.body))
	})

	t.Run("Names", func(t *testing.T) {
		t.Parallel()
		m := b.list(t, "/api/v1/traces/names")
		require.Equal(t, sortedKeys("trace_names", "total", "pagination"), keys(m))
		require.Equal(t, float64(3), m["total"])
		require.Equal(t, map[string]any{"limit": float64(50), "offset": float64(0)}, m["pagination"])
		names := rows(t, m, "trace_names")
		require.Len(t, names, 3)
		byName := map[string]map[string]any{}
		for _, n := range names {
			require.Equal(t, sortedKeys("trace_name", "trace_count", "message_count", "last_seen"), keys(n))
			require.Regexp(t, millisRE, n["last_seen"])
			byName[n["trace_name"].(string)] = n
		}
		require.Equal(t, float64(3), byName["paged"]["trace_count"])
		require.Equal(t, float64(2), byName["paged"]["message_count"])
		require.Equal(t, float64(1), byName["other"]["trace_count"])
		require.Equal(t, float64(1), byName["other"]["message_count"])
		require.Equal(t, "order flow/2", names[0]["trace_name"], "most recently seen first")

		m = b.list(t, "/api/v1/traces/names?limit=1&offset=1")
		require.Equal(t, float64(3), m["total"])
		require.Len(t, rows(t, m, "trace_names"), 1)
		require.Equal(t, names[1]["trace_name"], rows(t, m, "trace_names")[0]["trace_name"])
		m = b.list(t, "/api/v1/traces/names?offset=5")
		require.Empty(t, rows(t, m, "trace_names"))
		require.Equal(t, float64(3), m["total"])
	})

	t.Run("RejectsBadParameters", func(t *testing.T) {
		t.Parallel()
		for _, path := range []string{"/api/v1/traces/names", "/api/v1/traces/by-name/paged", "/api/v1/traces/" + p1 + "/m-1"} {
			requireError(t, b.get(t, path+"?limit=abc"), http.StatusBadRequest, "invalid_argument", "limit must be an integer", "limit")
			requireError(t, b.get(t, path+"?limit=1001"), http.StatusBadRequest, "invalid_argument", "limit must be between 1 and 1000", "limit")
			requireError(t, b.get(t, path+"?offset=-1"), http.StatusBadRequest, "invalid_argument", "offset must not be negative", "offset")
		}
	})
}

func TestTraceNamesEmpty(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	r := b.get(t, "/api/v1/traces/names")
	requireStatus(t, http.StatusOK, r)
	require.JSONEq(t, `{"trace_names":[],"total":0,"pagination":{"limit":50,"offset":0}}`, string(r.body))
}
