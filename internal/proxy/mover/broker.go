package mover

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// callTimeout bounds one call to a broker.
const callTimeout = 30 * time.Second

// brokers calls the tenancy export, import and fence routes of the brokers.
type brokers struct {
	client    *http.Client
	authorize func(*http.Request) error
}

// brokerError is a broker's answer other than 200.
type brokerError struct {
	path   string
	status int
	body   string
}

func (e *brokerError) Error() string {
	return fmt.Sprintf("%s: the broker answered %d: %s", e.path, e.status, e.body)
}

// call sends in (nil: no body) to base+path and decodes the 200 answer into out.
func (b *brokers) call(ctx context.Context, base *url.URL, method, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var body io.Reader = http.NoBody
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, base.String()+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if err := b.authorize(req); err != nil {
		return err
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return &brokerError{path: path, status: resp.StatusCode, body: string(raw)}
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// head is a partition's newest message and count, as a cell has them.
type head struct {
	ID            string  `json:"id"`
	Queue         string  `json:"queue"`
	Name          string  `json:"name"`
	Count         int64   `json:"count"`
	LastCreatedAt *string `json:"lastCreatedAt"`
	LastID        *string `json:"lastId"`
}

// position is a message's place in the export order.
type position struct {
	PartitionID string `json:"partitionId,omitempty"`
	CreatedAt   string `json:"createdAt"`
	ID          string `json:"id"`
}

type headsAnswer struct {
	Partitions []head `json:"partitions"`
}

type messagesRequest struct {
	Tenant string              `json:"tenant"`
	Since  map[string]position `json:"since"`
	After  *position           `json:"after"`
	Limit  int                 `json:"limit"`
}

type messagesAnswer struct {
	Messages []json.RawMessage `json:"messages"`
	Next     *position         `json:"next"`
}

func (b *brokers) heads(ctx context.Context, base *url.URL, tenantID string) ([]head, error) {
	var a headsAnswer
	err := b.call(ctx, base, http.MethodGet, "/internal/api/tenancy/export/heads?tenant="+url.QueryEscape(tenantID), nil, &a)
	return a.Partitions, err
}

func (b *brokers) exportMessages(ctx context.Context, base *url.URL, req messagesRequest) (*messagesAnswer, error) {
	var a messagesAnswer
	err := b.call(ctx, base, http.MethodPost, "/internal/api/tenancy/export/messages", req, &a)
	return &a, err
}

func (b *brokers) importMessages(ctx context.Context, base *url.URL, tenantID string, rows []json.RawMessage) error {
	return b.call(ctx, base, http.MethodPost, "/internal/api/tenancy/import/messages",
		map[string]any{"tenant": tenantID, "messages": rows}, nil)
}

// exportState reads every row of the tenant but its messages, by table key.
func (b *brokers) exportState(ctx context.Context, base *url.URL, tenantID string) (map[string]json.RawMessage, error) {
	var a map[string]json.RawMessage
	err := b.call(ctx, base, http.MethodGet, "/internal/api/tenancy/export/state?tenant="+url.QueryEscape(tenantID), nil, &a)
	return a, err
}

// importState imports state with mode "structure" (queues and partitions) or "all".
func (b *brokers) importState(ctx context.Context, base *url.URL, tenantID, mode string, state map[string]json.RawMessage) error {
	body := make(map[string]json.RawMessage, len(state)+2)
	for k, v := range state {
		body[k] = v
	}
	body["tenant"], _ = json.Marshal(tenantID)
	body["mode"], _ = json.Marshal(mode)
	return b.call(ctx, base, http.MethodPost, "/internal/api/tenancy/import/state", body, nil)
}

func (b *brokers) exportIDs(ctx context.Context, base *url.URL, tenantID, partitionID string) ([]string, error) {
	var a struct {
		IDs []string `json:"ids"`
	}
	err := b.call(ctx, base, http.MethodPost, "/internal/api/tenancy/export/ids",
		map[string]string{"tenant": tenantID, "partitionId": partitionID}, &a)
	return a.IDs, err
}

func (b *brokers) prune(ctx context.Context, base *url.URL, tenantID, partitionID string, keep []string) error {
	return b.call(ctx, base, http.MethodPost, "/internal/api/tenancy/import/prune",
		map[string]any{"tenant": tenantID, "partitionId": partitionID, "keep": keep}, nil)
}

// fence sets or lifts the tenant's fence at one broker; drained reports whether its
// requests in flight there ended.
func (b *brokers) fence(ctx context.Context, base *url.URL, tenantID string, fenced bool) (bool, error) {
	var a struct {
		Drained bool `json:"drained"`
	}
	err := b.call(ctx, base, http.MethodPost, "/internal/api/tenancy/fence",
		map[string]any{"tenant": tenantID, "fenced": fenced}, &a)
	return a.Drained, err
}

func (b *brokers) drop(ctx context.Context, base *url.URL, tenantID string) error {
	return b.call(ctx, base, http.MethodPost, "/internal/api/tenancy/drop", map[string]string{"tenant": tenantID}, nil)
}
