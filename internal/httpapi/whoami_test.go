package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/auth"
)

func TestWhoami(t *testing.T) {
	t.Parallel()

	t.Run("AuthOff", func(t *testing.T) {
		t.Parallel()
		b := noDBServer(t, Options{})
		r := b.do(t, http.MethodGet, "/api/v1/auth/whoami", "", "Authorization", "Bearer garbage")
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"authEnabled":false,"sub":null,"level":"admin","exp":null}`, string(r.body))
	})

	for _, mode := range []struct {
		name string
		new  func(*testing.T) (*auth.Verifier, signer)
	}{{"HS256", hsMode}, {"AutoJWKS", jwksMode}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			v, sg := mode.new(t)
			b := noDBServer(t, Options{Verifier: v})
			exp := time.Now().Add(time.Hour).Unix()
			for _, role := range []string{"read-only", "read-write", "admin"} {
				r := b.do(t, http.MethodGet, "/api/v1/auth/whoami", "", bearer(sg.token(t, "alice", role, "exp", exp))...)
				requireStatus(t, http.StatusOK, r)
				require.JSONEq(t, `{"authEnabled":true,"sub":"alice","level":"`+role+`","exp":`+itoa(int(exp))+`}`, string(r.body))
			}
			// The highest level of every role the token carries, from the array claim too.
			r := b.do(t, http.MethodGet, "/api/v1/auth/whoami", "", bearer(sg.token(t, "", "", "sub", nil, "exp", nil,
				"roles", []any{"read-only", "read-write", "other"}))...)
			requireStatus(t, http.StatusOK, r)
			require.JSONEq(t, `{"authEnabled":true,"sub":null,"level":"read-write","exp":null}`, string(r.body))

			noRole := sg.token(t, "nobody", "")
			requireForbidden(t, b.do(t, http.MethodGet, "/api/v1/auth/whoami", "", bearer(noRole)...), noRole)
			requireUnauthenticated(t, b.get(t, "/api/v1/auth/whoami"), auth.MsgAuthRequired, "")
			bad := sg.sign(t, sg.wrong, "mallory", "admin")
			requireUnauthenticated(t, b.do(t, http.MethodGet, "/api/v1/auth/whoami", "", bearer(bad)...), auth.MsgBadSignature, bad)
		})
	}

	t.Run("CustomRoleNames", func(t *testing.T) {
		t.Parallel()
		v, err := auth.NewVerifier(auth.Config{Algorithm: "HS256", Secret: testJWTSecret, Audience: testJWTAudience,
			Roles: auth.RoleNames{Claim: "grade", ArrayClaim: "grades", Admin: "boss", ReadWrite: "worker", ReadOnly: "viewer"}})
		require.NoError(t, err)
		_, sg := hsMode(t)
		b := noDBServer(t, Options{Verifier: v})
		r := b.do(t, http.MethodGet, "/api/v1/auth/whoami", "", bearer(sg.token(t, "carol", "admin", "grade", "worker"))...)
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, "read-write", r.object(t)["level"], "the configured role names decide, not the role claim")
	})

	t.Run("SkipListed", func(t *testing.T) {
		t.Parallel()
		v, sg := hsMode(t)
		b := noDBServer(t, Options{Verifier: v, AuthSkipPaths: []string{"/api/v1/auth/whoami"}})
		r := b.do(t, http.MethodGet, "/api/v1/auth/whoami", "", bearer(sg.token(t, "dave", "read-only", "exp", nil))...)
		requireStatus(t, http.StatusOK, r)
		require.JSONEq(t, `{"authEnabled":true,"sub":"dave","level":"read-only","exp":null}`, string(r.body))
		requireUnauthenticated(t, b.get(t, "/api/v1/auth/whoami"), auth.MsgAuthRequired, "")
		noRole := sg.token(t, "nobody", "")
		requireForbidden(t, b.do(t, http.MethodGet, "/api/v1/auth/whoami", "", bearer(noRole)...), noRole)
	})
}
