package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/queenmq/queen/internal/api"
)

// Health calls GET /health. A 503 answer carries the same body as a 200: it is returned
// decoded together with the [*Error].
func (c *Client) Health(ctx context.Context) (*api.Health, error) {
	resp, err := c.send(ctx, request{method: http.MethodGet, path: "/health"})
	if resp == nil {
		return nil, err
	}
	h := &api.Health{}
	if derr := resp.decode(h); derr != nil && err == nil {
		return nil, derr
	}
	return h, err
}

// Configure creates or fully replaces a queue's configuration (POST /api/v1/configure).
func (c *Client) Configure(ctx context.Context, req api.ConfigureRequest) (*api.ConfigureResponse, error) {
	out := &api.ConfigureResponse{}
	if err := c.object(ctx, http.MethodPost, "/api/v1/configure", req, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Push sends items (POST /api/v1/push) and returns one result per item, in order.
// Per-item outcomes are in each result's Status; only a failed request is an error.
// With retries enabled, items without a TransactionID get a UUIDv7 so that a retry after
// a lost answer deduplicates instead of storing the message twice.
func (c *Client) Push(ctx context.Context, items ...api.PushItem) ([]api.PushResult, error) {
	req := api.PushRequest{Items: make([]api.PushItem, len(items))}
	copy(req.Items, items)
	if c.retries > 0 {
		for i := range req.Items {
			if req.Items[i].TransactionID == "" {
				req.Items[i].TransactionID = newUUIDv7()
			}
		}
	}
	resp, err := c.post(ctx, "/api/v1/push", req)
	if err != nil {
		return nil, err
	}
	return decodeList[api.PushResult](resp)
}

// Ack acknowledges one message (POST /api/v1/ack). The outcome is the result's Success
// and Error; the broker answers 200 whether or not the ack took effect.
func (c *Client) Ack(ctx context.Context, req api.AckRequest) (api.AckResult, error) {
	resp, err := c.post(ctx, "/api/v1/ack", req)
	if err != nil {
		return api.AckResult{}, err
	}
	results, err := decodeList[api.AckResult](resp)
	if err != nil || len(results) == 0 {
		return api.AckResult{}, err
	}
	return results[0], nil
}

// AckBatch acknowledges several messages (POST /api/v1/ack/batch) and returns their
// results in request order; an empty answer (zero acknowledgments) is nil.
func (c *Client) AckBatch(ctx context.Context, req api.AckBatchRequest) ([]api.AckResult, error) {
	if req.Acknowledgments == nil {
		req.Acknowledgments = []api.AckItem{}
	}
	resp, err := c.post(ctx, "/api/v1/ack/batch", req)
	if err != nil {
		return nil, err
	}
	return decodeList[api.AckResult](resp)
}

// Transaction runs acks and pushes atomically (POST /api/v1/transaction). A rolled-back
// transaction is not an error: the response has Success false and Error set.
func (c *Client) Transaction(ctx context.Context, req api.TransactionRequest) (*api.TransactionResponse, error) {
	resp, err := c.post(ctx, "/api/v1/transaction", req)
	if err != nil {
		return nil, err
	}
	out := &api.TransactionResponse{}
	return out, resp.decode(out)
}

// ExtendLease extends every partition lock held by leaseID
// (POST /api/v1/lease/{leaseId}/extend). seconds 0 sends {} (the broker's default, 60 s).
// An unknown or expired lease is a result with Success false, not an error.
func (c *Client) ExtendLease(ctx context.Context, leaseID string, seconds int) (api.LeaseExtendResult, error) {
	path := "/api/v1/lease/" + url.PathEscape(leaseID) + "/extend"
	resp, err := c.post(ctx, path, api.LeaseExtendRequest{Seconds: seconds})
	if err != nil {
		return api.LeaseExtendResult{}, err
	}
	results, err := decodeList[api.LeaseExtendResult](resp)
	if err != nil || len(results) == 0 {
		return api.LeaseExtendResult{}, err
	}
	return results[0], nil
}

// ListQueues lists all queues (GET /api/v1/resources/queues).
func (c *Client) ListQueues(ctx context.Context) (*api.QueueList, error) {
	out := &api.QueueList{}
	if err := c.object(ctx, http.MethodGet, "/api/v1/resources/queues", nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// GetQueue describes one queue (GET /api/v1/resources/queues/{queue}); an unknown queue
// satisfies [IsNotFound].
func (c *Client) GetQueue(ctx context.Context, name string) (*api.QueueDetail, error) {
	out := &api.QueueDetail{}
	if err := c.object(ctx, http.MethodGet, "/api/v1/resources/queues/"+url.PathEscape(name), nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteQueue deletes a queue and everything in it (DELETE
// /api/v1/resources/queues/{queue}); deleting an absent queue succeeds with Existed false.
func (c *Client) DeleteQueue(ctx context.Context, name string) (*api.QueueDeleteResponse, error) {
	out := &api.QueueDeleteResponse{}
	if err := c.object(ctx, http.MethodDelete, "/api/v1/resources/queues/"+url.PathEscape(name), nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// post JSON-encodes body and POSTs it.
func (c *Client) post(ctx context.Context, path string, body any) (*response, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode POST %s body: %w", path, err)
	}
	return c.send(ctx, request{method: http.MethodPost, path: path, body: raw})
}

// object calls a route whose success shape is an object that never carries "error", so
// that upstream's 200-with-error answer becomes an [*Error]; body nil sends none.
func (c *Client) object(ctx context.Context, method, path string, body, out any) error {
	req := request{method: method, path: path}
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode %s %s body: %w", method, path, err)
		}
		req.body = raw
	}
	resp, err := c.send(ctx, req)
	if err != nil {
		return err
	}
	if err := bodyError(resp); err != nil {
		return err
	}
	return resp.decode(out)
}
