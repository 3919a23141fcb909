package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/queenmq/queen/internal/api"
)

const (
	// DefaultPopTimeout is the long-poll timeout sent when PopOptions.Timeout is 0.
	DefaultPopTimeout = 30 * time.Second
	// popSlack is added to the long-poll timeout for the request deadline, as upstream
	// clients do, so that the broker answers 204 before the client gives up.
	popSlack = 5 * time.Second
)

// errNoTarget is returned by Pop when neither a queue nor a namespace/task is given.
var errNoTarget = errors.New("pop: queue, namespace or task is required")

// PopOptions selects what [Client.Pop] consumes and how.
type PopOptions struct {
	// Queue to pop from. When empty, Namespace and/or Task select the queues through
	// GET /api/v1/pop (a route queen serves and upstream does not).
	Queue string
	// Partition pops a single partition. "" and "Default" use the wildcard route, as the
	// upstream clients do.
	Partition string
	// ConsumerGroup is sent only when set (the broker defaults to queue mode).
	ConsumerGroup string
	// Batch is the maximum number of messages; 0 sends 1.
	Batch int
	// Wait long-polls until messages arrive or Timeout elapses.
	Wait bool
	// Timeout is the long-poll timeout, sent in milliseconds; 0 sends 30 s. The request
	// deadline is Timeout + 5 s.
	Timeout time.Duration
	// AutoAck advances the cursor at delivery; sent only when true.
	AutoAck bool
	// Partitions claims up to this many partitions (wildcard route); sent only when > 1.
	Partitions int
	// SubscriptionMode ("new", "all", ...) is sent only when set.
	SubscriptionMode string
	// SubscriptionFrom ("now" or a timestamp) is sent only when set.
	SubscriptionFrom string
	// Namespace is sent when set, on every route (ignored by the queue routes).
	Namespace string
	// Task is sent when set, on every route (ignored by the queue routes).
	Task string
}

// Pop consumes messages. An empty pop (204, an empty body or an empty messages list)
// returns a response with no Messages and a nil error; so does upstream's 200 with
// success false, whose reason is in the response's Error.
func (c *Client) Pop(ctx context.Context, o PopOptions) (*api.PopResponse, error) {
	path, err := popPath(o)
	if err != nil {
		return nil, err
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultPopTimeout
	}
	q := url.Values{}
	q.Set("batch", strconv.Itoa(max(o.Batch, 1)))
	q.Set("wait", strconv.FormatBool(o.Wait))
	q.Set("timeout", strconv.FormatInt(timeout.Milliseconds(), 10))
	setIf(q, "consumerGroup", o.ConsumerGroup)
	if o.AutoAck {
		q.Set("autoAck", "true")
	}
	if o.Partitions > 1 {
		q.Set("partitions", strconv.Itoa(o.Partitions))
	}
	setIf(q, "subscriptionMode", o.SubscriptionMode)
	setIf(q, "subscriptionFrom", o.SubscriptionFrom)
	setIf(q, "namespace", o.Namespace)
	setIf(q, "task", o.Task)

	resp, err := c.send(ctx, request{
		method: http.MethodGet, path: path + "?" + q.Encode(), timeout: timeout + popSlack,
	})
	if err != nil {
		return nil, err
	}
	out := &api.PopResponse{}
	if resp.status == http.StatusNoContent {
		return out, nil // clients never read a 204 body
	}
	return out, resp.decode(out)
}

// popPath picks the pop route for o (without the query string).
func popPath(o PopOptions) (string, error) {
	switch {
	case o.Queue == "" && o.Namespace == "" && o.Task == "":
		return "", errNoTarget
	case o.Queue == "":
		return "/api/v1/pop", nil
	case o.Partition == "" || o.Partition == api.DefaultPartition:
		return "/api/v1/pop/queue/" + url.PathEscape(o.Queue), nil
	}
	return "/api/v1/pop/queue/" + url.PathEscape(o.Queue) + "/partition/" + url.PathEscape(o.Partition), nil
}

func setIf(q url.Values, key, value string) {
	if value != "" {
		q.Set(key, value)
	}
}
