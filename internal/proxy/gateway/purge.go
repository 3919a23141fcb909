package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/queenmq/queen/internal/proxy/brokerauth"
)

// ErrPurgeUnavailable is a purge that reached no broker; nothing was deleted by
// the attempt that failed.
var ErrPurgeUnavailable = errors.New("no broker is available for the purge")

// PurgeTarget is the broker a purge talks to, as the proxy itself: in the tenant's
// scope, with an admin token when the brokers verify JWTs.
type PurgeTarget struct {
	Client *http.Client
	// Base is the broker's base URL.
	Base *url.URL
	// Header is the tenancy header.
	Header string
	// Minter mints the admin token; nil sends none (broker auth none).
	Minter    *brokerauth.Minter
	AdminRole string
}

// purgeTimeout bounds one broker call of a purge.
const purgeTimeout = 30 * time.Second

// Purge deletes everything the tenant has at the broker in one transaction (queues
// with their messages, partitions and consumer state, dead letters, traces, KV
// entries, timers, stream state, analytics) through the broker's tenancy drop, and
// returns how many queues it deleted. A broker of an earlier release without the
// drop (404) has the tenant's queues deleted one by one instead, which leaves its KV
// entries and timers.
func Purge(ctx context.Context, t PurgeTarget, tenantID string) (int, error) {
	var dropped struct {
		Queues int `json:"queuesDeleted"`
	}
	// The drop is a global admin route: the tenant is named in the body only, with no
	// tenancy header and a token without a tenant claim.
	err := t.call(ctx, http.MethodPost, "/internal/api/tenancy/drop", "", map[string]string{"tenant": tenantID}, &dropped)
	var absent *routeAbsentError
	if !errors.As(err, &absent) {
		return dropped.Queues, err
	}
	var list struct {
		Queues []struct {
			Name string `json:"name"`
		} `json:"queues"`
	}
	if err := t.call(ctx, http.MethodGet, "/api/v1/resources/queues", tenantID, nil, &list); err != nil {
		return 0, err
	}
	n := 0
	for _, q := range list.Queues {
		err := t.call(ctx, http.MethodDelete, "/api/v1/resources/queues/"+url.PathEscape(q.Name), tenantID, nil, nil)
		if err != nil && !errors.As(err, &absent) { // a queue already gone is deleted
			return n, fmt.Errorf("delete queue %q: %w", q.Name, err)
		}
		n++
	}
	return n, nil
}

// routeAbsentError is a broker's 404: a route it does not have (the tenancy drop of
// an earlier release), or a queue already gone.
type routeAbsentError struct{ path string }

func (e *routeAbsentError) Error() string { return e.path + ": the broker answered 404" }

// call sends in (nil: no body) to the broker as the proxy, in tenantID's scope ("":
// global, no tenancy header), with an admin token when the brokers verify JWTs, and
// decodes a 2xx answer into out (nil: none).
func (t PurgeTarget) call(ctx context.Context, method, path, tenantID string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, purgeTimeout)
	defer cancel()
	var body io.Reader = http.NoBody
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.Base.String()+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tenantID != "" {
		req.Header.Set(t.Header, tenantID)
	}
	if t.Minter != nil {
		tok, err := t.Minter.Token(brokerauth.Claims{Subject: "queen-proxy", Role: t.AdminRole, Tenant: tenantID})
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := t.Client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPurgeUnavailable, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return &routeAbsentError{path: path}
	case resp.StatusCode == http.StatusServiceUnavailable:
		return fmt.Errorf("%w: the broker answered 503", ErrPurgeUnavailable)
	case resp.StatusCode >= 300:
		return fmt.Errorf("%s %s: the broker answered %d", method, path, resp.StatusCode)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// Purge deletes the tenant's queues through a healthy broker of its cell.
func (s *Server) Purge(ctx context.Context, tenantID string) (int, error) {
	cellName := DefaultCell
	if s.opts.Store != nil {
		t, err := s.opts.Store.TenantGet(ctx, tenantID)
		if err != nil {
			return 0, err
		}
		if t.Cell != "" {
			cellName = t.Cell
		}
	}
	up := s.CellPick(s.moves.cellOf(tenantID, cellName))
	if up == nil {
		return 0, ErrPurgeUnavailable
	}
	return Purge(ctx, PurgeTarget{Client: &http.Client{Transport: s.transport}, Base: up.URL, Header: s.opts.TenancyHeader,
		Minter: s.opts.Minter, AdminRole: s.opts.AdminRole}, tenantID)
}
