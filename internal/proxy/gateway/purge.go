package gateway

import (
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

// Purge deletes every queue the tenant has at the broker (their messages,
// partitions and consumer state go with them) and returns how many it deleted. It
// lists the queues in the tenant's scope, then deletes them one by one, so a
// failure midway leaves the rest for the next purge.
func Purge(ctx context.Context, t PurgeTarget, tenantID string) (int, error) {
	var list struct {
		Queues []struct {
			Name string `json:"name"`
		} `json:"queues"`
	}
	if err := t.call(ctx, http.MethodGet, "/api/v1/resources/queues", tenantID, &list); err != nil {
		return 0, err
	}
	n := 0
	for _, q := range list.Queues {
		if err := t.call(ctx, http.MethodDelete, "/api/v1/resources/queues/"+url.PathEscape(q.Name), tenantID, nil); err != nil {
			return n, fmt.Errorf("delete queue %q: %w", q.Name, err)
		}
		n++
	}
	return n, nil
}

func (t PurgeTarget) call(ctx context.Context, method, path, tenantID string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, purgeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, t.Base.String()+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set(t.Header, tenantID)
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
	case resp.StatusCode == http.StatusNotFound && method == http.MethodDelete:
		return nil // gone already
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
