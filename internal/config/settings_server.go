package config

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/queenmq/queen/internal/envvalue"
)

// serverSettings: the HTTP listener, process identity and the dashboard.
func serverSettings() []setting {
	return []setting{
		{
			name: "HOST", def: "0.0.0.0", group: groupServer,
			doc: "HTTP bind address: an IP address (IPv6 without brackets, `::` for every interface) " +
				"or a host name. Ignored when systemd passes a listening socket (`queen.socket`).",
			bind: func(c *Config) value { return hostValue{p: &c.Host} },
		},
		{
			name: "PORT", def: "6632", group: groupServer,
			doc:  "HTTP port. Ignored when systemd passes a listening socket.",
			bind: func(c *Config) value { return envvalue.Int[int]{P: &c.Port, Min: 1, Max: 65535} },
		},
		{
			name: "QUEEN_INSTANCE", def: "", group: groupServer,
			doc: "Name of this replica, set by the `queen@.service` template (`%i`); " +
				"added to every log line (`instance`) so replicas on one host can be told apart. Queen-only.",
			bind: func(c *Config) value { return envvalue.Text{P: &c.Instance} },
		},
		{
			name: "QUEEN_SHUTDOWN_TIMEOUT", def: "20s", group: groupServer,
			doc: "How long a graceful stop (SIGTERM, SIGINT) may take to answer parked long-polls, " +
				"finish in-flight requests and flush the spool. Keep it below systemd's " +
				"`TimeoutStopSec` (30 s in the shipped unit). Queen-only; a Go duration.",
			bind: func(c *Config) value { return envvalue.Duration{P: &c.ShutdownTimeout, Min: time.Millisecond} },
		},
		{
			name: "QUEEN_SHUTDOWN_DELAY", def: "0s", group: groupServer,
			doc: "On SIGTERM or SIGINT, how long the broker keeps serving after `/health/ready` " +
				"turns 503, before it closes its listener and drains: the time a load balancer or " +
				"Kubernetes needs to stop sending new requests. The stop takes up to this plus " +
				"`QUEEN_SHUTDOWN_TIMEOUT`; it must be less than `QUEEN_SHUTDOWN_TIMEOUT`, and the two together " +
				"less than the unit's `TimeoutStopSec` (30 s), or systemd kills the broker mid-drain. " +
				"0 closes the listener at once. Queen-only; a Go duration.",
			bind: func(c *Config) value { return envvalue.Duration{P: &c.ShutdownDelay, Min: 0} },
		},
		{
			name: "QUEEN_READ_TIMEOUT", def: "1m0s", group: groupServer,
			doc: "How long a client may take to send a whole request, headers and body. A request whose " +
				"body is still arriving then is answered 400 and its connection closed, so a slow or stalled " +
				"upload cannot hold a connection and a request handler. The headers alone must arrive " +
				"within 10 s. It does not limit the " +
				"answer: long-polls (`wait=true`) and streamed answers run as long as they need once the " +
				"request is read. Raise it for clients that send bodies near `QUEEN_MAX_BODY_BYTES` over " +
				"slow links. 0 means no limit. Queen-only; a Go duration.",
			bind: func(c *Config) value { return envvalue.Limit{P: &c.ReadTimeout, Min: time.Second} },
		},
		{
			name: "QUEEN_TENANCY_HEADER", def: "", defDoc: "unset: tenancy off", group: groupServer,
			doc: "Name of the request header that carries a tenant id (e.g. `X-Queen-Tenant`), set when " +
				"queen-proxy fronts this broker (docs/multi-tenant.md). Empty (the default) turns tenancy off: " +
				"the header is ignored and nothing changes. Set, a request with the header is scoped to that " +
				"tenant: its queue names are stored as `<tenant>:<name>` and answered without the prefix, and " +
				"cluster-wide routes refuse it. With `JWT_ENABLED` the token's `queen_tenant` claim decides " +
				"the tenant; without it the header is trusted as is, so only the proxy may reach the broker. " +
				"The Queen 1.x boolean form is accepted too: `true`, `1`, `yes` or `on` (any case) turns " +
				"tenancy on with the header `X-Queen-Tenant`, and `false`, `0`, `no` or `off` turns it off; " +
				"anything else is a header name (no header name can be one of those words). Either way the " +
				"header holds a queen tenant id or, as 1.x clients send it, a UUID (canonical form, any case, " +
				"lowercased); the 1.x default tenant's UUID and a request without the header are global " +
				"(docs/security.md).",
			bind: func(c *Config) value { return tenancyHeaderValue{&c.TenancyHeader} },
		},
		{
			name: "QUEEN_TENANCY_USAGE_INTERVAL", def: "30s", group: groupServer,
			doc: "How often one broker of the cluster recomputes the per-tenant usage that " +
				"`GET /internal/api/tenancy/usage` serves (queues, partitions, stored messages and payload " +
				"bytes per tenant); each run scans the stored messages of the tenants' queues. Runs only while " +
				"`QUEEN_TENANCY_HEADER` is set. Queen-only; a Go duration, at least 1s.",
			bind: func(c *Config) value { return envvalue.Duration{P: &c.TenancyUsageInterval, Min: time.Second} },
		},
		{
			name: "WEBAPP_ROOT", def: "", defDoc: "unset: embedded dashboard", group: groupServer, emptyOK: true,
			doc: "Directory of dashboard files to serve instead of the dashboard built into the binary: " +
				"index.html for every page, each file at its own path and under the hashed /assets/<hash>/ prefix " +
				"(`{{assets}}` in index.html). Set but empty turns the dashboard off (as upstream).",
			bind: func(c *Config) value { return webappValue{&c.WebappRoot, &c.DashboardEnabled} },
		},
		{
			name: "CORS_ALLOWED_ORIGINS", def: "", group: groupServer,
			doc: "Browser origins allowed to call the API, e.g. `https://ops.example.com,http://localhost:5173`. " +
				"Empty (the default) turns CORS off: no `Access-Control-*` headers at all. " +
				"`*` allows any origin and must be written explicitly. An origin is `scheme://host[:port]`, " +
				"with no path, not even a trailing `/`. A request that changes anything sent by a page of an " +
				"origin not listed is refused (docs/security.md). Queen-only.",
			bind: func(c *Config) value { return envvalue.List{P: &c.CORSAllowedOrigins, Check: envvalue.CheckOrigin} },
		},
		{
			name: "QUEEN_PPROF_ADDR", def: "", defDoc: "unset: profiling off", group: groupServer,
			doc: "`host:port` of a separate listener serving Go's profiling endpoints (`/debug/pprof/`), " +
				"e.g. `127.0.0.1:6060`; empty (the default) serves none. They have no authentication, " +
				"so bind them to loopback. See docs/observability.md, \"Profiling\". Queen-only.",
			bind: func(c *Config) value { return envvalue.HostPort{P: &c.PprofAddr} },
		},
		{
			name: "GOGC", def: "200", group: groupServer,
			doc: "Go's garbage-collection target: the heap may grow by this percentage of the live " +
				"heap before the next collection; `off` disables collection until `GOMEMLIMIT` is near. " +
				"Go's own default is 100; queen's is 200, which cut the broker's CPU per message by a " +
				"quarter, and `GOMEMLIMIT` bounds the memory that costs (docs/benchmarks.md). The Go " +
				"runtime reads the same variable. Queen-only.",
			bind: func(c *Config) value { return gcPercentValue{&c.GCPercent} },
		},
		{
			name: "GOMEMLIMIT", def: "24MiB", group: groupServer,
			doc: "Go's soft memory limit: when the memory the Go runtime holds (heap, goroutine stacks, " +
				"its own metadata; not the mapped binary, about 15 MB of the RSS) nears it, the garbage " +
				"collector runs more often than `GOGC` asks and returns free memory to the OS sooner; " +
				"below it `GOGC` alone decides. The broker never fails because of the limit: a working " +
				"set above it makes the collector take up to half the CPU instead. Go's own default is " +
				"`off`; queen's cut the benchmark's peak RSS from about 49 to 36 MB at the same CPU per " +
				"message for batches of 100, and about a quarter more for batches of 1000 " +
				"(docs/benchmarks.md). Raise it, or set `off`, where many clients push or pop large " +
				"batches at once: a 1000-message push holds about 2.5 MB while it runs, an open " +
				"PostgreSQL connection about 45 KB. Bytes with an optional unit (`B`, `KiB`, `MiB`, " +
				"`GiB`, `TiB`), at least 1MiB. The Go runtime reads the same variable before queen " +
				"starts, and stops the process on a value it cannot parse (`64MB`, `64mib`): " +
				"`fatal error: malformed GOMEMLIMIT` and exit status 2, not 78, so systemd restarts it " +
				"until its start limit; `queen -check-config` fails the same way. Queen-only.",
			bind: func(c *Config) value { return memLimitValue{&c.MemoryLimit} },
		},
		{
			name: "QUEEN_ENV_FILES", def: "", defDoc: "unset: SIGHUP reloads nothing", group: groupServer,
			doc: "The env files that SIGHUP (`systemctl reload queen`) re-reads, as absolute paths in the " +
				"order the unit's `EnvironmentFile=` lines load them; a missing file counts as empty. " +
				"systemd does not tell a service which files it read, so the shipped units name theirs here. " +
				"A reload applies a changed `LOG_LEVEL` at once and logs every other changed setting as " +
				"needing a restart; see docs/systemd.md, \"Reloading\". Queen-only.",
			bind: func(c *Config) value { return envvalue.List{P: &c.EnvFiles, Check: checkAbsolutePath} },
		},
	}
}

// checkAbsolutePath accepts a clean absolute path: the daemon may run from any
// directory, and systemd's EnvironmentFile= takes absolute paths only.
func checkAbsolutePath(p string) error {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Errorf("%q is not a clean absolute path", p)
	}
	return nil
}

// postgresSettings: the connection and its timeouts.
// The largest TCP keepalive settings Linux takes (TCP_KEEPIDLE and TCP_KEEPINTVL in
// seconds, TCP_KEEPCNT): a larger value fails the socket option, and the connection
// would keep the operating system's defaults.
const (
	maxKeepaliveSeconds = 32767
	maxKeepaliveCount   = 127
)

func postgresSettings() []setting {
	return []setting{
		{
			name: "PG_HOST", def: "localhost", group: groupPostgres,
			doc: "PostgreSQL host name, IP address, or Unix-socket directory (e.g. `/run/postgresql`); " +
				"or a comma-separated list of them (`db1,db2`), as libpq takes it: each new connection " +
				"tries the hosts in turn and keeps the first that `PG_TARGET_SESSION_ATTRS` accepts, " +
				"so after a failover the broker reconnects to the new primary. Queen-only as a list.",
			bind: func(c *Config) value { return hostListValue{&c.PGHost} },
		},
		{
			name: "PG_PORT", def: "5432", group: groupPostgres,
			doc: "PostgreSQL port, for every host of `PG_HOST`; or a comma-separated list with one port " +
				"per host. Must be numeric (upstream passes any string through).",
			bind: func(c *Config) value { return portListValue{&c.PGPort} },
		},
		{
			name: "PG_TARGET_SESSION_ATTRS", def: "read-write", group: groupPostgres,
			doc: "Which server a new connection may stay on, as libpq's `target_session_attrs`, checked " +
				"on every new connection (to each host of a list, and behind a single address such as " +
				"HAProxy or a virtual IP that follows the primary): `read-write` (the default) keeps one where " +
				"`transaction_read_only` is off; `primary` one that is not in recovery; `any` the first " +
				"that answers. `read-only`, `standby` and `prefer-standby` are refused: the broker " +
				"writes. Queen-only.",
			bind: func(c *Config) value {
				return envvalue.TargetSessionAttrs{P: &c.PGTargetSessionAttrs, Writer: "the broker writes on every push, pop and ack"}
			},
		},
		{
			name: "PG_DB", def: "postgres", group: groupPostgres,
			doc: "Database name. queen keeps everything in the `queen` schema of this database. " +
				"The Queen 1.x brokers' name for it is `PG_DATABASE`, which wins when both are set.",
			bind: func(c *Config) value { return envvalue.Text{P: &c.pgDBLegacy} },
		},
		{
			name: "PG_DATABASE", def: "", defDoc: "unset: `PG_DB`", group: groupPostgres,
			doc: "Database name, as the Queen 1.x brokers call it (`PG_DB` is the legacy name). " +
				"When both are set, `PG_DATABASE` wins and the boot log warns, naming both values.",
			bind: func(c *Config) value { return envvalue.Text{P: &c.PGDatabase} },
		},
		{
			name: "QUEEN_APPLY_SCHEMA", def: "true", group: groupPostgres,
			doc: "Apply the embedded schema at boot (the DDL `queen schema` prints). false: the broker " +
				"runs no DDL at all, so its role needs only the grants of docs/postgresql.md, " +
				"\"Least privilege\"; it checks at boot that the database holds the schema this " +
				"release needs (or a newer one) and otherwise exits with status 78, and it builds no " +
				"missing index (it logs the statements for the schema's owner instead). A DBA applies " +
				"each release's `queen schema` output before the brokers are upgraded.",
			bind: func(c *Config) value { return envvalue.Bool{P: &c.ApplySchema} },
		},
		{
			name: "PG_USER", def: "postgres", group: groupPostgres,
			doc:  "Database role.",
			bind: func(c *Config) value { return envvalue.Text{P: &c.PGUser} },
		},
		{
			name: "PG_PASSWORD", def: "postgres", group: groupPostgres, secret: true, emptyOK: true,
			doc: "Password of `PG_USER`. Set but empty means no password (peer or trust authentication, " +
				"or a `.pgpass` file), as upstream. Best given as the systemd credential `PG_PASSWORD`.",
			bind: func(c *Config) value { return envvalue.Text{P: &c.PGPassword} },
		},
		{
			name: "PG_USE_SSL", def: "false", group: groupPostgres,
			doc: "Use TLS to PostgreSQL: false → `sslmode=disable`; true → `sslmode=verify-full`: the " +
				"server's certificate must chain to a trusted CA (`PG_SSL_ROOT_CERT`, else the system's " +
				"CAs) and name the host connected to. Upstream's true is `sslmode=require`, which " +
				"verifies nothing. Not used over a Unix socket.",
			bind: func(c *Config) value { return envvalue.Bool{P: &c.PGUseSSL} },
		},
		{
			name: "PG_SSL_REJECT_UNAUTHORIZED", def: "true", group: groupPostgres,
			doc: "Only with `PG_USE_SSL=true`: false accepts a server whose certificate is not verified " +
				"(`sslmode=require`: encrypted, but anyone on the network path can pose as the server), " +
				"and the broker logs a warning at boot. Upstream's false is `sslmode=prefer`, which " +
				"also falls back to plain text.",
			bind: func(c *Config) value { return envvalue.Bool{P: &c.PGSSLRejectUnauthorized} },
		},
		{
			name: "PG_SSL_ROOT_CERT", def: "", defDoc: "unset: the system's CAs", group: groupPostgres, credential: true,
			doc: "The CA certificates that the server's certificate must chain to, as PEM text " +
				"(`\\n` for line breaks in an env file) or the path of a PEM file; also read as the " +
				"systemd credential `PG_SSL_ROOT_CERT`. Unset, the system's CAs are trusted, so a " +
				"self-signed server is refused. Only with `PG_USE_SSL=true`.",
			bind: func(c *Config) value {
				return pemSourceValue{&c.PGSSLRootCert, &c.pgTLS.rootCert, checkCertificates}
			},
		},
		{
			name: "PG_SSL_CERT", def: "", defDoc: "unset: none", group: groupPostgres, credential: true,
			doc: "Client certificate (PEM text or file path; also a systemd credential) presented to a " +
				"server that asks for one (`pg_hba.conf` method `cert`, or `clientcert=verify-full`). " +
				"Set together with `PG_SSL_KEY`. Only with `PG_USE_SSL=true`. Queen-only.",
			bind: func(c *Config) value {
				return pemSourceValue{&c.PGSSLCert, &c.pgTLS.cert, checkCertificates}
			},
		},
		{
			name: "PG_SSL_KEY", def: "", defDoc: "unset: none", group: groupPostgres, secret: true,
			doc: "Private key of `PG_SSL_CERT`, unencrypted, as PEM text or file path. Best given as the " +
				"systemd credential `PG_SSL_KEY`. Queen-only.",
			bind: func(c *Config) value {
				return pemSourceValue{&c.PGSSLKey, &c.pgTLS.key, checkPrivateKey}
			},
		},
		{
			name: "DB_POOL_SIZE", def: "150", group: groupPostgres,
			doc: "Maximum number of PostgreSQL connections in this process's pool; three more are held outside " +
				"it: the wake-up listener and the two of the commit watch. Unlike upstream, which opens floor(0.95 × value) connections " +
				"at startup plus `SIDECAR_POOL_SIZE` more, queen has one pool and opens connections lazily, " +
				"up to this many. Size `max_connections` for this plus three, summed over the replicas. " +
				"At least 2 (upstream refuses 1 too). A maintenance job's cycle and the timer loop's each hold one " +
				"connection while their statements take others, so at most one fewer of them run at once than this " +
				"(two jobs and the timer loop from 4 up): with a small pool they take turns.",
			bind: func(c *Config) value { return envvalue.Int[int]{P: &c.DBPoolSize, Min: 2, Max: envvalue.NoMax} },
		},
		{
			name: "DB_CONNECTION_TIMEOUT", def: "2000", group: groupPostgres,
			doc: "Connect timeout in milliseconds, rounded up to whole seconds (at least 1), as libpq's " +
				"`connect_timeout` takes it; each connection attempt waits that long. Upstream turns values " +
				"under 1000 into \"wait forever\"; queen never waits forever.",
			bind: func(c *Config) value { return ms(&c.DBConnectionTimeout, 1) },
		},
		{
			name: "DB_STATEMENT_TIMEOUT", def: "30000", group: groupPostgres,
			doc: "`statement_timeout` of every connection, in milliseconds; 0 means none, whatever the role or " +
				"database sets. A statement left unanswered longer (a frozen server) is ended by " +
				"`LIBQUEEN_INFLIGHT_DEADLINE_MS`. " +
				"Not truncated to 16 bits as upstream's engine connections are.",
			bind: func(c *Config) value { return ms(&c.DBStatementTimeout, 0) },
		},
		{
			name: "DB_LOCK_TIMEOUT", def: "10000", group: groupPostgres,
			doc:  "`lock_timeout` in milliseconds; 0 means none, whatever the role or database sets.",
			bind: func(c *Config) value { return ms(&c.DBLockTimeout, 0) },
		},
		{
			name: "DB_IDLE_TIMEOUT", def: "30000", group: groupPostgres,
			doc: "Despite the name, `idle_in_transaction_session_timeout` in milliseconds (as upstream); " +
				"0 means none, whatever the role or database sets. It is not a pool idle timeout.",
			bind: func(c *Config) value { return ms(&c.DBIdleTimeout, 0) },
		},
		{
			name: "LIBQUEEN_INFLIGHT_DEADLINE_MS", def: "0", group: groupPostgres,
			defDoc: "`DB_STATEMENT_TIMEOUT` + 5000",
			doc: "How long a statement may go unanswered, in milliseconds, before its connection is closed and " +
				"the request answered as on a lost connection (a push goes to the spool): a server alive but " +
				"silent (stopped, paused, a commit waiting for a synchronous standby that is gone), which " +
				"neither `statement_timeout` nor TCP ends. 0 or unset: `DB_STATEMENT_TIMEOUT` + 5000, and no " +
				"limit when `DB_STATEMENT_TIMEOUT` is 0. Values under 2000 are raised to 2000, as the Queen " +
				"1.x brokers do. A pipeline of n statements may have n times as long while the server answers a statement of the broker's own (looked at after the first deadline, within 2 s): a silent server ends it after one deadline and that look. A value at or below " +
				"`DB_STATEMENT_TIMEOUT`, or with it 0, also ends statements a running server is still working " +
				"on (503, not the 504 of `statement_timeout`): the start log warns.",
			bind: func(c *Config) value { return ms(&c.DBInflightDeadline, 0) },
		},
		{
			name: "QUEEN_DB_COMMIT_STALL_MS", def: "2000", group: groupPostgres,
			doc: "How long a statement may wait for a synchronous standby to confirm its commit (or for a " +
				"lock held by one that does), in milliseconds, before its connection is closed, its backend " +
				"cancelled and the request answered as on a lost connection (a push goes to the spool, the " +
				"rest answer 503). From then until a commit is confirmed again, pushes go straight to the " +
				"spool. This is a primary with no synchronous standby to confirm commits (Patroni's " +
				"`synchronous_mode_strict` while the standby is down); see docs/high-availability.md. 0 turns " +
				"it off: such statements wait for `LIBQUEEN_INFLIGHT_DEADLINE_MS`. At or above that deadline " +
				"it does nothing. Queen-only.",
			bind: func(c *Config) value { return ms(&c.DBCommitStall, 0) },
		},
		{
			name: "DB_TCP_USER_TIMEOUT_MS", def: "30000", group: groupPostgres,
			doc:  "TCP user timeout (Linux `TCP_USER_TIMEOUT`) of PostgreSQL sockets, in milliseconds; 0 means the OS default.",
			bind: func(c *Config) value { return ms(&c.DBTCPUserTimeout, 0) },
		},
		{
			name: "DB_KEEPALIVES_IDLE", def: "60", group: groupPostgres,
			doc: "TCP keepalive idle time of PostgreSQL sockets, in seconds; 0 means the OS default. " +
				"Keepalives are always on. At most 32767, Linux's limit.",
			bind: func(c *Config) value {
				return envvalue.Unit{P: &c.DBKeepalivesIdle, Unit: time.Second, Max: maxKeepaliveSeconds}
			},
		},
		{
			name: "DB_KEEPALIVES_INTERVAL", def: "10", group: groupPostgres,
			doc: "TCP keepalive probe interval, in seconds; 0 means the OS default. At most 32767, Linux's limit.",
			bind: func(c *Config) value {
				return envvalue.Unit{P: &c.DBKeepalivesInterval, Unit: time.Second, Max: maxKeepaliveSeconds}
			},
		},
		{
			name: "DB_KEEPALIVES_COUNT", def: "3", group: groupPostgres,
			doc: "Unanswered keepalive probes before the connection is dropped; 0 means the OS default. " +
				"At most 127, Linux's limit.",
			bind: func(c *Config) value {
				return envvalue.Int[int]{P: &c.DBKeepalivesCount, Min: 0, Max: maxKeepaliveCount}
			},
		},
	}
}
