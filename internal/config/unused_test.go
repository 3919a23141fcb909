package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSettingsLeftUnusedWarn: a setting another's value leaves without effect is named
// in a warning with the reason, and the same setting where it applies is not.
func TestSettingsLeftUnusedWarn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		environ   []string
		want      string // a warning that contains this ("" = no warning)
		wantCount int
	}{
		{"JWTSettingsWithAuthOff", []string{"JWT_SECRET=s", "JWT_ISSUER=me"},
			"JWT_ISSUER, JWT_SECRET are set but unused: JWT_ENABLED=false, so authentication is off and every route is open", 1},
		{"JWTSettingsWithAuthOn", []string{"JWT_ENABLED=true", "JWT_SECRET=s", "JWT_ISSUER=me"}, "", 0},
		{"JWKSTimingsWithoutAURL", []string{"JWT_ENABLED=true", "JWT_SECRET=s", "JWT_JWKS_TIMEOUT_MS=900"},
			"JWT_JWKS_TIMEOUT_MS is set but unused: no JWT_JWKS_URL", 1},
		{"JWKSTimingsWithAURL", []string{"JWT_ENABLED=true", "JWT_ALGORITHM=RS256", "JWT_JWKS_URL=https://idp.example/jwks",
			"JWT_JWKS_TIMEOUT_MS=900"}, "", 0},
		{"TenancyUsageWithoutTenancy", []string{"QUEEN_TENANCY_USAGE_INTERVAL=10s"},
			"QUEEN_TENANCY_USAGE_INTERVAL is set but unused: QUEEN_TENANCY_HEADER is unset", 1},
		{"TenancyUsageWithTenancy", []string{"QUEEN_TENANCY_USAGE_INTERVAL=10s", "QUEEN_TENANCY_HEADER=X-Tenant"}, "", 0},
		{"OTLPWithTracingOff", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318"},
			"OTEL_EXPORTER_OTLP_ENDPOINT is set but unused: OTEL_TRACES_EXPORTER=none", 1},
		{"OTLPWithTracingDisabled", []string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_SDK_DISABLED=true"},
			"OTEL_TRACES_EXPORTER is set but unused: OTEL_SDK_DISABLED=true", 1},
		{"ExporterNoneSaidOutright", []string{"OTEL_TRACES_EXPORTER=none"}, "", 0},
		{"OTLPWithTracingOn", []string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318"}, "", 0},
		{"ParallelMinWithoutCombining", []string{"QUEEN_PUSH_MAX_BATCH_SIZE=1", "QUEEN_PUSH_PARALLEL_MIN_MESSAGES=10"},
			"QUEEN_PUSH_PARALLEL_MIN_MESSAGES is set but unused: QUEEN_PUSH_MAX_BATCH_SIZE=1", 1},
		{"ParallelMinWithBatchSizeZero", []string{"QUEEN_PUSH_MAX_BATCH_SIZE=0", "QUEEN_PUSH_PARALLEL_MIN_MESSAGES=10"},
			"QUEEN_PUSH_PARALLEL_MIN_MESSAGES is set but unused: QUEEN_PUSH_MAX_BATCH_SIZE=0", 1},
		{"ParallelMinWithCombining", []string{"QUEEN_PUSH_PARALLEL_MIN_MESSAGES=10"}, "", 0},
		{"CommitStallAtTheDeadline", []string{"QUEEN_DB_COMMIT_STALL_MS=35000"},
			"QUEEN_DB_COMMIT_STALL_MS=35000 does nothing: a statement unanswered for 35000 ms", 1},
		{"CommitStallBelowTheDeadline", []string{"QUEEN_DB_COMMIT_STALL_MS=3000"}, "", 0},
		{"RejectUnauthorizedWithoutTLS", []string{"PG_SSL_REJECT_UNAUTHORIZED=false"},
			"PG_SSL_REJECT_UNAUTHORIZED is set but unused: PG_USE_SSL=false", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := mustLoad(t, tc.environ...).Warnings()
			require.Len(t, w, tc.wantCount, strings.Join(w, "\n"))
			if tc.want != "" {
				require.Contains(t, w[0], tc.want)
			}
		})
	}
}
