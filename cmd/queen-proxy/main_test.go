package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExitCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		code int
		out  string
	}{
		{"BadBoolean", []string{"-check-config"}, []string{"QUEEN_PROXY_LOGIN=maybe"}, exitConfig, "QUEEN_PROXY_LOGIN"},
		{"NonHTTPUpstream", nil, []string{"QUEEN_PROXY_LOGIN=false", "QUEEN_PROXY_UPSTREAMS=tcp://b:1"}, exitConfig, "QUEEN_PROXY_UPSTREAMS"},
		{"CheckOK", []string{"-check-config"}, []string{"QUEEN_PROXY_LOGIN=false"}, exitOK, "configuration OK"},
		{"PrintSchema", []string{"-print-schema"}, nil, exitOK, "CREATE TABLE IF NOT EXISTS queen_proxy.api_keys"},
		{"PrintConfigRedacts", []string{"-print-config"}, []string{"QUEEN_PROXY_LOGIN=false",
			"QUEEN_PROXY_ADMIN_TOKEN=abcdefghijabcdefghijabcdefghij0123"}, exitOK, "QUEEN_PROXY_ADMIN_TOKEN=<redacted>"},
		{"Usage", []string{"bogus"}, nil, exitUsage, ""},
		{"TenancyHeaderInUse", []string{"-check-config"}, []string{"QUEEN_PROXY_LOGIN=false", "QUEEN_TENANCY_HEADER=Authorization"},
			exitConfig, "QUEEN_TENANCY_HEADER"},
		{"CORSNotAnOrigin", []string{"-check-config"}, []string{"QUEEN_PROXY_LOGIN=false", "QUEEN_PROXY_CORS_ALLOWED_ORIGINS=notaurl"},
			exitConfig, "QUEEN_PROXY_CORS_ALLOWED_ORIGINS"},
		{"VersionNamesTheProxy", []string{"-version"}, nil, exitOK, "queen-proxy dev ("},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			require.Equal(t, tc.code, realMain(tc.args, tc.env, nil, &out, &errOut), "%s%s", &out, &errOut)
			require.Contains(t, out.String()+errOut.String(), tc.out)
			require.False(t, strings.Contains(out.String(), "abcdefghijabcdefghij"), "a secret is printed")
		})
	}
}
