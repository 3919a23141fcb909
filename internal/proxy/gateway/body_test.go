package gateway

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTransactionBodyNamesTheTimerRidersQueues: the queues of a transaction's timers
// rider are checked against a key's queue list like its pushes, and each schedule
// counts as a message to come (a cancel does not), so a key limited to some queues
// cannot schedule into others through a transaction.
func TestTransactionBodyNamesTheTimerRidersQueues(t *testing.T) {
	t.Parallel()
	p, err := parse(bodyTransaction, []byte(`{"operations":[{"type":"push","items":[{"queue":"orders","payload":{}}]}],
		"timers":[{"op":"schedule","queue":"reminders","timerKey":"k","delayMs":1,"txn":"t","payload":"e30="},
		          {"op":"cancel","queue":"audit","timerKey":"k"}]}`))
	require.NoError(t, err)
	require.Equal(t, []string{"reminders", "audit", "orders"}, p.queues)
	require.Equal(t, 2, p.messages, "the push and the schedule")
	require.EqualValues(t, len(`{}`)+3, p.payloadBytes, "the push's payload and the schedule's decoded e30= (at most 3 bytes)")

	p, err = parse(bodyTransaction, []byte(`{"timers":[{"op":"reschedule","queue":"reminders"}]}`))
	require.NoError(t, err, "a riders-only transaction")
	require.Equal(t, []string{"reminders"}, p.queues)
	require.Equal(t, 1, p.messages)
}

// TestTransactionAndConfigureKeysMatchExactly: the proxy reads the keys the broker
// reads, exactly, so a look-alike key ("Queue") names no queue; the flat push form
// names its own.
func TestTransactionAndConfigureKeysMatchExactly(t *testing.T) {
	t.Parallel()
	p, err := parse(bodyTransaction, []byte(`{"operations":[
		{"type":"push","items":[{"queue":"billing","Queue":"orders","payload":{}}]},
		{"type":"push","queue":"audit","data":"abc"},
		{"type":"ack","queue":"ignored","transactionId":"t","partitionId":"p"}]}`))
	require.NoError(t, err)
	require.Equal(t, []string{"billing", "audit"}, p.queues)
	require.Equal(t, 2, p.messages)
	require.EqualValues(t, len(`{}`)+len(`"abc"`), p.payloadBytes)

	// A null payload is absent to the broker, which then stores the item's data: the
	// bytes counted against quotas are those.
	p, err = parse(bodyTransaction, []byte(`{"operations":[{"type":"push","items":[
		{"queue":"q","payload":null,"data":"0123456789"},{"queue":"q"}]}]}`))
	require.NoError(t, err)
	require.EqualValues(t, len(`"0123456789"`)+len(`{}`), p.payloadBytes)

	p, err = parse(bodyConfigure, []byte(`{"QUEUE":"orders","queue":"billing"}`))
	require.NoError(t, err)
	require.Equal(t, []string{"billing"}, p.queues)

	_, err = parse(bodyConfigure, []byte(`{"queue":7}`))
	require.Error(t, err, "a queue that is not a string")
}

// TestTimersBodyCountsWhatItSchedules: POST /api/v1/timers, in both of the broker's
// forms, names its queues and counts each schedule as a message to come, so quotas and
// the message rate apply to it as to a transaction's timers rider; a kv rider spans
// queues, so a key limited to some queues cannot use it.
func TestTimersBodyCountsWhatItSchedules(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`[{"op":"schedule","queue":"reminders","timerKey":"a","delayMs":0},{"op":"cancel","queue":"audit","timerKey":"b"}]`,
		`{"operations":[{"op":"schedule","queue":"reminders","timerKey":"a","delayMs":0},{"op":"cancel","queue":"audit","timerKey":"b"}]}`,
	} {
		p, err := parse(bodyTimers, []byte(body))
		require.NoError(t, err, body)
		require.Equal(t, []string{"reminders", "audit"}, p.queues, body)
		require.Equal(t, 1, p.messages, body)
	}
	_, err := parse(bodyTimers, []byte(`{"ops":[]}`))
	require.Error(t, err)

	p, err := parse(bodyTransaction, []byte(`{"kv":[{"op":"get","ns":"n","key":"k"}]}`))
	require.NoError(t, err)
	require.True(t, p.spans)
	p, err = parse(bodyTransaction, []byte(`{"kv":[],"operations":[{"type":"push","items":[{"queue":"q"}]}]}`))
	require.NoError(t, err)
	require.False(t, p.spans)
}

// TestPopBackendTimeout: a pop's long-poll is written into the query the broker gets,
// its own timeout read as the broker reads it (an integer, also with a zero fraction)
// or upstream's 30 s when it names none, capped by QUEEN_PROXY_MAX_POP_TIMEOUT; the
// proxy waits for it plus 10 s. A timeout the broker refuses is left for its 400.
func TestPopBackendTimeout(t *testing.T) {
	t.Parallel()
	s := &Server{opts: Options{BackendTimeout: 5 * time.Second, MaxPopTimeout: 2 * time.Minute}}
	pop, push := &route{pop: true}, &route{}
	for query, want := range map[string]struct {
		wait    time.Duration
		timeout string
	}{
		"?wait=true":                 {40 * time.Second, "30000"},
		"?timeout=45000":             {55 * time.Second, "45000"},
		"?timeout=45000.0":           {55 * time.Second, "45000"},
		"?timeout=%2045000":          {55 * time.Second, "45000"},
		"?timeout=45000.5":           {40 * time.Second, "45000.5"}, // not an integer: the broker's 400
		"?timeout=999999":            {130 * time.Second, "120000"},
		"?timeout=99999999999999":    {130 * time.Second, "120000"},
		"?timeout=0&consumerGroup=g": {10 * time.Second, "0"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/pop/queue/q"+query, nil)
		require.Equal(t, 5*time.Second, s.backendTimeout(r, push), query)
		require.Equal(t, want.wait, s.backendTimeout(r, pop), query)
		require.Equal(t, want.timeout, r.URL.Query().Get("timeout"), query)
	}
	short := &Server{opts: Options{MaxPopTimeout: 2 * time.Second}}
	r := httptest.NewRequest(http.MethodGet, "/api/v1/pop/queue/q?timeout=20000&consumerGroup=g", nil)
	require.Equal(t, 12*time.Second, short.backendTimeout(r, pop))
	require.Equal(t, "2000", r.URL.Query().Get("timeout"), "the broker is told the cap, not only the proxy")
	require.Equal(t, "g", r.URL.Query().Get("consumerGroup"))
}

// TestInvalidBodyNamesNoGoType: a body value of the wrong type is refused naming the
// JSON path and type, never the Go type the proxy decodes into.
func TestInvalidBodyNamesNoGoType(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"operations":{}}`:     "invalid JSON body: operations must not be object",
		`[]`:                    "invalid JSON body: the body must not be array",
		`{"acknowledgments":7}`: "invalid JSON body: acknowledgments must not be number",
	} {
		kind := bodyTransaction
		if body == `{"acknowledgments":7}` {
			kind = bodyAckBatch
		}
		_, err := parse(kind, []byte(body))
		require.EqualError(t, err, want, body)
	}
}
