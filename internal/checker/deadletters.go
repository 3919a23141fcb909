package checker

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

// dlqPage is the page size of the dead-letter read (the broker's largest list page).
const dlqPage = 1000

// deadLetters reads every dead-letter entry of queueName through GET /api/v1/dlq, a
// page at a time. It runs once the traffic is over, so the pages do not shift.
func deadLetters(ctx context.Context, c *client.Client, queueName string) ([]DeadLetter, error) {
	var out []DeadLetter
	for {
		q := url.Values{"queue": {queueName}, "limit": {strconv.Itoa(dlqPage)}, "offset": {strconv.Itoa(len(out))}}
		var page api.DLQList
		if _, err := c.Do(ctx, http.MethodGet, "/api/v1/dlq?"+q.Encode(), nil, &page); err != nil {
			return nil, err
		}
		for _, m := range page.Messages {
			out = append(out, DeadLetter{MessageID: m.ID, ConsumerGroup: m.ConsumerGroup, RetryCount: m.RetryCount})
		}
		if len(page.Messages) == 0 || int64(len(out)) >= page.Total {
			return out, nil
		}
	}
}
