package bench

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRoundRobin(t *testing.T) {
	t.Parallel()

	t.Run("SuccessiveRequestsCycleOverEveryPartition", func(t *testing.T) {
		t.Parallel()
		rr := newRoundRobin(3)
		var got []int
		for range 7 {
			got = append(got, rr.take())
		}
		require.Equal(t, []int{0, 1, 2, 0, 1, 2, 0}, got)
	})
	t.Run("ConcurrentWorkersShareOneCycle", func(t *testing.T) {
		t.Parallel()
		const partitions, workers, each = 100, 4, 250
		rr := newRoundRobin(partitions)
		counts := make([][partitions]int, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for range each {
					counts[w][rr.take()]++
				}
			})
		}
		wg.Wait()
		for p := range partitions {
			total := 0
			for w := range workers {
				total += counts[w][p]
			}
			require.Equal(t, workers*each/partitions, total, "partition %d", p)
		}
	})
	t.Run("ZeroPartitionsIsOne", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, 0, newRoundRobin(0).take())
	})
}

func TestAppendPushBody(t *testing.T) {
	t.Parallel()

	body := appendPushBody([]byte("junk"), `q"1`, 3, func(i int) int { return 10 + i }, constPayload(`{"a":1}`))
	var got struct {
		Items []struct {
			Queue     string          `json:"queue"`
			Partition string          `json:"partition"`
			Payload   json.RawMessage `json:"payload"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal(body[len("junk"):], &got))
	require.Len(t, got.Items, 3)
	for i, it := range got.Items {
		require.Equal(t, `q"1`, it.Queue)
		require.Equal(t, "p"+strconv.Itoa(10+i), it.Partition)
		require.JSONEq(t, `{"a":1}`, string(it.Payload))
	}
}

func TestAppendAckBody(t *testing.T) {
	t.Parallel()

	var pop popAnswer
	require.NoError(t, json.Unmarshal([]byte(`{"leaseId":"L","messages":[
		{"transactionId":"t1","partitionId":"P","data":{"sent":5}},
		{"transactionId":"t2","partitionId":"P","data":{"kind":"x"}}]}`), &pop))
	require.Equal(t, int64(5), pop.Messages[0].Data.Sent)

	t.Run("QueueMode", func(t *testing.T) {
		t.Parallel()
		require.JSONEq(t, `{"acknowledgments":[
			{"transactionId":"t1","partitionId":"P","leaseId":"L","status":"completed"},
			{"transactionId":"t2","partitionId":"P","leaseId":"L","status":"completed"}]}`,
			string(appendAckBody(nil, &pop, "")))
	})
	t.Run("Group", func(t *testing.T) {
		t.Parallel()
		var ack struct {
			ConsumerGroup string `json:"consumerGroup"`
		}
		require.NoError(t, json.Unmarshal(appendAckBody(nil, &pop, "cg1"), &ack))
		require.Equal(t, "cg1", ack.ConsumerGroup)
	})
}

func TestPopPath(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name string
		spec popSpec
		w    int
		want url.Values
	}{
		{name: "QueueModeWithoutWait", spec: popSpec{queue: "q", batch: 10},
			want: url.Values{"batch": {"10"}, "wait": {"false"}}},
		{name: "GroupOfTheWorkerWithWait", spec: popSpec{queue: "q", batch: 10, wait: true, groups: []string{"a", "b"}}, w: 3,
			want: url.Values{"batch": {"10"}, "wait": {"true"}, "timeout": {"200"}, "consumerGroup": {"b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u, err := url.Parse(tc.spec.popPath(tc.w))
			require.NoError(t, err)
			require.Equal(t, "/api/v1/pop/queue/q", u.Path)
			require.Equal(t, tc.want, u.Query())
		})
	}
}

func TestScaleRows(t *testing.T) {
	t.Parallel()

	rep := &Report{Results: []Result{
		{Name: "push_b10_p100", Value: 1000},
		{Name: "push_b10_p10000", Value: 800},
		{Name: "push_b10_p100000", Value: 333},
		{Name: "popack_b10_p100", Value: 0}, // no base: no popack rows
		{Name: "popack_b10_p10000", Value: 50},
	}}
	rows := scaleRows(rep)
	require.Len(t, rows, 2)
	require.Equal(t, "scale_push_b10_p10000", rows[0].Name)
	require.InDelta(t, 0.8, rows[0].Value, 1e-9)
	require.Equal(t, "x", rows[0].Unit)
	require.Nil(t, rows[0].Ceiling)
	require.Equal(t, "scale_push_b10_p100000", rows[1].Name)
	require.InDelta(t, 0.333, rows[1].Value, 1e-9)
}

func TestOptionalRoutes(t *testing.T) {
	t.Parallel()

	// setup serves status on every request and records the requests.
	setup := func(t *testing.T, status int, body string) (*httpLoad, *[]string) {
		t.Helper()
		var (
			mu   sync.Mutex
			seen []string
		)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Method+" "+r.URL.EscapedPath()+" "+r.Header.Get("Authorization"))
			mu.Unlock()
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		h, err := newHTTPLoad(srv.URL, "tok")
		require.NoError(t, err)
		t.Cleanup(h.close)
		return h, &seen
	}

	t.Run("DeleteQueueSendsTheTokenAndSucceeds", func(t *testing.T) {
		t.Parallel()
		h, seen := setup(t, http.StatusOK, `{"deleted":true}`)
		supported, err := h.deleteQueue(t.Context(), "bench-a/b")
		require.NoError(t, err)
		require.True(t, supported)
		require.Equal(t, []string{"DELETE /api/v1/resources/queues/bench-a%2Fb Bearer tok"}, *seen)
	})
	for _, status := range []int{http.StatusNotFound, http.StatusMethodNotAllowed} {
		t.Run("DeleteQueueWithoutTheRouteIsUnsupported"+strconv.Itoa(status), func(t *testing.T) {
			t.Parallel()
			h, _ := setup(t, status, "")
			supported, err := h.deleteQueue(t.Context(), "q")
			require.NoError(t, err)
			require.False(t, supported)
		})
	}
	t.Run("DeleteQueueServerErrorIsAnError", func(t *testing.T) {
		t.Parallel()
		h, _ := setup(t, http.StatusInternalServerError, "boom")
		supported, err := h.deleteQueue(t.Context(), "q")
		require.ErrorContains(t, err, "HTTP 500: boom")
		require.True(t, supported)
	})
	t.Run("SeekReturnsTheCursorsMoved", func(t *testing.T) {
		t.Parallel()
		h, seen := setup(t, http.StatusOK, `{"success":true,"partitionsUpdated":7}`)
		n, supported, err := h.seekToEnd(t.Context(), "q", "__QUEUE_MODE__")
		require.NoError(t, err)
		require.True(t, supported)
		require.Equal(t, 7, n)
		require.Equal(t, []string{"POST /api/v1/consumer-groups/__QUEUE_MODE__/queues/q/seek Bearer tok"}, *seen)
	})
	t.Run("SeekRefusedIsUnsupported", func(t *testing.T) {
		t.Parallel()
		h, _ := setup(t, http.StatusBadRequest, `{"error":"no"}`)
		_, supported, err := h.seekToEnd(t.Context(), "q", "g")
		require.NoError(t, err)
		require.False(t, supported)
	})
	t.Run("UnreachableBrokerIsAnError", func(t *testing.T) {
		t.Parallel()
		h, _ := setup(t, http.StatusServiceUnavailable, "starting")
		require.ErrorContains(t, h.checkReachable(t.Context()), "GET /health: HTTP 503")
	})
}

func TestFillPartitionGivesEveryPartitionItsShare(t *testing.T) {
	for _, c := range []struct{ total, partitions int }{{100, 10}, {105, 10}, {7, 10}, {60_000, 100}, {1000, 1}} {
		counts := make([]int, c.partitions)
		last := 0
		for i := range c.total {
			p := fillPartition(i, c.total, c.partitions)
			require.True(t, p >= 0 && p < c.partitions, "%+v: message %d to partition %d", c, i, p)
			if c.total >= c.partitions {
				require.GreaterOrEqual(t, p, last, "%+v: runs, in order", c)
			}
			last = p
			counts[p]++
		}
		lo, hi := c.total/c.partitions, (c.total+c.partitions-1)/c.partitions
		for p, n := range counts {
			require.True(t, n >= lo && n <= hi, "%+v: partition %d holds %d", c, p, n)
		}
	}
}
