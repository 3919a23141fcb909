package proxytest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Header is the tenancy header the shim announces.
const Header = "X-Queen-Tenant"

// Shim is a tenancy-on stand-in in front of one real broker.
type Shim struct {
	// URL is the shim's base URL, to give the proxy as an upstream.
	URL string

	tenant string
	db     *pgxpool.Pool
	mu     sync.Mutex
	seen   []string // tenancy header values of forwarded requests
	hits   int      // forwarded API requests (not health or tenancy probes)
}

// NewShim serves a shim for the broker at brokerURL whose database is brokerDBURL;
// the usage it reports is all the broker stores, attributed to tenantID.
func NewShim(t testing.TB, brokerURL, brokerDBURL, tenantID string) *Shim {
	t.Helper()
	target, err := url.Parse(brokerURL)
	if err != nil {
		t.Fatal(err)
	}
	db, err := pgxpool.New(context.Background(), brokerDBURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	s := &Shim{tenant: tenantID, db: db}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	mux := http.NewServeMux()
	mux.HandleFunc("GET /internal/api/tenancy", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"enabled": true, "header": Header, "separator": ":"})
	})
	mux.HandleFunc("GET /internal/api/tenancy/usage", s.usage)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health/ready" {
			s.mu.Lock()
			s.hits++
			s.seen = append(s.seen, r.Header.Get(Header))
			s.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Hits is the number of API requests forwarded to the broker so far.
func (s *Shim) Hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits
}

// Tenants returns the tenancy header of every forwarded request, in order.
func (s *Shim) Tenants() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

func (s *Shim) usage(w http.ResponseWriter, r *http.Request) {
	var messages, bytes, partitions int64
	var queues []string
	err := s.db.QueryRow(r.Context(), `SELECT count(*), coalesce(sum(pg_column_size(payload)), 0) FROM queen.messages`).
		Scan(&messages, &bytes)
	if err == nil {
		err = s.db.QueryRow(r.Context(), `SELECT coalesce(array_agg(name ORDER BY name), '{}'), (SELECT count(*) FROM queen.partitions) FROM queen.queues`).
			Scan(&queues, &partitions)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, map[string]any{"computedAt": time.Now().UTC(), "tenants": []map[string]any{{
		"tenant": s.tenant, "queues": queues, "partitions": partitions, "messages": messages, "bytes": bytes,
	}}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
