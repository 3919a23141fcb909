package browsertest

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
)

// TestTransactionIDsWithSlashes: a message whose transaction id holds "/" (or markup)
// opens in the Messages drawer from a link and from its row, shows its whole id, and
// the drawer deletes that message.
func TestTransactionIDsWithSlashes(t *testing.T) {
	t.Parallel()
	browser(t)
	srv := daemontest.Start(t, daemontest.Options{})
	c := newClient(srv.URL, "")
	ids := []string{"a/b", "<script>alert(2)</script>", "x/y/z"}
	var items []obj
	for _, id := range ids {
		items = append(items, obj{"queue": "odd", "transactionId": id, "payload": obj{"id": id}})
	}
	pushed := callJSON[[]obj](t, c, "POST", "/api/v1/push", obj{"items": items}, http.StatusCreated)
	pid := pushed[0]["partition_id"].(string)

	tb := newTab(t, srv.URL)
	for i, id := range ids {
		key := pid + "/" + id
		if i == 0 {
			tb.open("/messages?queue=odd")
			tb.waitJS("the messages", `qt.ready('messages') && qt.rows('table-messages') === 3`)
			tb.click(`[data-testid="table-messages"] tr[data-key=` + jsString(key) + `] [data-testid="message-tx"]`)
		} else {
			tb.open("/messages?queue=odd&open=" + url.QueryEscape(key))
		}
		tb.waitJS("the drawer of "+id, `qt.has('[data-testid="message-drawer"] [data-testid="message-delete"]')
			&& qt.text('[data-testid="message-drawer"]').includes('Message ' + `+jsString(id)+`)
			&& qt.text('[data-testid="message-fields"]').includes(`+jsString(id)+`)`)
		tb.click(`[data-testid="message-delete"]`)
		tb.accept()
		tb.waitToast("ok", "message deleted")
		tb.waitJS("the drawer closes", `!qt.has('[data-testid="message-drawer"]')`)
		status, body := c.call(t, "GET", "/api/v1/messages/"+pid+"/"+url.PathEscape(id), nil)
		require.Equal(t, http.StatusNotFound, status, "%s: %s", id, body)
		tb.clean("the drawer of " + id)
	}
}
