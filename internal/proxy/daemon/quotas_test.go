package daemon_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestQuotas(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{env: []string{"QUEEN_PROXY_USAGE_REFRESH=300ms"}})
	p := b.proxy
	createTenant(t, p, tenantSpec{ID: "acme", Quotas: map[string]any{"maxMessages": 100, "maxQueues": 2}})
	k := createKey(t, p, "acme", "write")

	// A push within the quota may be refused for a moment: a snapshot that counts
	// pushes this replica also still counts itself (until the snapshot is a second
	// older than them) refuses early, and on a loaded machine the ten pushes span
	// several snapshots. It is admitted once the overlap ends.
	for i := range 10 {
		var r reply
		eventually(t, 10*time.Second, func() bool {
			r = call(t, http.MethodPost, p.URL+"/api/v1/push", k.Key, pushBody("orders", 10, nil))
			return r.status != http.StatusTooManyRequests
		}, "push %d of 10 messages is refused, within the quota of 100", i+1)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	}
	// Once a snapshot counts the 100 stored messages, one more is refused.
	eventually(t, 5*time.Second, func() bool {
		var v struct {
			Usage struct {
				Messages   int64      `json:"messages"`
				ComputedAt *time.Time `json:"computedAt"`
			} `json:"usage"`
		}
		p.Admin(t, http.MethodGet, "/admin/v1/tenants/acme", nil, &v)
		return v.Usage.Messages == 100 && v.Usage.ComputedAt != nil
	}, "no snapshot counts 100 messages")
	hits := brokerAPIRequests(t, b.broker)
	r := call(t, http.MethodPost, p.URL+"/api/v1/push", k.Key, pushBody("orders", 1, nil))
	require.Equal(t, http.StatusTooManyRequests, r.status)
	require.Equal(t, "quota_exceeded", r.code(t))
	require.Equal(t, "messages", limitOf(t, r))
	require.NotEmpty(t, r.header.Get("Retry-After"))
	require.Equal(t, hits, brokerAPIRequests(t, b.broker), "the refused push reached the broker")
	require.Equal(t, map[string]int{"acme:orders": 100}, brokerQueues(t, b.broker), "the broker stored the refused push")

	// The tenant over quota can still drain: all 100 pop and ack.
	acked := 0
	for acked < 100 {
		r := call(t, http.MethodGet, p.URL+"/api/v1/pop/queue/orders?batch=50&wait=false", k.Key, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var pop popAnswer
		r.json(t, &pop)
		var acks []map[string]string
		for _, m := range pop.Messages {
			acks = append(acks, map[string]string{"transactionId": m.TransactionID, "partitionId": m.PartitionID,
				"leaseId": pop.LeaseID, "status": "completed"})
		}
		r = call(t, http.MethodPost, p.URL+"/api/v1/ack/batch", k.Key, map[string]any{"acknowledgments": acks})
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		acked += len(pop.Messages)
	}
	require.Equal(t, 100, acked)

	// maxQueues 2: "orders" exists; a second name passes, a third is refused and the
	// existing ones are not blocked by the queue quota.
	require.Equal(t, http.StatusOK, p.Admin(t, http.MethodPatch, "/admin/v1/tenants/acme",
		map[string]any{"quotas": map[string]any{"maxMessages": 0}}, nil))
	eventually(t, 3*time.Second, func() bool {
		return call(t, http.MethodPost, p.URL+"/api/v1/push", k.Key, pushBody("orders", 1, nil)).status == http.StatusCreated
	}, "the raised quota does not apply")
	require.Equal(t, http.StatusCreated, call(t, http.MethodPost, p.URL+"/api/v1/push", k.Key, pushBody("billing", 1, nil)).status)
	r = call(t, http.MethodPost, p.URL+"/api/v1/push", k.Key, pushBody("third", 1, nil))
	require.Equal(t, http.StatusTooManyRequests, r.status)
	require.Equal(t, "queues", limitOf(t, r))
	require.NotContains(t, brokerQueues(t, b.broker), "acme:third", "the refused queue was created")
	for _, q := range []string{"orders", "billing"} {
		require.Equal(t, http.StatusCreated, call(t, http.MethodPost, p.URL+"/api/v1/push", k.Key, pushBody(q, 1, nil)).status)
	}

	// Moving dead letters back stores messages too, and a replay may name a new queue:
	// the quotas hold them as they hold pushes.
	deadLetter(t, p.URL, k.Key, "billing")
	var dlq struct {
		Messages []struct {
			DLQID         string `json:"dlqId"`
			PartitionID   string `json:"partitionId"`
			TransactionID string `json:"transactionId"`
		} `json:"messages"`
	}
	call(t, http.MethodGet, p.URL+"/api/v1/dlq?queue=billing", k.Key, nil).json(t, &dlq)
	require.Len(t, dlq.Messages, 1)
	entry := dlq.Messages[0]
	r = call(t, http.MethodPost, p.URL+"/api/v1/dlq/"+entry.DLQID+"/replay", k.Key, map[string]any{"queue": " third "})
	require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	require.Equal(t, "queues", limitOf(t, r))
	require.NotContains(t, brokerQueues(t, b.broker), "acme:third", "a refused replay created its queue")

	// Over the messages quota (1, with more stored), no move is admitted; with room,
	// the same replay goes through.
	require.Equal(t, http.StatusOK, p.Admin(t, http.MethodPatch, "/admin/v1/tenants/acme",
		map[string]any{"quotas": map[string]any{"maxMessages": 1}}, nil))
	eventually(t, 3*time.Second, func() bool { // a refused push stores nothing
		return call(t, http.MethodPost, p.URL+"/api/v1/push", k.Key, pushBody("orders", 1, nil)).status == http.StatusTooManyRequests
	}, "the lowered quota does not apply")
	hits = brokerAPIRequests(t, b.broker)
	for _, move := range []struct {
		path string
		body any
	}{
		{"/api/v1/dlq/" + entry.DLQID + "/replay", nil},
		{"/api/v1/messages/" + entry.PartitionID + "/" + entry.TransactionID + "/retry", map[string]any{}},
		{"/api/v1/dlq/requeue", map[string]any{"filter": map[string]any{"queue": "billing"}}},
	} {
		r = call(t, http.MethodPost, p.URL+move.path, k.Key, move.body)
		require.Equal(t, http.StatusTooManyRequests, r.status, "%s over the messages quota: %s", move.path, r.body)
		require.Equal(t, "messages", limitOf(t, r), move.path)
	}
	require.Equal(t, hits, brokerAPIRequests(t, b.broker), "a refused move reached the broker")
	require.Equal(t, http.StatusOK, p.Admin(t, http.MethodPatch, "/admin/v1/tenants/acme",
		map[string]any{"quotas": map[string]any{"maxMessages": 0}}, nil))
	eventually(t, 3*time.Second, func() bool {
		r = call(t, http.MethodPost, p.URL+"/api/v1/dlq/"+entry.DLQID+"/replay", k.Key, nil)
		return r.status == http.StatusOK
	}, "the replay in place is refused with room: %d %s", r.status, r.body)
}

// deadLetter pops one message of queue and acknowledges it as a dead letter.
func deadLetter(t *testing.T, base, key, queue string) {
	t.Helper()
	r := call(t, http.MethodGet, base+"/api/v1/pop/queue/"+queue+"?batch=1&wait=false", key, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var pop popAnswer
	r.json(t, &pop)
	require.Len(t, pop.Messages, 1)
	m := pop.Messages[0]
	r = call(t, http.MethodPost, base+"/api/v1/ack", key, map[string]any{"transactionId": m.TransactionID,
		"partitionId": m.PartitionID, "leaseId": pop.LeaseID, "status": "dlq", "error": "test"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
}
