package config

import "github.com/queenmq/queen/internal/envvalue"

// only1xVariables are variables that the Queen 1.x brokers read and Queen 0.15 did
// not: one of them set marks an environment written for 1.x.
func only1xVariables() []string {
	return []string{"PG_DATABASE", "JWT_ROLE_WRITE_ONLY", "QUEEN_KV_TRUSTED_PROXY", "QUEEN_POP_AUTOPILOT_BATCH"}
}

// compat1xWarnings explains where queen reads a Queen 1.x environment differently
// from a 1.x broker, for the boot log and `queen -check-config`:
//   - QUEEN_TENANCY_HEADER given as a boolean turns tenancy on with X-Queen-Tenant,
//     where a request without the header (or with the 1.x default tenant's UUID) is a
//     global one, not a tenant of its own;
//   - an environment that looks like a 1.x one (a 1.x-only variable set, or the boolean
//     QUEEN_TENANCY_HEADER) without DEFAULT_SUBSCRIPTION_MODE gets queen's default,
//     all, where 1.x defaults to new.
func (c *Config) compat1xWarnings(env map[string]string) []string {
	var out []string
	looks1x := false
	if raw := env["QUEEN_TENANCY_HEADER"]; raw != "" {
		if on, isBool := envvalue.ParseBool(raw); isBool {
			looks1x = true
			if on {
				out = append(out, "QUEEN_TENANCY_HEADER="+raw+" is read as the Queen 1.x boolean: tenancy is on "+
					"with the header "+TenancyHeader1x+" (a 1.x UUID or a queen tenant id); a request without "+
					"it, or with the 1.x default tenant's UUID, is a global one, which sees every tenant's "+
					"queues, not a tenant of its own (docs/security.md)")
			}
		}
	}
	for _, n := range only1xVariables() {
		if env[n] != "" {
			looks1x = true
		}
	}
	if looks1x && env["DEFAULT_SUBSCRIPTION_MODE"] == "" {
		out = append(out, "DEFAULT_SUBSCRIPTION_MODE is unset in what looks like a Queen 1.x environment: "+
			"queen's default is all (a new consumer group reads the backlog), 1.x's is new (it skips it); "+
			"set DEFAULT_SUBSCRIPTION_MODE=new for the 1.x behaviour, or =all to keep queen's and silence this")
	}
	return out
}
