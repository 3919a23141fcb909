package broker_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// TestSeeksAndDeletesForgetWatermarks: an upstream broker's pop skips a group's
// partitions that its consumer_watermarks row says were caught up, so every seek and
// group delete of queen removes the group's rows (after a rollback to upstream, the
// messages an operator re-exposed stay visible), and leaves other groups' rows alone.
func TestSeeksAndDeletesForgetWatermarks(t *testing.T) {
	t.Parallel()
	sb := setupSQL(t)
	ctx := t.Context()
	_, err := sb.b.Push(ctx, []queue.PushItem{{Queue: "wm", Partition: "p", TransactionID: "a", Payload: json.RawMessage(`1`)}})
	require.NoError(t, err)
	mark := func() {
		t.Helper()
		_, err := sb.db.Exec(ctx, `INSERT INTO queen.consumer_watermarks (queue_name, consumer_group, last_empty_scan_at)
			VALUES ('wm', 'g', now()), ('wm', 'other', now())
			ON CONFLICT (queue_name, consumer_group) DO UPDATE SET last_empty_scan_at = now()`)
		require.NoError(t, err)
	}
	groups := func() []string {
		t.Helper()
		var gs []string
		require.NoError(t, sb.db.QueryRow(ctx, `SELECT coalesce(array_agg(consumer_group ORDER BY consumer_group), '{}')
			FROM queen.consumer_watermarks WHERE queue_name = 'wm'`).Scan(&gs))
		return gs
	}
	for _, tc := range []struct {
		name string
		do   func() error
	}{
		{"SeekToEnd", func() error {
			_, err := sb.b.ConsumerGroupSeek(ctx, "g", "wm", queue.ConsumerGroupSeek{ToEnd: true})
			return err
		}},
		{"SeekToTime", func() error {
			_, err := sb.b.ConsumerGroupSeek(ctx, "g", "wm", queue.ConsumerGroupSeek{Timestamp: time.Now().Add(-time.Hour)})
			return err
		}},
		{"SeekPartition", func() error {
			_, err := sb.b.ConsumerGroupPartitionSeek(ctx, "g", "wm", "p")
			return err
		}},
		{"DeleteOnQueue", func() error {
			_, err := sb.b.ConsumerGroupDelete(ctx, queue.Scope{}, "g", "wm", true)
			return err
		}},
		{"Delete", func() error {
			_, err := sb.b.ConsumerGroupDelete(ctx, queue.Scope{}, "g", "", true)
			return err
		}},
	} {
		mark()
		require.Equal(t, []string{"g", "other"}, groups(), tc.name)
		require.NoError(t, tc.do(), tc.name)
		require.Equal(t, []string{"other"}, groups(), "%s leaves no watermark of the group", tc.name)
	}
}
