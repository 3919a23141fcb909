package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/jsonscan"
)

// TestParamsAreCheckedBeforeSQL: every path and query parameter that PostgreSQL's
// text cannot hold, or that is too long, is a 400 naming it, on every route.
func TestParamsAreCheckedBeforeSQL(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	const utf8Msg = " must be valid UTF-8 without NUL characters"
	long := strings.Repeat("q", 256)
	for _, tc := range []struct {
		name, method, path, msg, field string
	}{
		{"QueueNUL", http.MethodGet, "/api/v1/resources/queues/%00", "queue" + utf8Msg, "queue"},
		{"QueueInvalidUTF8", http.MethodGet, "/api/v1/resources/queues/%ff", "queue" + utf8Msg, "queue"},
		{"QueueTooLong", http.MethodDelete, "/api/v1/resources/queues/" + long, "queue must be at most 255 characters", "queue"},
		{"MultibyteNameTooLong", http.MethodGet, "/api/v1/resources/queues/" + strings.Repeat("%C3%A9", 256),
			"queue must be at most 255 characters", "queue"},
		{"PopNamespace", http.MethodGet, "/api/v1/pop?namespace=%00", "namespace" + utf8Msg, "namespace"},
		{"PopTask", http.MethodGet, "/api/v1/pop?task=a%ffb", "task" + utf8Msg, "task"},
		{"PopSubscriptionMode", http.MethodGet, "/api/v1/pop/queue/q?subscriptionMode=%00", "subscriptionMode" + utf8Msg, "subscriptionMode"},
		{"LeaseID", http.MethodPost, "/api/v1/lease/%00/extend", "leaseId" + utf8Msg, "leaseId"},
		{"EscapedSlashDecoded", http.MethodGet, "/api/v1/consumer-groups/a%2F%00", "group" + utf8Msg, "group"},
		{"MessagesFilter", http.MethodGet, "/api/v1/messages?queue=" + long, "queue must be at most 255 characters", "queue"},
		{"StreamName", http.MethodGet, "/streams/v1/queries/%ff", "name" + utf8Msg, "name"},
		{"UnknownParameter", http.MethodGet, "/api/v1/resources/queues?foo=%00", "foo" + utf8Msg, "foo"},
		{"NamelessParameter", http.MethodGet, "/api/v1/status?=%00", "query" + utf8Msg, "query"},
		{"BadParameterName", http.MethodGet, "/api/v1/status?%ff=1",
			"query parameter names must be at most 255 characters of valid UTF-8 without NUL characters, percent-encoded", "query"},
		{"BadPercentEncoding", http.MethodGet, "/api/v1/dlq?queue=%zz", "queue is not a valid percent-encoded query value", "queue"},
		{"SecondValueToo", http.MethodGet, "/api/v1/dlq?queue=ok&queue=%00", "queue" + utf8Msg, "queue"},
		{"HealthToo", http.MethodGet, "/health/live?x=%00", "x" + utf8Msg, "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireError(t, b.do(t, tc.method, tc.path, ""), http.StatusBadRequest, "invalid_argument", tc.msg, tc.field)
		})
	}

	t.Run("StreamRoutesKeepTheirShape", func(t *testing.T) {
		t.Parallel()
		r := b.post(t, "/streams/v1/state/get?x=%00", `{}`)
		requireStatus(t, http.StatusBadRequest, r)
		require.JSONEq(t, `{"success":false,"error":"x must be valid UTF-8 without NUL characters",`+
			`"code":"invalid_argument","field":"x","rows":[]}`, string(r.body))
	})

	t.Run("TransactionIDLengthIsCharacters", func(t *testing.T) {
		t.Parallel()
		// 200 characters in 400 bytes: varchar(255) holds it, so push, ack and a
		// transaction take it; 256 characters are refused.
		id := strings.Repeat("é", 200)
		pushed := b.pushOne(t, "txid-chars", "", id, `1`)
		require.Equal(t, id, pushed["transactionId"])
		m := b.popPartition(t, "txid-chars", "Default", "", 1)[0]
		r := b.post(t, "/api/v1/ack", mustJSON(t, map[string]any{"transactionId": id, "partitionId": m["partitionId"],
			"leaseId": m["leaseId"], "status": "completed"}))
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, true, r.array(t)[0]["success"], "%s", r.body)
		requireError(t, b.post(t, "/api/v1/push", `{"items":[{"queue":"txid-chars","transactionId":"`+strings.Repeat("é", 256)+`"}]}`),
			http.StatusBadRequest, "invalid_argument", "items[0].transactionId must be at most 255 characters", "items[0].transactionId")
	})

	t.Run("ValidParametersPass", func(t *testing.T) {
		t.Parallel()
		b.pushOne(t, "pé/q", "", "", `1`)
		requireStatus(t, http.StatusOK, b.get(t, "/api/v1/resources/queues/p%C3%A9%2Fq?namespace=&limit=10"))
		// 255 characters are 510 bytes here: the limit counts characters.
		requireError(t, b.get(t, "/api/v1/resources/queues/"+strings.Repeat("%C3%A9", 255)), http.StatusNotFound,
			"not_found", "Queue not found", "")
	})
}

// deeperThanTheScanner is a JSON value the fast decoders leave to encoding/json.
var deeperThanTheScanner = strings.Repeat("[", jsonscan.MaxDepth+1) + strings.Repeat("]", jsonscan.MaxDepth+1)

// TestBodyStringsAreCheckedBeforeSQL: a body string with NUL is a 400 naming its field,
// whichever decoder read the body, and so is a payload PostgreSQL's jsonb refuses.
func TestBodyStringsAreCheckedBeforeSQL(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	const pid = "00000000-0000-0000-0000-000000000001"
	const utf8Msg = " must be valid UTF-8 without NUL characters"
	for _, tc := range []struct {
		name, path, body, msg, field string
	}{
		{"AckTransactionID", "/api/v1/ack", `{"transactionId":"a\u0000b","partitionId":"` + pid + `"}`,
			"transactionId" + utf8Msg, "transactionId"},
		{"AckLeaseIDSlowPath", "/api/v1/ack", `{"transactionId":"t","partitionId":"` + pid + `","leaseId":"\u0000","x":` +
			deeperThanTheScanner + `}`, "leaseId" + utf8Msg, "leaseId"},
		{"AckBatchError", "/api/v1/ack/batch", `{"acknowledgments":[{"transactionId":"t","partitionId":"` + pid + `"},` +
			`{"transactionId":"t","partitionId":"` + pid + `","status":"failed","error":"e\u0000"}]}`,
			"acknowledgments[1].error" + utf8Msg, "acknowledgments[1].error"},
		{"TransactionAck", "/api/v1/transaction", `{"operations":[{"type":"ack","transactionId":"t\u0000","partitionId":"` + pid + `"}]}`,
			"operations[0].transactionId" + utf8Msg, "operations[0].transactionId"},
		{"TransactionPushTransactionID", "/api/v1/transaction",
			`{"operations":[{"type":"push","items":[{"queue":"q","transactionId":"t\u0000"}]}]}`,
			"operations[0].items[0].transactionId" + utf8Msg, "operations[0].items[0].transactionId"},
		{"PushTransactionID", "/api/v1/push", `{"items":[{"queue":"q","transactionId":"t\u0000","payload":1}]}`,
			"items[0].transactionId" + utf8Msg, "items[0].transactionId"},
		{"PushLoneSurrogate", "/api/v1/push", `{"items":[{"queue":"q","payload":{"a":"\ud800"}}]}`,
			`items[0].payload must not contain an unpaired surrogate escape such as \ud800 (PostgreSQL jsonb cannot store it)`,
			"items[0].payload"},
		{"ConfigureNamespace", "/api/v1/configure", `{"queue":"q","namespace":"n\u0000"}`, "namespace" + utf8Msg, "namespace"},
		{"ConfigureTask", "/api/v1/configure", `{"queue":"q","task":"` + strings.Repeat("t", 256) + `"}`,
			"task must be at most 255 characters", "task"},
		{"TraceEventType", "/api/v1/traces", `{"transactionId":"t","partitionId":"` + pid + `","data":{},"eventType":"\u0000"}`,
			"eventType" + utf8Msg, "eventType"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireError(t, b.post(t, tc.path, tc.body), http.StatusBadRequest, "invalid_argument", tc.msg, tc.field)
		})
	}

	t.Run("StreamRegisterName", func(t *testing.T) {
		t.Parallel()
		r := b.post(t, "/streams/v1/queries", `{"name":"n\u0000","source_queue":"q","config_hash":"h"}`)
		requireStatus(t, http.StatusBadRequest, r)
		require.JSONEq(t, `{"success":false,"error":"name must be valid UTF-8 without NUL characters",`+
			`"code":"invalid_argument","field":"name"}`, string(r.body))
	})
}
