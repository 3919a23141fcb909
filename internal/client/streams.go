package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/queenmq/queen/internal/api"
)

// streamQueriesPath is the operator route of the registered stream queries.
const streamQueriesPath = "/streams/v1/queries"

// StreamPage selects one page of a stream listing. A zero Limit is left to the broker
// (its default is 100, its maximum 1000); a zero Offset is the first page.
type StreamPage struct {
	Limit, Offset int
}

// query is the page's query string, with its leading "?", or "".
func (p StreamPage) query() string {
	q := url.Values{}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Offset != 0 {
		q.Set("offset", strconv.Itoa(p.Offset))
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// streamQueryPath is the route of the query name, whose name is one escaped path
// segment (names may hold dots, slashes and spaces).
func streamQueryPath(name string) string {
	return streamQueriesPath + "/" + url.PathEscape(name)
}

// ListStreamQueries lists one page of the registered stream queries by name, with
// their shards, state rows and cycles (GET /streams/v1/queries).
func (c *Client) ListStreamQueries(ctx context.Context, page StreamPage) (*api.StreamQueryList, error) {
	out := &api.StreamQueryList{}
	if err := c.object(ctx, http.MethodGet, streamQueriesPath+page.query(), nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// GetStreamQuery describes the stream query name with one page of its source
// partitions, most recently cycled first (GET /streams/v1/queries/{name}); an unknown
// query satisfies [IsNotFound].
func (c *Client) GetStreamQuery(ctx context.Context, name string, page StreamPage) (*api.StreamQueryDetail, error) {
	out := &api.StreamQueryDetail{}
	if err := c.object(ctx, http.MethodGet, streamQueryPath(name)+page.query(), nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ResetStreamQuery deletes the state of the stream query name on every partition and
// keeps its registration (POST /streams/v1/queries/{name}/reset). It does not move
// the query's consumer group on the source queue: messages already consumed are not
// processed again. An unknown query satisfies [IsNotFound].
func (c *Client) ResetStreamQuery(ctx context.Context, name string) (*api.StreamRemoval, error) {
	out := &api.StreamRemoval{}
	if err := c.object(ctx, http.MethodPost, streamQueryPath(name)+"/reset", nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteStreamQuery deletes the stream query name with its state
// (DELETE /streams/v1/queries/{name}); a worker still running it must register it
// again. An unknown query satisfies [IsNotFound].
func (c *Client) DeleteStreamQuery(ctx context.Context, name string) (*api.StreamRemoval, error) {
	out := &api.StreamRemoval{}
	if err := c.object(ctx, http.MethodDelete, streamQueryPath(name), nil, out); err != nil {
		return nil, err
	}
	return out, nil
}
