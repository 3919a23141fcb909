package browsertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/cli"
	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/testwait"
)

// lagQueue is the queue TestConsumerLagIsTheSameEverywhere consumes.
const lagQueue = "lag.orders"

// lagNumbers are the numbers every view must agree on for one group. LagSeconds is
// compared apart: each view reads the clock when it answers.
type lagNumbers struct {
	Lag, Pending, InFlight int64
	PartitionsWithLag      int
}

// TestConsumerLagIsTheSameEverywhere lets named groups and queue mode consume parts of
// a queue, then reads how far each is behind from every place an operator looks: the
// dashboard's queue page, queenctl status, queue get and cg list, GET /api/v1/status,
// the queue's status and resource views, the consumer-group list and the Prometheus
// gauges. All must say the same; a group without a cursor on a partition owes that
// whole partition.
func TestConsumerLagIsTheSameEverywhere(t *testing.T) {
	t.Parallel()
	browser(t) // skips without Chromium, before the broker starts
	srv := daemontest.Start(t, daemontest.Options{})
	c := newClient(srv.URL, "")

	// p0 and p1 hold 15 messages each. billing takes 10 of p0 and acks them, then
	// leases 3 more; queue mode takes 2 of p1 and acks them; audit subscribes to new
	// messages only, after the pushes.
	for _, p := range []string{"p0", "p1"} {
		items := make([]obj, 15)
		for i := range items {
			items[i] = obj{"queue": lagQueue, "partition": p, "payload": obj{"n": i}}
		}
		callJSON[[]obj](t, c, "POST", "/api/v1/push", obj{"items": items}, http.StatusCreated)
	}
	consume := func(path, group string, ack bool) {
		m := callJSON[obj](t, c, "GET", path, nil, http.StatusOK)
		msgs, _ := m["messages"].([]any)
		require.NotEmpty(t, msgs, "GET %s", path)
		if !ack {
			return
		}
		var acks []obj
		for _, x := range msgs {
			msg := x.(obj)
			acks = append(acks, obj{"transactionId": msg["transactionId"], "partitionId": msg["partitionId"],
				"leaseId": msg["leaseId"], "status": "completed"})
		}
		body := obj{"acknowledgments": acks}
		if group != "" {
			body["consumerGroup"] = group
		}
		for _, r := range callJSON[[]obj](t, c, "POST", "/api/v1/ack/batch", body, http.StatusOK) {
			require.Equal(t, true, r["success"], "ack: %v", r)
		}
	}
	consume("/api/v1/pop/queue/"+lagQueue+"/partition/p0?consumerGroup=billing&batch=10", "billing", true)
	consume("/api/v1/pop/queue/"+lagQueue+"/partition/p0?consumerGroup=billing&batch=3", "billing", false)
	consume("/api/v1/pop/queue/"+lagQueue+"/partition/p1?batch=2", "", true)
	status, body := c.call(t, "GET", "/api/v1/pop/queue/"+lagQueue+"?consumerGroup=audit&subscriptionMode=new", nil)
	require.Equal(t, http.StatusNoContent, status, "audit subscribes after the pushes: nothing to pop (%s)", body)

	want := map[string]lagNumbers{
		"billing":        {Lag: 5 + 15, Pending: 2 + 15, InFlight: 3, PartitionsWithLag: 2},
		"__QUEUE_MODE__": {Lag: 15 + 13, Pending: 15 + 13, PartitionsWithLag: 2},
		"audit":          {},
	}
	// maxAge bounds every oldest-message age: the messages are younger than the test.
	started := time.Now()
	maxAge := func() float64 { return time.Since(started).Seconds() + 60 }
	fromLags := func(what string, l []api.ConsumerGroupLag) map[string]lagNumbers {
		out := map[string]lagNumbers{}
		for _, g := range l {
			require.Equal(t, lagQueue, g.Queue, what)
			require.GreaterOrEqual(t, g.LagSeconds, 0.0, what)
			require.Less(t, g.LagSeconds, maxAge(), what)
			require.Equal(t, g.Lag == 0, g.LagSeconds == 0, "%s: %s has an age exactly when it lags", what, g.Group)
			out[g.Group] = lagNumbers{Lag: g.Lag, Pending: g.Pending, InFlight: g.InFlight, PartitionsWithLag: g.PartitionsWithLag}
		}
		return out
	}
	fromSummaries := func(what string, l []api.ConsumerGroupSummary) map[string]lagNumbers {
		out := map[string]lagNumbers{}
		for _, g := range l {
			if g.QueueName != lagQueue {
				continue
			}
			require.Less(t, float64(g.MaxTimeLag), maxAge(), what)
			out[g.Name] = lagNumbers{Lag: g.TotalLag, Pending: g.TotalLag - g.InFlight, InFlight: g.InFlight,
				PartitionsWithLag: g.PartitionsWithLag}
		}
		return out
	}

	t.Run("API", func(t *testing.T) {
		st := callJSON[api.StatusResponse](t, c, "GET", "/api/v1/status?queue="+lagQueue, nil, http.StatusOK)
		require.Equal(t, want, fromLags("GET /api/v1/status", st.ConsumerGroups))
		sq := callJSON[api.StatusQueueDetail](t, c, "GET", "/api/v1/status/queues/"+lagQueue, nil, http.StatusOK)
		require.Equal(t, want, fromLags("GET /api/v1/status/queues/{queue}", sq.ConsumerGroups))
		rq := callJSON[api.QueueDetail](t, c, "GET", "/api/v1/resources/queues/"+lagQueue, nil, http.StatusOK)
		require.Equal(t, want, fromLags("GET /api/v1/resources/queues/{queue}", rq.ConsumerGroups))
		cg := callJSON[[]api.ConsumerGroupSummary](t, c, "GET", "/api/v1/consumer-groups", nil, http.StatusOK)
		require.Equal(t, want, fromSummaries("GET /api/v1/consumer-groups", cg))
	})

	t.Run("Queenctl", func(t *testing.T) {
		run := func(v any, args ...string) {
			var stdout, stderr bytes.Buffer
			code := cli.Main(t.Context(), append(args, "-o", "json"),
				[]string{"QUEEN_SERVER=" + srv.URL, "HOME=" + t.TempDir()}, strings.NewReader(""), &stdout, &stderr)
			require.Equal(t, 0, code, "queenctl %v: %s", args, stderr.String())
			require.NoError(t, json.Unmarshal(stdout.Bytes(), v), "queenctl %v", args)
		}
		var st api.StatusResponse
		run(&st, "status", "--queue", lagQueue)
		require.Equal(t, want, fromLags("queenctl status", st.ConsumerGroups))
		var q api.QueueDetail
		run(&q, "queue", "get", lagQueue)
		require.Equal(t, want, fromLags("queenctl queue get", q.ConsumerGroups))
		var cg []api.ConsumerGroupSummary
		run(&cg, "cg", "list", "--queue", lagQueue)
		require.Equal(t, want, fromSummaries("queenctl cg list", cg))
	})

	t.Run("Prometheus", func(t *testing.T) {
		// The gauges are refreshed in the background: wait for a reading that
		// includes the consumption above.
		// The gauges do not count lagging partitions.
		counts := map[string]lagNumbers{}
		for g, n := range want {
			n.PartitionsWithLag = 0
			counts[g] = n
		}
		testwait.For(t, 45*time.Second, 200*time.Millisecond, func() error {
			if got := scrapeGroupLag(t, c, maxAge()); fmt.Sprint(got) != fmt.Sprint(counts) {
				return fmt.Errorf("the consumer group gauges say %v, want %v", got, counts)
			}
			return nil
		})
	})

	t.Run("Dashboard", func(t *testing.T) {
		tb := newTab(t, srv.URL)
		tb.open("/queues/" + lagQueue)
		tb.waitJS("the consumer groups of the queue", `qt.rows('table-queue-groups') === 3`)
		got := map[string]lagNumbers{}
		for group := range want {
			row := `[data-testid="table-queue-groups"] tr[data-key="` + group + `"] `
			var n lagNumbers
			for _, f := range []struct {
				id string
				p  *int64
			}{{"group-lag", &n.Lag}, {"group-pending", &n.Pending}, {"group-in-flight", &n.InFlight}} {
				_, err := fmt.Sscan(strings.ReplaceAll(tb.text(row+`[data-testid="`+f.id+`"]`), ",", ""), f.p)
				require.NoError(t, err, "%s of %s", f.id, group)
			}
			_, err := fmt.Sscan(tb.text(row+`[data-testid="group-lagging-partitions"]`), &n.PartitionsWithLag)
			require.NoError(t, err, "lagging partitions of %s", group)
			got[group] = n
		}
		require.Equal(t, want, got)
		require.Contains(t, tb.text(`[data-testid="stat-pending"]`), "queue mode",
			"named groups consume the queue: the queue-mode counters say whose they are")
	})
}

// scrapeGroupLag reads the queen_consumer_group_* gauges of lagQueue from
// /metrics/prometheus, by group.
func scrapeGroupLag(t *testing.T, c *client, maxAge float64) map[string]lagNumbers {
	t.Helper()
	status, body := c.call(t, "GET", "/metrics/prometheus", nil)
	require.Equal(t, http.StatusOK, status)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	require.NoError(t, err)
	out := map[string]lagNumbers{}
	for _, name := range []string{"queen_consumer_group_lag_messages", "queen_consumer_group_in_flight",
		"queen_consumer_group_lag_seconds"} {
		mf := mfs[name]
		if mf == nil {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["queue"] != lagQueue {
				continue
			}
			n := out[labels["group"]]
			v := m.GetGauge().GetValue()
			switch name {
			case "queen_consumer_group_lag_messages":
				n.Lag = int64(v)
			case "queen_consumer_group_in_flight":
				n.InFlight = int64(v)
			default:
				require.Less(t, v, maxAge, "%s{group=%q}", name, labels["group"])
			}
			out[labels["group"]] = n
		}
	}
	for g, n := range out {
		n.Pending = n.Lag - n.InFlight
		out[g] = n
	}
	return out
}
