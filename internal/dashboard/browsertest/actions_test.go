package browsertest

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestActions runs the pages' actions, each accepted in the app's confirm dialog, and
// checks their effect through the API. The subtests share one tab and one broker and
// build on each other, in order, so they do not run in parallel.
func TestActions(t *testing.T) {
	t.Parallel()
	browser(t)
	srv, c, s := startSeeded(t)
	tb := newTab(t, srv.URL)
	row := func(table, key string) string {
		return fmt.Sprintf(`[data-testid="%s"] tr[data-testid="row"][data-key="%s"]`, table, key)
	}
	billing := row("table-consumers", "billing|e2e.orders")
	group := func(t *testing.T) obj {
		t.Helper()
		for _, g := range callJSON[[]obj](t, c, "GET", "/api/v1/consumer-groups", nil, http.StatusOK) {
			if g["name"] == "billing" && g["queueName"] == "e2e.orders" {
				return g
			}
		}
		return nil
	}

	t.Run("MoveToNow", func(t *testing.T) {
		tb := tb.with(t)
		require.Greater(t, group(t)["totalLag"], 0.0)
		tb.open("/consumers")
		tb.waitJS("the billing row", `qt.has('`+billing+`')`)
		tb.click(billing + ` [data-testid="group-move-now"]`)
		tb.accept()
		tb.waitToast("ok", "moved to now")
		require.Equal(t, 0.0, group(t)["totalLag"])
		tb.waitJS("the row shows no lag", `qt.text('`+billing+` [data-testid="total-lag"]') === '0'`)
		tb.clean("move to now")
	})

	t.Run("SeekAnHourBack", func(t *testing.T) {
		tb := tb.with(t)
		tb.click(billing + ` [data-testid="group-seek"]`)
		tb.waitJS("the seek dialog", `qt.has('[data-testid="seek-dialog"] [data-testid="seek-time"]')`)
		tb.click(`[data-testid="seek-accept"]`)
		tb.waitToast("ok", "cursors moved to")
		require.Greater(t, group(t)["totalLag"], 0.0)
		tb.waitJS("the row shows the lag again", `qt.text('`+billing+` [data-testid="total-lag"]') !== '0'`)
		tb.clean("seek")
	})

	t.Run("SkipALaggingPartition", func(t *testing.T) {
		tb := tb.with(t)
		tb.choose(`[data-testid="lagging-threshold"]`, "60")
		tb.waitJS("the threshold is in the address", `new URLSearchParams(location.search).get('lagSince') === '60'`)
		tb.open("/consumers?lagSince=60")
		tb.waitJS("a reload keeps it", `qt.ready('consumers')
			&& document.querySelector('[data-testid="lagging-threshold"]').value === '60'`)
		tb.click(`[data-testid="lagging-toggle"]`)
		skip := `[...document.querySelectorAll('[data-testid="table-lagging"] tr[data-testid="row"]')]
			.find((r) => r.cells[0].innerText === 'billing' && r.cells[2].innerText === 'p0')`
		tb.waitJS("billing's p0 lags more than a minute", skip)
		tb.do("skip p0", js(skip+`.querySelector('[data-testid="lagging-skip"]').click()`))
		tb.accept()
		tb.waitToast("ok", "skipped to its end")
		detail := callJSON[map[string]obj](t, c, "GET", "/api/v1/consumer-groups/billing", nil, http.StatusOK)
		parts, _ := detail["e2e.orders"]["partitions"].([]any)
		found := false
		for _, x := range parts {
			p := x.(obj)
			switch p["partition"] {
			case "p0":
				found = true
				require.Equal(t, 0.0, p["offsetLag"], "p0 after the skip: %v", p)
			case "p1":
				require.Greater(t, p["offsetLag"], 0.0, "p1 is not skipped: %v", p)
			}
		}
		require.True(t, found, "billing has a cursor on p0: %v", detail)
		tb.waitJS("p0 leaves the lagging list", `!(`+skip+`)`)
		tb.clean("skip to end")
	})

	t.Run("SkipInTheGroupView", func(t *testing.T) {
		tb := tb.with(t)
		tb.click(billing + ` [data-testid="group-view"]`)
		p1 := `[data-testid="group-detail"] [data-testid="table-group-partitions"] tr[data-key="p1"]`
		tb.waitJS("billing's cursor on p1 lags", `qt.has('`+p1+`') && qt.text('`+p1+` [data-testid="offset-lag"]') !== '0'`)
		tb.click(p1 + ` [data-testid="partition-skip"]`)
		tb.accept()
		tb.waitToast("ok", "partition p1 skipped to its end")
		tb.waitJS("the view shows p1 caught up", `qt.text('`+p1+` [data-testid="offset-lag"]') === '0'`)
		detail := callJSON[map[string]obj](t, c, "GET", "/api/v1/consumer-groups/billing", nil, http.StatusOK)
		for _, x := range detail["e2e.orders"]["partitions"].([]any) {
			if p := x.(obj); p["partition"] == "p1" {
				require.Equal(t, 0.0, p["offsetLag"], "p1 after the skip: %v", p)
			}
		}
		tb.click(`[data-testid="group-detail"] [data-testid="modal-close"]`)
		tb.clean("skip in the group view")
	})

	t.Run("DeleteTheGroup", func(t *testing.T) {
		tb := tb.with(t)
		tb.click(billing + ` [data-testid="group-delete"]`)
		tb.accept()
		tb.waitToast("ok", "consumer group deleted")
		tb.waitJS("the row goes", `!qt.has('`+billing+`')`)
		require.Nil(t, group(t), "billing is gone from e2e.orders")
		tb.clean("group delete")
	})

	t.Run("PurgeADeadLetter", func(t *testing.T) {
		tb := tb.with(t)
		tb.open("/dlq")
		tb.waitJS("five dead letters", `qt.rows('table-dlq') === 5`)
		key := eval[string](tb, `document.querySelector('[data-testid="table-dlq"] tr[data-testid="row"]').dataset.key`)
		pid, tx := splitKey(t, key)
		tb.click(row("table-dlq", key) + ` [data-testid="dlq-purge"]`)
		tb.accept()
		tb.waitToast("ok", "message purged")
		tb.waitJS("four dead letters", `qt.rows('table-dlq') === 4 && !qt.has('`+row("table-dlq", key)+`')`)
		require.Equal(t, 4.0, callJSON[obj](t, c, "GET", "/api/v1/dlq", nil, http.StatusOK)["total"])
		status, _ := c.call(t, "GET", "/api/v1/messages/"+pid+"/"+tx, nil)
		require.Equal(t, http.StatusNotFound, status, "the purged message is gone")
		tb.clean("dlq purge")
	})

	t.Run("RequeueADeadLetter", func(t *testing.T) {
		tb := tb.with(t)
		key := eval[string](tb, `document.querySelector('[data-testid="table-dlq"] tr[data-testid="row"]').dataset.key`)
		tb.click(row("table-dlq", key) + ` [data-testid="dlq-select"]`)
		tb.waitJS("the requeue button counts the selection", `qt.text('[data-testid="dlq-requeue"]') === 'Requeue 1'`)
		tb.click(`[data-testid="dlq-requeue"]`)
		tb.accept()
		tb.waitToast("ok", "1 requeued")
		tb.waitJS("three dead letters", `qt.rows('table-dlq') === 3 && !qt.has('`+row("table-dlq", key)+`')`)
		require.Equal(t, 3.0, callJSON[obj](t, c, "GET", "/api/v1/dlq", nil, http.StatusOK)["total"])
		tb.clean("dlq requeue")
	})

	t.Run("RetryADeadLetterFromItsDrawer", func(t *testing.T) {
		tb := tb.with(t)
		dlq := callJSON[obj](t, c, "GET", "/api/v1/dlq?queue=e2e.orders", nil, http.StatusOK)
		entries, _ := dlq["messages"].([]any)
		require.Len(t, entries, 3)
		first, _ := entries[0].(obj)
		key := fmt.Sprint(first["partitionId"]) + "/" + fmt.Sprint(first["transactionId"])
		tb.open("/messages?queue=e2e.orders&open=" + url.QueryEscape(key))
		tb.waitJS("the dead letter's drawer", `qt.has('[data-testid="message-drawer"] [data-testid="message-retry"]')`)
		tb.click(`[data-testid="message-retry"]`)
		tb.accept()
		tb.waitToast("ok", "retried: a copy is at the end of its partition")
		after := callJSON[obj](t, c, "GET", "/api/v1/dlq?queue=e2e.orders", nil, http.StatusOK)
		require.Equal(t, 2.0, after["total"], "the entry is moved out of the dead-letter queue")
		moved := callJSON[obj](t, c, "GET", "/api/v1/messages?queue=e2e.orders&status=pending&limit=1000", nil, http.StatusOK)
		copies := 0
		for _, m := range moved["messages"].([]any) {
			if strings.HasPrefix(fmt.Sprint(m.(obj)["transactionId"]), "dlq:") {
				copies++
			}
		}
		require.Equal(t, 1, copies, "one copy, under dlq:<entry id>, waits in the partition")
		tb.clean("retry from the message drawer")
		tb.open("/dlq") // where the next subtests start
		tb.waitJS("the dead letters", `qt.ready('dlq') && qt.rows('table-dlq') === 2`)
	})

	t.Run("PurgeAllMatching", func(t *testing.T) {
		tb := tb.with(t)
		requireDisabled(t, tb, `[data-testid="dlq-purge-all"]`) // the broker purges one queue at a time
		tb.typeInto(`[data-testid="dlq-queue"]`, "e2e.orders\n")
		tb.waitJS("the queue's dead letters", `location.search === '?queue=e2e.orders' && qt.ready('dlq') && qt.rows('table-dlq') === 2
			&& !document.querySelector('[data-testid="dlq-purge-all"]').disabled`)
		tb.click(`[data-testid="dlq-purge-all"]`)
		tb.accept()
		tb.waitToast("ok", "2 dead letters purged")
		tb.waitJS("no dead letter left", `qt.has('[data-testid="table-dlq"] [data-testid="empty-state"]')`)
		require.Equal(t, 0.0, callJSON[obj](t, c, "GET", "/api/v1/dlq", nil, http.StatusOK)["total"])
		tb.clean("dlq purge all")
	})

	t.Run("RequeueAllMatchingPastOneCall", func(t *testing.T) {
		// The broker requeues at most 1000 dead letters a call and says whether more
		// match: the page calls again until none does.
		tb := tb.with(t)
		const n = 1001
		items := make([]obj, n)
		for i := range items {
			items[i] = obj{"queue": "e2e.bulk", "payload": obj{"i": i}}
		}
		callJSON[[]obj](t, c, "POST", "/api/v1/push", obj{"items": items}, http.StatusCreated)
		popped := callJSON[obj](t, c, "GET", fmt.Sprintf("/api/v1/pop/queue/e2e.bulk?batch=%d&wait=false", n), nil, http.StatusOK)
		msgs, _ := popped["messages"].([]any)
		require.Len(t, msgs, n)
		acks := make([]obj, n)
		for i, m := range msgs {
			m := m.(obj)
			acks[i] = obj{"transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"], "status": "dlq"}
		}
		callJSON[[]obj](t, c, "POST", "/api/v1/ack/batch", obj{"acknowledgments": acks}, http.StatusOK)
		require.Equal(t, float64(n), callJSON[obj](t, c, "GET", "/api/v1/dlq?queue=e2e.bulk", nil, http.StatusOK)["total"])

		tb.open("/dlq?queue=e2e.bulk")
		tb.waitJS("the queue's dead letters", `qt.ready('dlq') && qt.text('[data-testid="dlq-requeue"]') === 'Requeue all matching'
			&& !document.querySelector('[data-testid="dlq-requeue"]').disabled`)
		tb.click(`[data-testid="dlq-requeue"]`)
		tb.accept()
		tb.waitToast("ok", "1,001 requeued")
		require.Equal(t, 0.0, callJSON[obj](t, c, "GET", "/api/v1/dlq?queue=e2e.bulk", nil, http.StatusOK)["total"])
		tb.clean("dlq requeue all matching")
	})

	t.Run("SaveQueueSettings", func(t *testing.T) {
		tb := tb.with(t)
		tb.open("/queues/e2e.orders?tab=Settings")
		tb.waitJS("the stored options", `qt.ready('queue') && document.querySelector('[data-testid="opt-leaseTime"]').value === '120'`)
		tb.waitIdle() // the editor starts over from the stored options when they arrive
		tb.fill(`[data-testid="opt-retryLimit"]`, "4")
		// Both dead-letter flags off: the queue drops what it would dead-letter.
		tb.click(`[data-testid="opt-deadLetterQueue"]`)
		tb.click(`[data-testid="opt-dlqAfterMaxRetries"]`)
		tb.waitJS("the diff", `qt.text('[data-testid="settings-diff"]').includes('retryLimit')
			&& qt.text('[data-testid="settings-diff"]').includes('dlqAfterMaxRetries')`)
		// Record what the page sends: only the changed options, so that an option an
		// upstream broker stored without applying it is not switched on by a save.
		eval[bool](tb, `(() => { window.qtSent = []; const f = window.fetch;
			window.fetch = (u, o) => { if (String(u).includes('/api/v1/configure')) window.qtSent.push(o && o.body); return f(u, o); };
			return true; })()`)
		tb.click(`[data-testid="settings-save"]`)
		tb.accept()
		tb.waitToast("ok", "options saved")
		require.Equal(t, `["deadLetterQueue","dlqAfterMaxRetries","retryLimit"]`,
			eval[string](tb, `window.qtSent.length === 1 ? JSON.stringify(Object.keys(JSON.parse(window.qtSent[0]).options).sort()) : 'sent '+window.qtSent.length`))
		q := callJSON[obj](t, c, "GET", "/api/v1/resources/queues/e2e.orders", nil, http.StatusOK)
		opts, _ := q["options"].(obj)
		require.Equal(t, 4.0, opts["retryLimit"], "options %v", opts)
		require.Equal(t, false, opts["deadLetterQueue"], "options %v", opts)
		require.Equal(t, false, opts["dlqAfterMaxRetries"], "options %v", opts)
		require.Equal(t, 120.0, opts["leaseTime"], "every other option keeps its stored value")
		tb.waitJS("no change left", `qt.text('[data-testid="settings-diff"]').includes('No changes')`)
		tb.clean("settings save")
		// The later tests dead-letter here.
		callJSON[obj](t, c, "POST", "/api/v1/configure",
			obj{"queue": "e2e.orders", "options": obj{"deadLetterQueue": true, "dlqAfterMaxRetries": true}}, http.StatusOK)
	})

	t.Run("DeleteAMessage", func(t *testing.T) {
		tb := tb.with(t)
		key := s.tx["e2e-7"] + "/e2e-7"
		tb.open("/messages?queue=e2e.orders")
		tb.waitJS("the message e2e-7", `qt.ready('messages') && qt.has('`+row("table-messages", key)+`')`)
		total := eval[int](tb, `Number(qt.text('[data-testid="messages-total"]').replace(/\D/g, ''))`)
		shown := eval[int](tb, `qt.rows('table-messages')`)
		require.Positive(t, total)
		require.Equal(t, fmt.Sprintf("1–%d of %d", shown, total), tb.text(`[data-testid="messages-shown"]`))
		tb.click(row("table-messages", key) + ` [data-testid="message-tx"]`)
		tb.waitJS("its drawer", `qt.has('[data-testid="message-drawer"] [data-testid="message-delete"]')`)
		tb.click(`[data-testid="message-delete"]`)
		tb.accept()
		tb.waitToast("ok", "message deleted")
		tb.waitJS("the drawer closes and the row goes", `!qt.has('[data-testid="message-drawer"]') && !qt.has('`+row("table-messages", key)+`')`)
		status, _ := c.call(t, "GET", "/api/v1/messages/"+key, nil)
		require.Equal(t, http.StatusNotFound, status)
		tb.waitJS("the header and the pager count one message less", fmt.Sprintf(`qt.ready('messages')
			&& qt.text('[data-testid="messages-total"]') === '%d matching' && qt.text('[data-testid="messages-shown"]') === '1–%d of %d'`,
			total-1, shown-1, total-1))
		require.Equal(t, float64(total-1), callJSON[obj](t, c, "GET", "/api/v1/messages?queue=e2e.orders", nil, http.StatusOK)["total"],
			"the page's total is the broker's")
		tb.clean("message delete")
	})

	t.Run("PushMaintenance", func(t *testing.T) {
		tb := tb.with(t)
		tb.open("/")
		tb.waitJS("the dashboard", `qt.ready('dashboard')`)
		tb.click(`[data-testid="toggle-push-maintenance"]`)
		tb.accept()
		tb.waitJS("the push maintenance banner", `qt.has('[data-testid="banner-push-maintenance"]')`)
		require.Equal(t, true, callJSON[obj](t, c, "GET", "/api/v1/system/maintenance", nil, http.StatusOK)["maintenanceMode"])
		res := callJSON[[]obj](t, c, "POST", "/api/v1/push", obj{"items": []obj{{"queue": "e2e.maint", "payload": obj{"m": 1}}}}, http.StatusCreated)
		require.Equal(t, "buffered", res[0]["status"])
		tb.screenshot("maintenance")
		tb.click(`[data-testid="toggle-push-maintenance"]`)
		tb.accept()
		require.Eventually(t, func() bool {
			m := callJSON[obj](t, c, "GET", "/api/v1/system/maintenance", nil, http.StatusOK)
			return m["maintenanceMode"] == false && m["bufferedMessages"] == 0.0
		}, 15*time.Second, 50*time.Millisecond, "push maintenance off and the spool drained")
		tb.waitJS("the banner goes", `!qt.has('[data-testid="banner-push-maintenance"]')`)
		tb.clean("push maintenance")
	})

	t.Run("PopMaintenance", func(t *testing.T) {
		tb := tb.with(t)
		tb.click(`[data-testid="toggle-pop-maintenance"]`)
		tb.accept()
		tb.waitJS("the pop maintenance banner", `qt.has('[data-testid="banner-pop-maintenance"]')`)
		status, _ := c.call(t, "GET", "/api/v1/pop/queue/e2e.orders?consumerGroup=maint", nil)
		require.Equal(t, http.StatusNoContent, status, "a pop in pop maintenance")
		tb.click(`[data-testid="toggle-pop-maintenance"]`)
		tb.accept()
		tb.waitJS("the banner goes", `!qt.has('[data-testid="banner-pop-maintenance"]')`)
		require.Equal(t, false, callJSON[obj](t, c, "GET", "/api/v1/system/maintenance", nil, http.StatusOK)["popMaintenanceMode"])
		tb.clean("pop maintenance")
	})

	t.Run("DeleteAQueue", func(t *testing.T) {
		tb := tb.with(t)
		tmp := row("table-queues", "e2e.tmp")
		tb.open("/queues")
		tb.waitJS("the e2e.tmp row", `qt.has('`+tmp+`')`)
		tb.do("mark the document", js(`window.notReloaded = true`))
		tb.click(tmp + ` [data-testid="queue-delete"]`)
		tb.accept()
		tb.waitToast("ok", "queue e2e.tmp deleted")
		tb.waitJS("the row goes without a reload", `!qt.has('`+tmp+`') && window.notReloaded === true && !!qt.row('table-queues', 'e2e.orders')`)
		status, _ := c.call(t, "GET", "/api/v1/resources/queues/e2e.tmp", nil)
		require.Equal(t, http.StatusNotFound, status)
		tb.clean("queue delete")
	})

	t.Run("DeleteAQueueAlreadyGone", func(t *testing.T) {
		tb := tb.with(t)
		callJSON[obj](t, c, "POST", "/api/v1/configure", obj{"queue": "e2e.gone"}, http.StatusOK)
		gone := row("table-queues", "e2e.gone")
		tb.open("/queues")
		tb.waitJS("the e2e.gone row", `qt.has('`+gone+`')`)
		tb.click(gone + ` [data-testid="queue-delete"]`)
		tb.waitJS("the confirm dialog opens", `!!document.querySelector('[data-testid="confirm-dialog"]')`)
		// Someone else deletes it while the operator reads the dialog.
		callJSON[obj](t, c, "DELETE", "/api/v1/resources/queues/e2e.gone", nil, http.StatusOK)
		tb.accept()
		tb.waitToast("ok", "queue e2e.gone was already gone")
		tb.clean("queue delete, already gone")
	})
}

// splitKey splits a dead-letter row key "partitionId/transactionId/group".
func splitKey(t *testing.T, key string) (pid, tx string) {
	t.Helper()
	parts := strings.SplitN(key, "/", 3)
	require.Len(t, parts, 3, "dead-letter row key %q", key)
	return parts[0], parts[1]
}
