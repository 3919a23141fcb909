package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// maxJWKSBytes bounds a JWKS document; real ones are a few KiB.
const maxJWKSBytes = 1 << 20

// jwksRetryAfterFailure is the longest wait before the timer retries a failed fetch.
const jwksRetryAfterFailure = 30 * time.Second

// jwksRefetchAfterFailure is how soon after a failed fetch a token whose kid is not
// cached may fetch again (when minRefetch is longer): the 503 such a token gets says
// Retry-After: 1, and a client that waits that long should find the keys if the JWKS
// is back, not the previous failure.
const jwksRefetchAfterFailure = time.Second

// jwksCache holds the keys of one JWKS URL. Readers never block on it: the key set is
// swapped atomically. Fetches are serialised by fetchMu, so a burst of tokens with an
// unknown kid triggers one fetch, and at most one per minRefetch.
type jwksCache struct {
	url        string
	client     *http.Client
	timeout    time.Duration
	interval   time.Duration
	minRefetch time.Duration
	now        func() time.Time
	logger     *slog.Logger

	keys atomic.Pointer[[]jwksKey]

	fetchMu sync.Mutex
	// lastAttempt and lastErr describe the latest fetch; guarded by fetchMu.
	lastAttempt time.Time
	lastErr     error
}

// lookup returns the cached keys a token of alg with kid may be verified with. A
// token without a kid may be verified by any key of its type. known reports that kid
// names a cached key, even one of another type.
func (c *jwksCache) lookup(kid, alg string) (keys []jwksKey, known bool) {
	p := c.keys.Load()
	if p == nil {
		return nil, false
	}
	for _, k := range *p {
		if kid != "" && k.kid != kid {
			continue
		}
		known = true
		if slices.Contains(k.algs, alg) {
			keys = append(keys, k)
		}
	}
	return keys, known
}

// keysFor returns the keys for a token, re-fetching the JWKS (rate-limited) when the
// kid is not cached. The errors are *Error values: unknown kid (401), a kid whose key
// is of another type (401), or keys unavailable (503) when the JWKS cannot be fetched
// and nothing cached fits.
func (c *jwksCache) keysFor(ctx context.Context, kid, alg string) ([]jwksKey, error) {
	keys, known := c.lookup(kid, alg)
	if len(keys) > 0 {
		return keys, nil
	}
	if known {
		return nil, unauthenticated(MsgKeyAlgorithmMismatch)
	}
	fetchErr := c.refetch(ctx)
	keys, known = c.lookup(kid, alg)
	switch {
	case len(keys) > 0:
		return keys, nil
	case known:
		return nil, unauthenticated(MsgKeyAlgorithmMismatch)
	case fetchErr != nil:
		return nil, keysUnavailable()
	}
	return nil, unauthenticated(MsgUnknownKeyID)
}

// refetch fetches the JWKS unless a fetch was attempted within minRefetch (within
// jwksRefetchAfterFailure when that one failed), and returns the outcome of the latest
// attempt (this one or the recent one). Callers that queued behind a fetch in progress
// find it recent and do not fetch again.
func (c *jwksCache) refetch(ctx context.Context) error {
	c.fetchMu.Lock()
	defer c.fetchMu.Unlock()
	limit := c.minRefetch
	if c.lastErr != nil {
		limit = min(limit, jwksRefetchAfterFailure)
	}
	if !c.lastAttempt.IsZero() && c.now().Sub(c.lastAttempt) < limit {
		return c.lastErr
	}
	// Detached: requests queued behind this fetch need it even if this client leaves.
	return c.fetchLocked(context.WithoutCancel(ctx), "unknown kid")
}

// refresh fetches the JWKS now (the timer's path; not rate-limited).
func (c *jwksCache) refresh(ctx context.Context, reason string) error {
	c.fetchMu.Lock()
	defer c.fetchMu.Unlock()
	return c.fetchLocked(ctx, reason)
}

// fetchLocked fetches within the JWKS timeout and, on success, replaces the cached
// keys; a failure keeps the old ones. Caller holds fetchMu.
func (c *jwksCache) fetchLocked(ctx context.Context, reason string) error {
	fctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	keys, skipped, err := c.fetch(fctx)
	c.lastAttempt, c.lastErr = c.now(), err
	if err != nil && ctx.Err() != nil {
		return err // shutting down; not worth a warning
	}
	if err != nil {
		cached := 0
		if p := c.keys.Load(); p != nil {
			cached = len(*p)
		}
		c.logger.LogAttrs(ctx, slog.LevelWarn, "JWKS fetch failed; keeping the cached keys",
			slog.String("reason", reason), slog.Int("cached_keys", cached), slog.Any("err", err))
		return err
	}
	c.keys.Store(&keys)
	kids := make([]string, len(keys))
	for i, k := range keys {
		kids[i] = k.kid
	}
	c.logger.LogAttrs(ctx, slog.LevelInfo, "JWKS loaded",
		slog.String("reason", reason), slog.Int("keys", len(keys)), slog.Any("kids", kids),
		slog.Any("skipped", skipped))
	return nil
}

// fetch downloads and parses the JWKS. skipped explains the keys left out.
func (c *jwksCache) fetch(ctx context.Context) (keys []jwksKey, skipped []string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("jwks request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("jwks fetch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("jwks fetch: HTTP status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("jwks read: %w", err)
	}
	if len(body) > maxJWKSBytes {
		return nil, nil, fmt.Errorf("jwks document exceeds %d bytes", maxJWKSBytes)
	}
	return parseJWKS(body)
}

// parseJWKS parses a {"keys":[...]} document; zero usable keys is an error.
func parseJWKS(body []byte) (keys []jwksKey, skipped []string, err error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, nil, fmt.Errorf("jwks decode: %w", err)
	}
	for i, raw := range doc.Keys {
		var j jwk
		if err := json.Unmarshal(raw, &j); err != nil {
			skipped = append(skipped, fmt.Sprintf("keys[%d]: %v", i, err))
			continue
		}
		k, err := parseJWK(j)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("keys[%d] (kid %q): %v", i, j.Kid, err))
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, skipped, errors.New("jwks has no usable RSA or Ed25519 signing key")
	}
	return keys, skipped, nil
}

// run fetches at once, then every interval (sooner after a failure), until ctx ends.
func (c *jwksCache) run(ctx context.Context) {
	reason := "start"
	for {
		wait := c.interval
		if err := c.refresh(ctx, reason); err != nil {
			wait = min(wait, jwksRetryAfterFailure)
		}
		reason = "timer"
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
