package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/proxy/tenant"
	"github.com/queenmq/queen/internal/testlog"
)

// Credentials in the query are refused wherever a server could read them: in pairs
// split at ';' as well as '&', under an escaped name, behind a bad escape; and a query
// string that does not parse is refused too, so that no pair the proxy cannot read
// reaches a broker.
func TestQueryCredentialsAreRefusedInEveryForm(t *testing.T) {
	t.Parallel()
	_, key := tenant.NewKey()
	s := &Server{logger: testlog.Logger(t), opts: Options{TenancyHeader: "X-Queen-Tenant"}}
	for _, tc := range []struct {
		name, query string
		want        api.ErrorCode // "" = passes
	}{
		{"Plain", "queue=orders&timeout=1000", ""},
		{"Empty", "", ""},
		{"TokenParam", "token=abc", codeCredentialsInQuery},
		{"AnyCase", "Access_Token=abc", codeCredentialsInQuery},
		{"KeyValue", "x=" + key, codeCredentialsInQuery},
		{"AfterASemicolon", "a=1;token=" + key, codeCredentialsInQuery},
		{"KeyAfterASemicolon", "a=1;x=" + key, codeCredentialsInQuery},
		{"BehindABadEscape", "token=%zz" + key, codeCredentialsInQuery},
		{"EscapedName", "api%5Fkey=abc", codeCredentialsInQuery},
		{"EscapedKey", "x=%71k_" + key[3:], codeCredentialsInQuery},
		{"KeyAsAName", key, codeCredentialsInQuery},
		{"BearerWord", "auth=Bearer+" + key, codeCredentialsInQuery},
		{"BadEscape", "x=%zz", codeInvalidArgument},
		{"Semicolon", "a=1;b=2", codeInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodGet, "/api/v1/messages", nil)
			r.URL.RawQuery = tc.query
			err := s.checkRequest(r)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			var ae *apiError
			require.True(t, errors.As(err, &ae), "%v", err)
			require.Equal(t, http.StatusBadRequest, ae.status)
			require.Equal(t, tc.want, ae.code)
		})
	}
}

// A key refused in the query is logged by its id, never its text, under whatever
// name it came: a credential name (api_key=, token=), another name, or as the name.
func TestQueryKeysAreLoggedByID(t *testing.T) {
	t.Parallel()
	for _, form := range []string{"api_key=%s", "token=%s", "access_token=Bearer+%s", "x=%s", "%s"} {
		t.Run(form, func(t *testing.T) {
			t.Parallel()
			id, key := tenant.NewKey()
			var logs testlog.Buffer
			s := &Server{logger: slog.New(slog.NewTextHandler(&logs, nil)), opts: Options{TenancyHeader: "X-Queen-Tenant"}}
			r := httptest.NewRequest(http.MethodGet, "/api/v1/messages", nil)
			r.URL.RawQuery = fmt.Sprintf(form, key)
			var ae *apiError
			require.True(t, errors.As(s.checkRequest(r), &ae))
			require.Equal(t, codeCredentialsInQuery, ae.code)
			require.Equal(t, 1, strings.Count(logs.String(), "key_id="+id), "logged once by its id: %s", logs.String())
			require.NotContains(t, logs.String(), key)
		})
	}
}
