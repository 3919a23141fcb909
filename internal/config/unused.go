package config

import (
	"fmt"
	"slices"
	"strings"
)

// unusedWarnings lists the settings that are set but change nothing because of the
// value of another: the JWT settings with authentication off (a secret set and the
// switch forgotten leaves every route open), the JWKS timings without a JWKS URL, the
// tenancy usage interval without tenancy, the OpenTelemetry settings with tracing off,
// the push statements' parallel minimum when pushes are never combined, and a commit
// stall bound set at or above the in-flight deadline, which ends such statements first.
// The TLS settings without PG_USE_SSL are pgTLSWarnings'.
func (c *Config) unusedWarnings() []string {
	var ws []string
	unused := func(names []string, why string) {
		if set := c.setOnly(names); len(set) > 0 {
			verb := " is"
			if len(set) > 1 {
				verb = " are"
			}
			ws = append(ws, strings.Join(set, ", ")+verb+" set but unused: "+why)
		}
	}
	if !c.JWTEnabled {
		unused(namesWithPrefix("JWT_", "JWT_ENABLED"),
			"JWT_ENABLED=false, so authentication is off and every route is open")
	} else if c.JWTJWKSURL == "" {
		unused([]string{"JWT_JWKS_REFRESH_INTERVAL", "JWT_JWKS_TIMEOUT_MS"}, "no JWT_JWKS_URL to fetch keys from")
	}
	if c.TenancyHeader == "" {
		unused([]string{"QUEEN_TENANCY_USAGE_INTERVAL"}, "QUEEN_TENANCY_HEADER is unset, so tenancy is off")
	}
	if !c.Tracing.Enabled() {
		except := []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER"}
		why := "OTEL_TRACES_EXPORTER=none, so no span is recorded or exported"
		if c.Tracing.Disabled {
			except, why = except[:1], "OTEL_SDK_DISABLED=true turns tracing off"
		}
		unused(namesWithPrefix("OTEL_", except...), why)
	}
	if c.PushMaxBatchSize <= 1 { // 0 counts as 1
		unused([]string{"QUEEN_PUSH_PARALLEL_MIN_MESSAGES"},
			fmt.Sprintf("QUEEN_PUSH_MAX_BATCH_SIZE=%d, so pushes are never combined and each starts its own statement",
				c.PushMaxBatchSize))
	}
	if d := c.InflightDeadline(); c.Source("QUEEN_DB_COMMIT_STALL_MS") != SourceDefault && c.DBCommitStall > 0 && d > 0 && c.DBCommitStall >= d {
		ws = append(ws, fmt.Sprintf("QUEEN_DB_COMMIT_STALL_MS=%d does nothing: a statement unanswered for %d ms "+
			"(LIBQUEEN_INFLIGHT_DEADLINE_MS) has its connection closed first", c.DBCommitStall.Milliseconds(), d.Milliseconds()))
	}
	return ws
}

// setOnly returns the names, in order, whose value does not come from the default.
func (c *Config) setOnly(names []string) []string {
	var set []string
	for _, n := range names {
		if c.Source(n) != SourceDefault {
			set = append(set, n)
		}
	}
	return set
}

// namesWithPrefix lists, sorted, the settings whose names start with prefix, but for
// those in except.
func namesWithPrefix(prefix string, except ...string) []string {
	var names []string
	for _, s := range sortedTable() {
		if strings.HasPrefix(s.name, prefix) && !slices.Contains(except, s.name) {
			names = append(names, s.name)
		}
	}
	return names
}
