package httpapi

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// TestPopLeaseSeconds: leaseSeconds > 0 replaces the queue's leaseTime on all three
// pop routes; 0 or less keeps it; a non-integer, a value outside 32 bits or above the
// ceiling is a 400 naming the field.
func TestPopLeaseSeconds(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	ctx := t.Context()
	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure",
		`{"queue":"ls-q","namespace":"ls-ns","options":{"leaseTime":120}}`))
	leaseOf := func(t *testing.T, partitionID string) int {
		t.Helper()
		var secs float64
		require.NoError(t, b.db.QueryRow(ctx, `SELECT extract(epoch FROM lease_expires_at - lease_acquired_at)
			FROM queen.partition_consumers WHERE partition_id = $1 AND consumer_group = '__QUEUE_MODE__'`,
			partitionID).Scan(&secs))
		return int(secs)
	}
	popLease := func(t *testing.T, path string) int {
		t.Helper()
		r := b.get(t, path)
		requireStatus(t, http.StatusOK, r)
		return leaseOf(t, r.object(t)["partitionId"].(string))
	}

	for i, tc := range []struct {
		query string
		want  int
	}{
		{"leaseSeconds=3600", 3600},
		{"leaseSeconds=0", 120},
		{"leaseSeconds=-5", 120},
		{"", 120},
		{"leaseSeconds=604800", 604800},
	} {
		part := "p" + strconv.Itoa(i)
		b.pushOne(t, "ls-q", part, "", `1`)
		require.Equal(t, tc.want, popLease(t, "/api/v1/pop/queue/ls-q/partition/"+part+"?"+tc.query), tc.query)
	}
	b.pushOne(t, "ls-q", "wild", "", `1`)
	require.Equal(t, 77, popLease(t, "/api/v1/pop/queue/ls-q?leaseSeconds=77"), "wildcard route")
	b.pushOne(t, "ls-q", "disc", "", `1`)
	require.Equal(t, 1234, popLease(t, "/api/v1/pop?namespace=ls-ns&leaseSeconds=1234"), "discovery route")

	for _, bad := range []struct{ value, msg string }{
		{"abc", "leaseSeconds must be an integer"},
		{"1.5", "leaseSeconds must be an integer"},
		{"2147483648", "leaseSeconds must be a 32-bit integer"},
		{"-2147483649", "leaseSeconds must be a 32-bit integer"},
		{"604801", "leaseSeconds must be at most 604800"},
	} {
		for _, path := range []string{"/api/v1/pop/queue/ls-q?", "/api/v1/pop/queue/ls-q/partition/p0?",
			"/api/v1/pop?namespace=ls-ns&"} {
			requireError(t, b.get(t, path+"leaseSeconds="+bad.value), http.StatusBadRequest, "invalid_argument",
				bad.msg, "leaseSeconds")
		}
	}
}

// TestPopAutopilot: an omitted batch is DEFAULT_BATCH_SIZE (1) without autopilot, 200
// with autopilot=true, and 100 (with a claim width and the autopilot object) when the
// controller sizes the pop: a consumer group on the queue route.
func TestPopAutopilot(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	pushN := func(t *testing.T, q string, partitions, each int) {
		t.Helper()
		items := []any{}
		for p := range partitions {
			for range each {
				items = append(items, map[string]any{"queue": q, "partition": "p" + strconv.Itoa(p), "payload": 1})
			}
		}
		requireStatus(t, http.StatusCreated, b.post(t, "/api/v1/push", mustJSON(t, map[string]any{"items": items})))
	}
	count := func(m map[string]any) int { return len(m["messages"].([]any)) }

	t.Run("WithoutAutopilotTheDefaultBatch", func(t *testing.T) {
		t.Parallel()
		pushN(t, "ap-plain", 1, 3)
		m := b.popOne(t, "ap-plain", "consumerGroup=g")
		require.Equal(t, 1, count(m), "0.15 clients: an omitted batch is DEFAULT_BATCH_SIZE")
		require.NotContains(t, m, "autopilot")
	})

	t.Run("NotControlledMeans200", func(t *testing.T) {
		t.Parallel()
		pushN(t, "ap-qmode", 1, 250)
		m := b.popOne(t, "ap-qmode", "autopilot=true")
		require.Equal(t, 200, count(m), "no consumer group: the 1.x meaning of an omitted batch")
		require.NotContains(t, m, "autopilot")

		pushN(t, "ap-part", 1, 250)
		r := b.get(t, "/api/v1/pop/queue/ap-part/partition/p0?autopilot=true&consumerGroup=g")
		requireStatus(t, http.StatusOK, r)
		m = r.object(t)
		require.Equal(t, 200, count(m), "partition route: not controlled")
		require.NotContains(t, m, "autopilot")
	})

	t.Run("ControlledBatchAndWidth", func(t *testing.T) {
		t.Parallel()
		pushN(t, "ap-ctl", 8, 3)
		m := b.popOne(t, "ap-ctl", "autopilot=true&consumerGroup=g")
		require.Equal(t, map[string]any{"partitions": 1.0, "batch": 100.0, "waitMs": 100.0}, m["autopilot"])
		require.Equal(t, 3, count(m))
		require.Equal(t, 1.0, m["partitionsClaimed"])

		// The whole width was claimed and the batch had room: the width doubles.
		m = b.popOne(t, "ap-ctl", "autopilot=true&consumerGroup=g")
		require.Equal(t, map[string]any{"partitions": 2.0, "batch": 100.0, "waitMs": 100.0}, m["autopilot"])
		require.Equal(t, 6, count(m))
		require.Equal(t, 2.0, m["partitionsClaimed"])

		// An explicit knob is used as sent; the controller chose the other.
		m = b.popOne(t, "ap-ctl", "autopilot=true&consumerGroup=g&batch=2")
		require.Equal(t, map[string]any{"partitions": 4.0, "batch": 2.0, "waitMs": 0.0}, m["autopilot"])
		require.Equal(t, 2, count(m))

		// Both knobs sent: the controller chose nothing.
		m = b.popOne(t, "ap-ctl", "autopilot=true&consumerGroup=g&batch=2&partitions=1")
		require.NotContains(t, m, "autopilot")
		require.Equal(t, 2, count(m))
	})
}

// TestAppendPopAutopilot: the fast encoder renders the autopilot object exactly as
// encoding/json renders api.PopResponse, and omits it when unset.
func TestAppendPopAutopilot(t *testing.T) {
	t.Parallel()
	res := queue.PopResult{Queue: "q", ConsumerGroup: "g", LeaseID: "l", PartitionsClaimed: 1,
		Messages:  []queue.Message{{ID: "i", TransactionID: "t", Payload: []byte(`1`), PartitionID: "pi", Partition: "p"}},
		Autopilot: &queue.PopAutopilot{Partitions: 3, Batch: 100, WaitMs: 100}}
	requirePopMatches(t, res)
	out, err := appendPop(nil, res)
	require.NoError(t, err)
	require.Contains(t, string(out), `],"autopilot":{"partitions":3,"batch":100,"waitMs":100}}`)
	res.Autopilot = nil
	requirePopMatches(t, res)
	out, err = appendPop(nil, res)
	require.NoError(t, err)
	require.NotContains(t, string(out), "autopilot")
}
