package daemon_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

// TestDaemonRejectsBadInput: every malformed request gets a 4xx whose body says what is
// wrong (and which field, when there is one), and changes nothing that is stored.
func TestDaemonRejectsBadInput(t *testing.T) {
	t.Parallel()

	type validationBundle struct {
		*testBundle
		pendingID string // the one message of queue "kept", which bad pops must not touch
	}
	setup := func(t *testing.T, extraEnv ...string) *validationBundle {
		t.Helper()
		tb := startBroker(t, extraEnv...)
		res := push(t, tb, "kept", "", `"untouched"`)
		return &validationBundle{testBundle: tb, pendingID: res[0].MessageID}
	}
	// requireUnchanged checks that "kept" still holds its one pending message and that
	// queue "bad" received nothing.
	requireUnchanged := func(t *testing.T, tb *validationBundle) {
		t.Helper()
		require.Zero(t, queueTotals(t, tb.testBundle, "bad").Total, "nothing stored in bad")
		kept := queueTotals(t, tb.testBundle, "kept")
		require.Equal(t, 1, kept.Total)
		require.Equal(t, 1, kept.Pending)
	}

	t.Run("MalformedJSONPush", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)

		status, body := tb.raw(t, http.MethodPost, "/api/v1/push", `{"items":[{"queue":"bad","payload":`)
		require.Equal(t, http.StatusBadRequest, status, "%s", body)
		eb := errorBody(t, body)
		require.Contains(t, eb.Error, "Invalid JSON")
		require.Equal(t, api.ErrorCodeInvalidArgument, eb.Code)
		requireUnchanged(t, tb)
	})

	t.Run("PushItemWithoutQueue", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)

		// The valid first item must not be stored either: the whole request is rejected.
		status, body := tb.raw(t, http.MethodPost, "/api/v1/push",
			`{"items":[{"queue":"bad","payload":1},{"payload":2}]}`)
		require.Equal(t, http.StatusBadRequest, status, "%s", body)
		eb := errorBody(t, body)
		require.Contains(t, eb.Error, "Queue must be a string")
		require.Equal(t, api.ErrorCodeInvalidArgument, eb.Code)
		require.Equal(t, "items[1].queue", eb.Field, "the field names the offending item")
		requireUnchanged(t, tb)
	})

	for _, batch := range []string{"0", "-1"} {
		t.Run("PopBatch"+strings.ReplaceAll(batch, "-", "Minus"), func(t *testing.T) {
			t.Parallel()
			tb := setup(t)

			for _, path := range []string{
				"/api/v1/pop/queue/kept?autoAck=true&batch=" + batch,
				"/api/v1/pop/queue/kept/partition/Default?autoAck=true&batch=" + batch,
			} {
				status, body := tb.raw(t, http.MethodGet, path, "")
				require.Equal(t, http.StatusBadRequest, status, "GET %s: %s", path, body)
				eb := errorBody(t, body)
				require.Equal(t, "batch", eb.Field, "GET %s", path)
				require.Contains(t, eb.Error, "batch")
				require.Equal(t, api.ErrorCodeInvalidArgument, eb.Code)
			}
			requireUnchanged(t, tb)

			// The message is still there for a valid pop.
			got, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: "kept", AutoAck: true})
			require.NoError(t, err)
			require.Len(t, got.Messages, 1)
			require.Equal(t, tb.pendingID, got.Messages[0].ID)
		})
	}

	t.Run("OversizeBody", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, "QUEEN_MAX_BODY_BYTES=1024")

		big := `{"items":[{"queue":"bad","payload":"` + strings.Repeat("x", 2048) + `"}]}`
		status, body := tb.raw(t, http.MethodPost, "/api/v1/push", big)
		require.Equal(t, http.StatusRequestEntityTooLarge, status, "%s", body)
		eb := errorBody(t, body)
		require.Equal(t, api.ErrorCodePayloadTooLarge, eb.Code)
		requireUnchanged(t, tb)

		// The limit is on the body, not on the broker: a small push still works.
		push(t, tb.testBundle, "bad", "", `"small"`)
		require.Equal(t, 1, queueTotals(t, tb.testBundle, "bad").Total)
	})
}
