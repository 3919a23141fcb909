package httpapi

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConfigureMerge: configure merges onto the stored options by default (1.6): an
// absent key keeps its value, null resets it to its default, mode "replace" resets
// every key not named.
func TestConfigureMerge(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)

	// opts configures body and returns the answer's options and the detail's options.
	opts := func(t *testing.T, body string) (echo, detail map[string]any) {
		t.Helper()
		r := b.post(t, "/api/v1/configure", body)
		requireStatus(t, http.StatusOK, r)
		m := r.object(t)
		name := m["queue"].(string)
		return m["options"].(map[string]any), b.list(t, "/api/v1/resources/queues/"+name)["options"].(map[string]any)
	}

	t.Run("AbsentKeysKeepTheirValues", func(t *testing.T) {
		t.Parallel()
		opts(t, `{"queue":"m-keep","namespace":"ns","task":"tk","options":{"retryLimit":7,"priority":2,"minPopWaitTime":500}}`)
		echo, detail := opts(t, `{"queue":"m-keep","options":{"leaseTime":10}}`)
		for _, o := range []map[string]any{echo, detail} {
			require.Equal(t, []any{10.0, 7.0, 2.0, 500.0}, []any{o["leaseTime"], o["retryLimit"], o["priority"], o["minPopWaitTime"]})
		}
		require.Equal(t, []any{"ns", "tk"}, []any{detail["namespace"], detail["task"]}, "namespace and task kept too")
	})

	t.Run("AStoredValueItDidNotNameRefusesNothing", func(t *testing.T) {
		t.Parallel()
		opts(t, `{"queue":"m-stored","options":{"retryLimit":2}}`)
		// Values another broker stored: a negative retry limit, encryption on a broker
		// without a key.
		_, err := b.db.Exec(t.Context(), `UPDATE queen.queues SET retry_limit = -1, encryption_enabled = true WHERE name = 'm-stored'`)
		require.NoError(t, err)
		echo, _ := opts(t, `{"queue":"m-stored","options":{"priority":3}}`)
		require.Equal(t, 3.0, echo["priority"])
		require.Equal(t, -1.0, echo["retryLimit"], "the stored value is left as it is")
		for body, field := range map[string]string{
			`{"queue":"m-stored","options":{"retryLimit":-2}}`:          "options.retryLimit",
			`{"queue":"m-stored","options":{"encryptionEnabled":true}}`: "options.encryptionEnabled",
			`{"queue":"m-stored","mode":"replace","options":{}}`:        "",
		} {
			r := b.post(t, "/api/v1/configure", body)
			if field == "" {
				requireStatus(t, http.StatusOK, r) // replace: the stored values go
				continue
			}
			requireStatus(t, http.StatusBadRequest, r)
			require.Equal(t, field, r.object(t)["field"], body)
		}
	})

	t.Run("NullResetsToTheDefault", func(t *testing.T) {
		t.Parallel()
		opts(t, `{"queue":"m-null","namespace":"ns","task":"tk","options":{"retryLimit":7,"priority":2,"dedupWindowSeconds":60}}`)
		echo, detail := opts(t, `{"queue":"m-null","options":{"retryLimit":null,"dedupWindowSeconds":null,"namespace":null}}`)
		require.Equal(t, []any{3.0, 2.0, 3600.0}, []any{echo["retryLimit"], echo["priority"], echo["dedupWindowSeconds"]})
		require.Equal(t, []any{"", "tk"}, []any{detail["namespace"], detail["task"]})
		_, detail = opts(t, `{"queue":"m-null","options":{"task":""}}`)
		require.Equal(t, "", detail["task"], "an empty string in options is a value")
	})

	t.Run("TopLevelGroupingCountsOnlyAsAName", func(t *testing.T) {
		t.Parallel()
		// The 1.x JS and Python clients send namespace and task at the top level, null
		// when their caller left them unset: a reconfigure keeps what was stored.
		opts(t, `{"queue":"m-group","namespace":"ns","task":"tk"}`)
		for _, body := range []string{
			`{"queue":"m-group","namespace":null,"task":null,"options":{"leaseTime":300,"retryLimit":3}}`,
			`{"queue":"m-group","namespace":"","task":7}`,
		} {
			echo, detail := opts(t, body)
			require.Equal(t, []any{"ns", "tk"}, []any{detail["namespace"], detail["task"]}, body)
			require.Equal(t, 300.0, echo["leaseTime"])
		}
		_, detail := opts(t, `{"queue":"m-group","namespace":"billing","options":{"task":null}}`)
		require.Equal(t, []any{"billing", ""}, []any{detail["namespace"], detail["task"]})
	})

	t.Run("ReplaceResetsEveryKeyNotNamed", func(t *testing.T) {
		t.Parallel()
		opts(t, `{"queue":"m-repl","namespace":"ns","options":{"retryLimit":7,"priority":2,"retentionSinkHold":"audit"}}`)
		echo, detail := opts(t, `{"queue":"m-repl","mode":"replace","options":{"priority":4,"replace":true}}`)
		require.Equal(t, []any{3.0, 4.0, ""}, []any{echo["retryLimit"], echo["priority"], echo["retentionSinkHold"]})
		require.Equal(t, "", detail["namespace"])
		// mode "merge" is the default spelled out.
		echo, _ = opts(t, `{"queue":"m-repl","mode":"merge","options":{"retryLimit":9}}`)
		require.Equal(t, []any{9.0, 4.0}, []any{echo["retryLimit"], echo["priority"]})
	})

	t.Run("NewQueueTakesDefaults", func(t *testing.T) {
		t.Parallel()
		echo, _ := opts(t, `{"queue":"m-new","options":{"priority":1}}`)
		delete(echo, "priority")
		want := map[string]any{}
		require.NoError(t, json.Unmarshal([]byte(defaultOptionsEcho), &want))
		delete(want, "priority")
		require.Equal(t, want, echo)
	})

	t.Run("TopLevelOptionsFold", func(t *testing.T) {
		t.Parallel()
		echo, _ := opts(t, `{"queue":"m-top","priority":9,"retryLimit":4,"options":{"retryLimit":5}}`)
		require.Equal(t, []any{9.0, 5.0}, []any{echo["priority"], echo["retryLimit"]}, "the options object wins")
	})

	t.Run("BadModeWritesNothing", func(t *testing.T) {
		t.Parallel()
		opts(t, `{"queue":"m-mode","options":{"retryLimit":7}}`)
		for _, tc := range []struct{ mode, got string }{
			{`"Replace"`, `"Replace"`}, {`""`, `""`}, {`true`, `true`}, {`1`, `1`},
		} {
			r := b.post(t, "/api/v1/configure", `{"queue":"m-mode","mode":`+tc.mode+`,"options":{"retryLimit":1}}`)
			requireError(t, r, http.StatusBadRequest, "invalid_argument",
				`mode must be "merge" or "replace", got `+tc.got, "mode")
		}
		require.Equal(t, 7.0, b.list(t, "/api/v1/resources/queues/m-mode")["options"].(map[string]any)["retryLimit"])
	})

	t.Run("OneXOptionsAreStoredAndChecked", func(t *testing.T) {
		t.Parallel()
		echo, _ := opts(t, `{"queue":"m-1x","options":{"minPopWaitTime":99999,"dedupWindowSeconds":-5,
			"retentionSinkHold":"s3.hold_1-x","retentionSinkHoldMaxSeconds":60}}`)
		require.Equal(t, []any{60000.0, 0.0, "s3.hold_1-x", 60.0}, []any{echo["minPopWaitTime"], echo["dedupWindowSeconds"],
			echo["retentionSinkHold"], echo["retentionSinkHoldMaxSeconds"]}, "clamped, floored, stored")
		for _, tc := range []struct{ body, option string }{
			{`{"retentionSinkHold":"no spaces"}`, "retentionSinkHold"},
			{`{"retentionSinkHold":5}`, "retentionSinkHold"},
			{`{"retentionSinkHoldMaxSeconds":59}`, "retentionSinkHoldMaxSeconds"},
			{`{"retentionSinkHoldMaxSeconds":31536001}`, "retentionSinkHoldMaxSeconds"},
		} {
			r := b.post(t, "/api/v1/configure", `{"queue":"m-1x","options":`+tc.body+`}`)
			requireStatus(t, http.StatusBadRequest, r)
			m := r.object(t)
			require.Equal(t, tc.option, m["invalid"], "%s", r.body)
			require.Equal(t, "options."+tc.option, m["field"])
		}
		_, detail := opts(t, `{"queue":"m-1x"}`)
		require.Equal(t, "s3.hold_1-x", detail["retentionSinkHold"], "a refused configure writes nothing")
	})

	t.Run("DetailRoundTrips", func(t *testing.T) {
		t.Parallel()
		_, before := opts(t, `{"queue":"m-trip","namespace":"n","task":"t","options":{"leaseTime":30,"retryDelay":5,
			"ttl":60,"retentionEnabled":true,"retentionSinkHold":"h","minPopWaitTime":20}}`)
		require.Len(t, before, 21)
		_, after := opts(t, `{"queue":"m-trip","options":`+mustJSON(t, before)+`}`)
		require.Equal(t, before, after)
		_, after = opts(t, `{"queue":"m-trip","mode":"replace","options":`+mustJSON(t, before)+`}`)
		require.Equal(t, before, after, "a replace with the whole detail is the same configuration")
	})

	t.Run("UpstreamTTLStaysUnappliedUnlessNamed", func(t *testing.T) {
		t.Parallel()
		_, err := b.db.Exec(t.Context(), `INSERT INTO queen.queues (name, ttl, retry_delay) VALUES ('m-up', 3600, 1000)`)
		require.NoError(t, err)
		opts(t, `{"queue":"m-up","options":{"leaseTime":20}}`)
		d := b.list(t, "/api/v1/resources/queues/m-up")
		require.Equal(t, 3600.0, d["options"].(map[string]any)["ttl"])
		require.Equal(t, map[string]any{"ttl": false, "retryDelay": false, "maxSize": true}, d["enforcedOptions"])
	})

	t.Run("ConcurrentEditsBothSurvive", func(t *testing.T) {
		t.Parallel()
		for _, name := range []string{"m-race-new", "m-race-old"} {
			if name == "m-race-old" {
				opts(t, `{"queue":"m-race-old"}`)
			}
			var wg sync.WaitGroup
			codes := make([]int, 2)
			for i, body := range []string{`{"retryLimit":8}`, `{"priority":6}`} {
				wg.Go(func() {
					codes[i] = b.post(t, "/api/v1/configure", `{"queue":"`+name+`","options":`+body+`}`).status
				})
			}
			wg.Wait()
			require.Equal(t, []int{200, 200}, codes)
			o := b.list(t, "/api/v1/resources/queues/"+name)["options"].(map[string]any)
			require.Equal(t, []any{8.0, 6.0}, []any{o["retryLimit"], o["priority"]}, name)
		}
	})
}
