package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/queenmq/queen/internal/editdistance"
)

// unusedGroup is a family of upstream variables that queen accepts for compatibility
// but that change nothing here. Setting one is a warning, never an error.
type unusedGroup struct {
	display string   // how the docs name the family (Markdown); empty: the names, listed
	names   []string // every variable of the family
	secret  bool     // values are never printed; also looked up as credentials
	reason  string   // why nothing reads it, for the warning and the docs
}

// engineTypes are the request types of upstream's batching engine (QUEEN_<TYPE>_*).
func engineTypes() []string {
	return []string{
		"PUSH", "POP", "ACK", "TRANSACTION", "RENEW_LEASE", "CUSTOM",
		"STREAMS_REGISTER", "STREAMS_CYCLE", "STREAMS_STATE_GET",
	}
}

// unusedUpstream lists every variable upstream reads that queen does not implement:
// upstream Queen 0.15's, and the Queen 1.x brokers' that are not settings here.
func unusedUpstream() []unusedGroup {
	var engine, others []string
	for _, t := range engineTypes() {
		if t == "PUSH" {
			continue // settings of queen's push batching
		}
		others = append(others, t)
		for _, s := range []string{"PREFERRED_BATCH_SIZE", "MAX_HOLD_MS", "MAX_BATCH_SIZE", "MAX_CONCURRENT"} {
			engine = append(engine, "QUEEN_"+t+"_"+s)
		}
	}
	const noFusion = "queen combines pushes only (QUEEN_PUSH_*); every other request runs its own statements"
	const static = "queen's push concurrency is the fixed QUEEN_PUSH_MAX_CONCURRENT, not an adaptive limit"
	const noSync = "replicas coordinate through PostgreSQL LISTEN/NOTIFY; there is no UDP sync or its caches"
	return []unusedGroup{
		{names: []string{"NUM_WORKERS"},
			reason: "queen has no worker event loops; the Go runtime schedules requests"},
		{names: []string{"WORKER_ID"},
			reason: "it labels upstream's per-worker metrics rows; queen has no workers"},
		{names: []string{"DB_THREAD_POOL_SERVICE_THREADS"},
			reason: "queen has no background thread pool"},
		{names: []string{"RESPONSE_TIMER_INTERVAL_MS", "RESPONSE_BATCH_SIZE", "RESPONSE_BATCH_MAX"},
			reason: "queen answers each request directly; there is no response timer"},
		{names: []string{"SIDECAR_POOL_SIZE"},
			reason: "queen has one PostgreSQL pool, sized by DB_POOL_SIZE"},
		{names: []string{"QUEEN_CONCURRENCY_MODE"}, reason: static},
		{names: []string{"SIDECAR_MICRO_BATCH_WAIT_MS"},
			reason: "queen reads QUEEN_PUSH_MAX_HOLD_MS only (default 5, upstream's effective default)"},
		{names: []string{"QUEEN_VEGAS_MIN_LIMIT", "QUEEN_VEGAS_MAX_LIMIT", "QUEEN_VEGAS_ALPHA",
			"QUEEN_VEGAS_BETA", "QUEEN_VEGAS_RTT_WINDOW_SAMPLES", "QUEEN_VEGAS_RTT_MIN_WINDOW_SEC",
			"QUEEN_VEGAS_UPDATE_INTERVAL_MS"},
			reason: static},
		{display: "`QUEEN_<TYPE>_{PREFERRED_BATCH_SIZE,MAX_HOLD_MS,MAX_BATCH_SIZE,MAX_CONCURRENT}` for every " +
			"`<TYPE>` in `" + strings.Join(others, "`, `") + "` (the `PUSH` ones are settings)",
			names: engine, reason: noFusion},
		{names: []string{"SIDECAR_MAX_ITEMS_PER_TX", "SIDECAR_MAX_BATCH_SIZE", "SIDECAR_MAX_PENDING_COUNT"},
			reason: "unused by upstream too"},
		{names: []string{"QUEUE_BACKOFF_CLEANUP_THRESHOLD", "STATS_HISTORY_RETENTION_DAYS"},
			reason: "unused by upstream too"},
		{names: []string{"STATS_INTERVAL_MS", "STATS_RECONCILE_INTERVAL_MS"},
			reason: "queen keeps no statistics tables to aggregate or recompute; queue and group " +
				"statistics are counted when they are read"},
		{names: []string{"METRICS_SAMPLE_INTERVAL_MS", "METRICS_AGGREGATE_INTERVAL_S"},
			reason: "queen samples its activity every second and writes one row per " +
				"QUEEN_ANALYTICS_BUCKET, flushed every QUEEN_ANALYTICS_FLUSH_INTERVAL"},
		{names: []string{"QUEEN_UDP_PEERS", "QUEEN_UDP_NOTIFY_PORT", "QUEEN_SYNC_ENABLED",
			"QUEEN_SYNC_HEARTBEAT_MS", "QUEEN_SYNC_DEAD_THRESHOLD_MS", "QUEEN_SYNC_RECV_BUFFER_MB",
			"QUEEN_CACHE_REFRESH_INTERVAL_MS"},
			reason: noSync},
		{names: []string{"QUEEN_SYNC_SECRET"}, secret: true, reason: noSync},
		{names: []string{"QUEEN_CACHE_PARTITION_MAX", "QUEEN_CACHE_PARTITION_TTL_MS"},
			reason: "unused by upstream too"},
		// The Queen 1.x brokers' own names.
		{names: []string{"QUEEN_KV_TRUSTED_PROXY"},
			reason: "a Queen 1.x name; 1.x refuses to start tenancy without it because its key-value " +
				"namespaces are shared by every tenant, while queen scopes each tenant's names itself, " +
				"so tenancy needs no such acknowledgement here"},
	}
}

// clientVariables are read by Queen clients and tools, not by the broker. They are
// often exported in the same shell, so they are ignored without a word.
func clientVariables() []string {
	return []string{"QUEEN_SERVER", "QUEEN_TOKEN", "QUEEN_CONTEXT", "QUEEN_CONFIG", "QUEEN_TEST_DATABASE_URL",
		"QUEEN_SDK_POP_AUTOPILOT"} // the last: Queen 1.x SDKs
}

// checkForeign looks at every variable that is not a setting: an upstream variable we
// do not implement becomes a warning, a client variable or a Kubernetes service link
// is ignored, and any other QUEEN_* variable is recorded as unknown.
func (c *Config) checkForeign(env map[string]string, credDir string) {
	for _, g := range unusedUpstream() {
		for _, n := range g.names {
			if g.secret && credDir != "" {
				if _, ok, _ := readCredential(credDir, n); ok {
					c.warnings = append(c.warnings, fmt.Sprintf(
						"credential %s is accepted but unused by this broker: %s", n, g.reason))
				}
			}
			raw, set := env[n]
			if !set || raw == "" {
				continue
			}
			if g.secret {
				raw = redacted
			} else {
				raw = fmt.Sprintf("%q", raw)
			}
			c.warnings = append(c.warnings, fmt.Sprintf(
				"%s=%s is accepted but unused by this broker: %s", n, raw, g.reason))
		}
	}
	c.unknown = unknownIn(env)
}

// UnknownVariable is a QUEEN_* variable that queen does not know: not a setting, not an
// upstream variable it accepts, not a Queen client's, and not a Kubernetes service
// link. It is most likely a typo that leaves a default in force, so the daemon warns
// about each one at boot and `queen -check-config` fails on them; they never stop the
// daemon, because the environment is not all queen's.
type UnknownVariable struct {
	// Name is the variable. Its value is never reported: it may be a misspelt secret.
	Name string
	// Hint is the known name closest to Name, or "" when none is close.
	Hint string
	// LinkShaped is set when Name is one that Kubernetes gives a Service named queen,
	// but the value does not have the shape Kubernetes gives it (QUEEN_PORT=7000).
	LinkShaped bool
}

// String is the one-line report, e.g.
// `QUEEN_LOG_FROMAT: unknown variable, ignored; did you mean QUEEN_LOG_FORMAT?`.
func (u UnknownVariable) String() string {
	s := u.Name + ": unknown variable, ignored"
	if u.LinkShaped {
		s += " (named like a Kubernetes service-link variable, but its value is not one)"
	}
	if u.Hint != "" {
		s += "; did you mean " + u.Hint + "?"
	}
	return s
}

// UnknownVariables lists, sorted by name, the unknown QUEEN_* and OTEL_* variables of the
// environment the configuration was loaded from.
func (c *Config) UnknownVariables() []UnknownVariable {
	return append([]UnknownVariable(nil), c.unknown...)
}

// FindUnknownVariables lists, sorted by name, the unknown QUEEN_* and OTEL_* variables of
// environ, whether or not the rest of it loads: `queen -check-config` reports them
// next to invalid values too.
func FindUnknownVariables(environ []string) []UnknownVariable {
	return unknownIn(environMap(environ))
}

// unknownIn finds the unknown QUEEN_* and OTEL_* variables of env (an OTEL_* variable
// queen does not list, such as OTEL_PROPAGATORS, is not honoured), with a "did you mean" hint
// for each one close to a name queen knows.
func unknownIn(env map[string]string) []UnknownVariable {
	known := make(map[string]bool)
	for _, s := range table() {
		known[s.name] = true
	}
	for _, n := range clientVariables() {
		known[n] = true
	}
	unused := make(map[string]unusedGroup)
	for _, g := range unusedUpstream() {
		for _, n := range g.names {
			unused[n] = g
		}
	}
	var out []UnknownVariable
	for n, raw := range env {
		if _, ok := unused[n]; ok || known[n] || !(strings.HasPrefix(n, "QUEEN_") || strings.HasPrefix(n, "OTEL_")) || isServiceLink(n, raw) {
			continue
		}
		u := UnknownVariable{Name: n, Hint: closest(n, known, unused), LinkShaped: serviceLinkCheck(n) != nil}
		if u.Hint == "" && u.LinkShaped {
			u.Hint = linkShapedHint(n)
		}
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// linkShapedHint is the setting someone who wrote a service-link name by hand most
// likely meant: QUEEN_PORT=7000 is PORT, QUEEN_SERVICE_HOST=localhost is HOST.
func linkShapedHint(name string) string {
	switch name {
	case "QUEEN_PORT", "QUEEN_SERVICE_PORT":
		return "PORT"
	case "QUEEN_SERVICE_HOST":
		return "HOST"
	}
	return ""
}

// closest returns the known or accepted name nearest to name, if it is within an
// edit distance of 3; ties go to the alphabetically first name.
func closest(name string, known map[string]bool, unused map[string]unusedGroup) string {
	best, bestDist := "", 4
	consider := func(cand string) {
		d := editdistance.Between(name, cand)
		if d < bestDist || (d == bestDist && cand < best) {
			best, bestDist = cand, d
		}
	}
	for n := range known {
		consider(n)
	}
	for n := range unused {
		consider(n)
	}
	return best
}
