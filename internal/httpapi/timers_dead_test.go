package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/testwait"
)

// TestTimersDeadAreListed: a timer dead-lettered after its last attempt leaves the
// pending list and shows in ?dead=true, paged by id.
func TestTimersDeadAreListed(t *testing.T) {
	t.Parallel()
	b := setupTimers(t, true)
	// A full queue refuses the timer's message.
	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure", `{"queue":"dead","options":{"maxSize":1}}`))
	b.pushOne(t, "dead", "Default", "taken", "1")
	res := b.timers(t, scheduleOp("dead", "b", 3600000, "taken", "2"))
	// Skip the attempts and backoffs: make the timer due with its last attempt left.
	_, err := b.pool.Exec(context.Background(), `UPDATE queen.message_timers SET attempts = 4, due_at = now()`)
	require.NoError(t, err)
	b.broker.TimersChanged()
	var page map[string]any
	testwait.For(t, 10*time.Second, 10*time.Millisecond, func() error {
		page = b.get(t, "/api/v1/timers/dead?dead=true").object(t)
		if n := len(page["rows"].([]any)); n != 1 {
			return fmt.Errorf("%d dead rows", n)
		}
		return nil
	})
	row := page["rows"].([]any)[0].(map[string]any)
	require.Equal(t, []any{true, "dead", "b", "Default", "taken", res[0]["messageId"], "__timer__", float64(5)},
		[]any{row["dead"], row["queue"], row["timerKey"], row["partition"], row["txn"], row["messageId"],
			row["consumerGroup"], row["attempts"]})
	require.Contains(t, row["lastError"], "refused")
	require.NotContains(t, row, "payload")
	require.Empty(t, b.get(t, "/api/v1/timers/dead").object(t)["rows"], "a dead timer is not pending")

	_, err = b.pool.Exec(context.Background(), `INSERT INTO queen.message_timers_dead (queue_name, timer_key,
		partition_name, txn, payload, payload_zstd, encrypted, message_id, retry_count, created_at)
		VALUES ('dead', 'a', 'Default', 't', '1', false, false, gen_random_uuid(), 5, now())`)
	require.NoError(t, err)
	page = b.get(t, "/api/v1/timers/dead?dead=true&limit=1").object(t)
	require.Equal(t, true, page["truncated"])
	first := page["rows"].([]any)[0].(map[string]any)
	require.Equal(t, []any{"a", first["id"]}, []any{first["timerKey"], page["nextAfter"]})
	page = b.get(t, "/api/v1/timers/dead?dead=true&limit=1&after="+first["id"].(string)).object(t)
	require.Equal(t, false, page["truncated"])
	require.Equal(t, "b", page["rows"].([]any)[0].(map[string]any)["timerKey"])

	requireTimerError(t, b.get(t, "/api/v1/timers/dead?dead=yes"), http.StatusBadRequest, "timers_bad_request", "timers_bad_dead", "dead")
	requireTimerError(t, b.get(t, "/api/v1/timers/dead?dead=true&mode=count&prefix=a"), http.StatusBadRequest,
		"timers_bad_request", "timers_bad_dead", "dead")
	require.Empty(t, b.get(t, "/api/v1/timers/dead?dead=false").object(t)["rows"])
}
