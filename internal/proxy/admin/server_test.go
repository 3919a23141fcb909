package admin

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/tenant"
)

// The admin API's error bodies keep their keys in sorted order (code, error, field),
// byte for byte: scripts written against it may compare them.
func TestErrorBodyBytes(t *testing.T) {
	t.Parallel()
	s := New(Options{Token: "secret"})

	t.Run("UnknownRoute", func(t *testing.T) {
		t.Parallel()
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/admin/v2/nothing", nil))
		require.Equal(t, http.StatusNotFound, rec.Code)
		require.Equal(t, `{"code":"not_found","error":"Not found"}`+"\n", rec.Body.String())
	})

	for _, tc := range []struct {
		name   string
		err    error
		status int
		want   string
	}{
		{"Validation", &tenant.ValidationError{Field: "limit", Msg: "must be an integer"}, http.StatusBadRequest,
			`{"code":"invalid_argument","error":"limit: must be an integer","field":"limit"}`},
		{"BadRequest", badRequest("invalid JSON body: EOF"), http.StatusBadRequest,
			`{"code":"invalid_argument","error":"invalid JSON body: EOF"}`},
		{"AlreadyExists", tenant.ErrAlreadyExists, http.StatusConflict,
			`{"code":"already_exists","error":"already exists"}`},
		{"TenantIDNeverReused", fmt.Errorf("store: %w", tenant.ErrIDNeverReused), http.StatusConflict,
			`{"code":"already_exists","error":"already exists (tenant ids are never reused)"}`},
		{"Unavailable", fmt.Errorf("store: %w", tenant.ErrUnavailable), http.StatusServiceUnavailable,
			`{"code":"unavailable","error":"proxy database unavailable"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			h := s.handle(func(http.ResponseWriter, *http.Request) error { return tc.err })
			h(rec, httptest.NewRequest(http.MethodPost, "/admin/v1/tenants", nil))
			require.Equal(t, tc.status, rec.Code)
			require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			require.Equal(t, tc.want+"\n", rec.Body.String())
		})
	}
}
