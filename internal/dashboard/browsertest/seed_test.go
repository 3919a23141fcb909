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

// analyticsBucket is the brokers' QUEEN_ANALYTICS_BUCKET: buckets of two seconds close
// within seconds, so the charts (which leave out the open bucket) show the seeded
// activity and a consumer-lag history without waiting for a minute to end.
const analyticsBucket = 2 * time.Second

// Seed: e2e.orders (namespace e2e) and e2e.tmp; 30 messages e2e-0…29 on p0 (even) and
// p1 (odd), payload {"n":i,"tag":"e2e"}, created three minutes ago (the seed moves
// created_at back, so every time lag is past a minute without waiting one); group
// billing pops and acks 10 of p0; queue mode pops 5 more of p0 and acks them dlq with
// "boom-e2e"; one pop of p1 is left unacked; group prices pops e2e.tmp with conflation
// (last-value delivery) and acks; a trace e2e-trace {"text":"hello-e2e"} on e2e-3.
// Then POST /api/v1/stats/refresh, and the seed polls the API until the buckets
// holding that activity have closed and the consumer_lag_sample job has sampled
// billing's lag in two closed buckets.
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
	prices := pop("/api/v1/pop/queue/e2e.tmp?consumerGroup=prices&conflation=true")
	require.Equal(t, true, prices["conflation"], "prices pops e2e.tmp with conflation")
	ack(prices, "completed", "", "prices")

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
	waitClosed(t, c)
	return s
}

// waitClosed polls until the closed buckets of e2e.orders's queue-ops hold the 30
// pushes and 16 deliveries of the seed, and the consumer-lag history of billing has
// two closed buckets: what the charts draw. The broker must run with
// QUEEN_ANALYTICS_BUCKET=analyticsBucket.
func waitClosed(t *testing.T, c *client) {
	t.Helper()
	// closed sums key over the rows whose bucket ended by the answer's timeRange.to
	// (the broker's now) and counts those rows.
	closed := func(path, key string) (sum float64, rows int) {
		t.Helper()
		v := callJSON[obj](t, c, "GET", path, nil, http.StatusOK)
		to, err := time.Parse(time.RFC3339Nano, v["timeRange"].(obj)["to"].(string))
		require.NoError(t, err, "%s: timeRange.to", path)
		width := time.Duration(v["bucketSeconds"].(float64)) * time.Second
		require.Equal(t, analyticsBucket, width, "%s: bucketSeconds", path)
		for _, x := range v["series"].([]any) {
			p := x.(obj)
			start, err := time.Parse(time.RFC3339Nano, p["bucket"].(string))
			require.NoError(t, err)
			if !start.Add(width).After(to) {
				n, _ := p[key].(float64)
				sum += n
				rows++
			}
		}
		return sum, rows
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pushes, _ := closed("/api/v1/analytics/queue-ops?queue=e2e.orders", "pushMessages")
		pops, _ := closed("/api/v1/analytics/queue-ops?queue=e2e.orders", "popMessages")
		_, samples := closed("/api/v1/analytics/consumer-lag?group=billing&queue=e2e.orders", "totalLag")
		if pushes == 30 && pops == 16 && samples >= 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s, the closed %s buckets hold %v pushes (want 30), %v deliveries (want 16) "+
				"and %d lag samples of billing (want 2)", analyticsBucket, pushes, pops, samples)
		}
		<-tick.C
	}
}

// backdate runs the statements on the broker's database: the seed dates its messages
// back instead of waiting for their time lag to pass a minute.
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
	srv := daemontest.Start(t, daemontest.Options{Env: append([]string{"QUEEN_INSTANCE=e2e-broker",
		"QUEEN_ANALYTICS_BUCKET=" + analyticsBucket.String()}, env...)})
	c := newClient(srv.URL, "")
	return srv, c, seed(t, srv, c)
}
