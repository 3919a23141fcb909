package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
)

// client calls a broker's API the way the checks verify what the pages did.
type client struct {
	base  string
	token string // bearer token, "" for none
	hc    *http.Client
}

func newClient(base, token string) *client {
	return &client{base: base, token: token, hc: &http.Client{Timeout: 15 * time.Second}}
}

// call sends a request with an optional JSON body and returns the status and body.
func (c *client) call(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.hc.Do(req)
	require.NoError(t, err, "%s %s", method, path)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, b
}

// json calls and requires the status, decoding the answer into a value of T.
func callJSON[T any](t *testing.T, c *client, method, path string, body any, status int) T {
	t.Helper()
	got, b := c.call(t, method, path, body)
	require.Equal(t, status, got, "%s %s: %s", method, path, b)
	var v T
	if len(b) > 0 {
		require.NoError(t, json.Unmarshal(b, &v), "%s %s: %s", method, path, b)
	}
	return v
}

type obj = map[string]any

// seeded is what the seed made, for the checks.
type seeded struct {
	partitions map[string]string // partition name -> partition id of e2e.orders
	tx         map[string]string // transaction id -> partition id
}

// Seed: e2e.orders (namespace e2e) and e2e.tmp; 30 messages e2e-0…29 on p0 (even) and
// p1 (odd), payload {"n":i,"tag":"e2e"}; backdated three minutes, so that every lag
// is past a minute without waiting one; group billing pops and acks 10 of p0; queue
// mode pops 5 more of p0 and acks them dlq with "boom-e2e"; one pop of p1 is left
// unacked; a trace e2e-trace {"text":"hello-e2e"} on e2e-3. Then the broker writes its
// activity of the current minute, and that minute is moved a few minutes back, so the
// charts, which leave out the open minute, have a closed one to draw.
func seed(t *testing.T, srv *daemontest.Server, c *client) *seeded {
	t.Helper()
	for _, q := range []string{"e2e.orders", "e2e.tmp"} {
		callJSON[obj](t, c, "POST", "/api/v1/configure", obj{"queue": q, "namespace": "e2e",
			"options": obj{"leaseTime": 120, "retryLimit": 2}}, http.StatusOK)
	}
	items := make([]obj, 0, 30)
	for i := range 30 {
		items = append(items, obj{"queue": "e2e.orders", "partition": fmt.Sprintf("p%d", i%2),
			"transactionId": fmt.Sprintf("e2e-%d", i), "payload": obj{"n": i, "tag": "e2e"}})
	}
	pushed := callJSON[[]obj](t, c, "POST", "/api/v1/push", obj{"items": items}, http.StatusCreated)
	require.Len(t, pushed, 30)
	callJSON[[]obj](t, c, "POST", "/api/v1/push", obj{"items": []obj{{"queue": "e2e.tmp", "payload": obj{"tmp": true}}}}, http.StatusCreated)
	backdate(t, srv.DBURL, `UPDATE queen.messages SET created_at = created_at - interval '3 minutes'`,
		`UPDATE queen.partition_lookup SET last_message_created_at = last_message_created_at - interval '3 minutes'`)

	s := &seeded{partitions: map[string]string{}, tx: map[string]string{}}
	pop := func(path string) obj {
		m := callJSON[obj](t, c, "GET", path, nil, http.StatusOK)
		msgs, _ := m["messages"].([]any)
		require.NotEmpty(t, msgs, "GET %s", path)
		return m
	}
	ack := func(m obj, status, errText, group string) {
		var acks []obj
		for _, x := range m["messages"].([]any) {
			msg := x.(obj)
			a := obj{"transactionId": msg["transactionId"], "partitionId": msg["partitionId"], "leaseId": msg["leaseId"], "status": status}
			if errText != "" {
				a["error"] = errText
			}
			acks = append(acks, a)
		}
		body := obj{"acknowledgments": acks}
		if group != "" {
			body["consumerGroup"] = group
		}
		res := callJSON[[]obj](t, c, "POST", "/api/v1/ack/batch", body, http.StatusOK)
		for _, r := range res {
			require.Equal(t, true, r["success"], "ack %s: %v", status, r)
		}
	}
	billing := pop("/api/v1/pop/queue/e2e.orders/partition/p0?consumerGroup=billing&batch=10")
	require.Len(t, billing["messages"], 10)
	ack(billing, "completed", "", "billing")
	failed := pop("/api/v1/pop/queue/e2e.orders/partition/p0?batch=5")
	require.Len(t, failed["messages"], 5)
	ack(failed, "dlq", "boom-e2e", "")
	pop("/api/v1/pop/queue/e2e.orders/partition/p1?batch=1") // left unacked: processing

	list := callJSON[obj](t, c, "GET", "/api/v1/messages?queue=e2e.orders&limit=100", nil, http.StatusOK)
	for _, x := range list["messages"].([]any) {
		m := x.(obj)
		s.tx[m["transactionId"].(string)] = m["partitionId"].(string)
		s.partitions[m["partition"].(string)] = m["partitionId"].(string)
	}
	require.Len(t, s.tx, 30)
	callJSON[obj](t, c, "POST", "/api/v1/traces", obj{"transactionId": "e2e-3", "partitionId": s.tx["e2e-3"],
		"eventType": "info", "traceNames": []string{"e2e-trace"}, "data": obj{"text": "hello-e2e"}}, http.StatusCreated)

	callJSON[obj](t, c, "POST", "/api/v1/stats/refresh", obj{}, http.StatusOK)
	backdate(t, srv.DBURL,
		`UPDATE queen.queue_activity SET bucket_time = bucket_time - interval '3 minutes'`,
		`UPDATE queen.worker_activity SET bucket_time = bucket_time - interval '3 minutes'`,
		`UPDATE queen.queue_parked_activity SET bucket_time = bucket_time - interval '3 minutes'`,
		`UPDATE queen.system_activity SET bucket_time = bucket_time - interval '3 minutes'`)
	return s
}

// backdate runs the statements on the broker's database: the seed moves its own
// rows back in time instead of waiting for minutes to pass.
func backdate(t *testing.T, dbURL string, stmts ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	for _, s := range stmts {
		_, err := conn.Exec(ctx, s)
		require.NoError(t, err, "%s", s)
	}
}

// startSeeded starts a broker with extra environment and seeds it.
func startSeeded(t *testing.T, env ...string) (*daemontest.Server, *client, *seeded) {
	t.Helper()
	srv := daemontest.Start(t, daemontest.Options{Env: append([]string{"QUEEN_INSTANCE=e2e-broker"}, env...)})
	c := newClient(srv.URL, "")
	return srv, c, seed(t, srv, c)
}
