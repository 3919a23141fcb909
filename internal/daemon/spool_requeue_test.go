package daemon_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/spool"
	"github.com/queenmq/queen/internal/testlog"
)

// TestStartRequeuesRecordsQuarantinedForTheServersFault is the upgrade from a release
// that quarantined spooled pushes PostgreSQL refused for a reason of its own (a standby
// answering "read-only transaction" during a failover): those pushes were answered
// buffered, so the first start of this release replays them. A record quarantined for
// its own fault (a full queue) stays in the dead-letter file.
func TestStartRequeuesRecordsQuarantinedForTheServersFault(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sp, err := spool.Open(spool.Options{Dir: dir})
	require.NoError(t, err)
	item := func(tx string) queue.PushItem {
		return queue.PushItem{Queue: "upgraded", Partition: "p", TransactionID: tx, Payload: json.RawMessage(`{"tx":"` + tx + `"}`)}
	}
	require.NoError(t, sp.Append(t.Context(), []queue.PushItem{item("tx-1"), item("tx-2"), item("tx-3")}))
	b, err := sp.Peek(10)
	require.NoError(t, err)
	for i, reason := range []string{
		"database unavailable: ERROR: cannot execute INSERT in a read-only transaction (SQLSTATE 25006)",
		`queue "upgraded" is full: maxSize reached`,
		"ERROR: cannot execute SELECT in a read-only transaction (SQLSTATE 25006)",
	} {
		require.NoError(t, sp.Quarantine(b.Records[i], reason))
	}
	sp.Commit(b, 3)
	require.NoError(t, sp.Close())

	var logs testlog.Buffer
	d := daemontest.Start(t, daemontest.Options{SpoolDir: dir, Logs: &logs, Env: []string{"LOG_LEVEL=info"}})
	var got []string
	require.Eventually(t, func() bool {
		resp, err := http.Get(d.URL + "/api/v1/pop/queue/upgraded?autoAck=true&batch=10")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return false
		}
		var pop struct {
			Messages []struct {
				TransactionID string `json:"transactionId"`
			} `json:"messages"`
		}
		require.NoError(t, json.Unmarshal(body, &pop), "%s", body)
		for _, m := range pop.Messages {
			got = append(got, m.TransactionID)
		}
		return len(got) >= 2
	}, 30*time.Second, 50*time.Millisecond, "requeued records were not replayed:\n%s", logs.Tail(4000))
	require.Equal(t, []string{"tx-1", "tx-3"}, got, "the records quarantined for the server's fault, in order")
	require.True(t, strings.Contains(logs.String(), "spool: quarantined records requeued for replay"), logs.Tail(4000))

	require.NoError(t, d.Stop())
	sp, err = spool.Open(spool.Options{Dir: dir})
	require.NoError(t, err)
	defer sp.Close()
	require.EqualValues(t, 1, sp.Stats().QuarantinedRecords, "the full-queue record stays quarantined")
}
