package config

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadUnknownQueenVariable(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct{ name, env, want string }{
		{"MissingLetter", "QUEEN_MAX_BODY_BYTE=5",
			"QUEEN_MAX_BODY_BYTE: unknown variable, ignored; did you mean QUEEN_MAX_BODY_BYTES?"},
		{"Transposed", "QUEEN_LOG_FROMAT=text", "QUEEN_LOG_FROMAT: unknown variable, ignored; did you mean QUEEN_LOG_FORMAT?"},
		{"UnusedUpstreamNameIsAHintToo", "QUEEN_SYNC_SECRE=x", "did you mean QUEEN_SYNC_SECRET?"},
		{"NothingClose", "QUEEN_TOTALLY_DIFFERENT=1", "QUEEN_TOTALLY_DIFFERENT: unknown variable, ignored"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Unknown variables never stop the daemon: Load succeeds and lists them.
			c := mustLoad(t, tc.env, "PORT=7000")
			require.Equal(t, 7000, c.Port, "the rest of the environment still applies")
			u := c.UnknownVariables()
			require.Len(t, u, 1)
			name, value, _ := strings.Cut(tc.env, "=")
			require.Equal(t, name, u[0].Name)
			require.Contains(t, u[0].String(), tc.want)
			require.NotContains(t, u[0].String(), "="+value, "the value of an unknown variable may be a misspelled secret")
			require.Equal(t, u, FindUnknownVariables([]string{tc.env, "PORT=7000"}))
			require.Empty(t, c.Warnings(), "unknown variables are not among the warnings -check-config passes")
		})
	}
	u := mustLoad(t, "QUEEN_TOTALLY_DIFFERENT=1").UnknownVariables()
	require.Equal(t, []UnknownVariable{{Name: "QUEEN_TOTALLY_DIFFERENT"}}, u)
	require.NotContains(t, u[0].String(), "did you mean")
}

func TestFindUnknownVariablesBesideInvalidValues(t *testing.T) {
	t.Parallel()

	environ := []string{"PG_USE_SSL=ture", "QUEEN_SHUTDOWN_TIMOUT=1s", "QUEEN_PORT=tcp://10.0.0.1:6632", "QUEEN_AAA=1"}
	require.Contains(t, loadErr(t, environ...), `PG_USE_SSL="ture"`)
	require.NotContains(t, loadErr(t, environ...), "QUEEN_SHUTDOWN_TIMOUT", "an unknown variable is not a Load error")
	require.Equal(t, []UnknownVariable{
		{Name: "QUEEN_AAA"},
		{Name: "QUEEN_SHUTDOWN_TIMOUT", Hint: "QUEEN_SHUTDOWN_TIMEOUT"},
	}, FindUnknownVariables(environ), "sorted by name; the service link is not one")
}

func TestServiceLinks(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name, env string
		link      bool
		hint      string // for a variable that is not a link
	}{
		// What Kubernetes gives every pod for a Service named queen.
		{name: "ServiceHost", env: "QUEEN_SERVICE_HOST=10.0.0.1", link: true},
		{name: "ServiceHostIPv6", env: "QUEEN_SERVICE_HOST=fd00::1", link: true},
		{name: "ServicePort", env: "QUEEN_SERVICE_PORT=6632", link: true},
		{name: "NamedServicePort", env: "QUEEN_SERVICE_PORT_HTTP=6632", link: true},
		{name: "NamedServicePortWithHyphen", env: "QUEEN_SERVICE_PORT_HTTP_ALT=8080", link: true},
		{name: "NamedServicePortWithDigits", env: "QUEEN_SERVICE_PORT_H2C=80", link: true},
		{name: "DockerLinkPort", env: "QUEEN_PORT=tcp://10.0.0.1:6632", link: true},
		{name: "DockerLinkPortIPv6", env: "QUEEN_PORT=tcp://[fd00::1]:6632", link: true},
		{name: "DockerLinkPortUDP", env: "QUEEN_PORT=udp://10.0.0.1:6633", link: true},
		{name: "PortProto", env: "QUEEN_PORT_6632_TCP=tcp://10.0.0.1:6632", link: true},
		{name: "PortProtoSCTP", env: "QUEEN_PORT_9_SCTP=sctp://10.0.0.1:9", link: true},
		{name: "PortProtoProto", env: "QUEEN_PORT_6632_TCP_PROTO=tcp", link: true},
		{name: "PortProtoPort", env: "QUEEN_PORT_6632_TCP_PORT=6632", link: true},
		{name: "PortProtoAddr", env: "QUEEN_PORT_6632_TCP_ADDR=10.0.0.1", link: true},
		{name: "PortProtoUDPAddr", env: "QUEEN_PORT_53_UDP_ADDR=10.0.0.1", link: true},

		// Near misses of the names.
		{name: "Ports", env: "QUEEN_PORTS=tcp://10.0.0.1:6632"},
		{name: "ServiceHostX", env: "QUEEN_SERVICE_HOSTX=10.0.0.1"},
		{name: "ServiceHostTypo", env: "QUEEN_SERVICE_HOTS=10.0.0.1"},
		{name: "LowercasePrefix", env: "queen_PORT=tcp://10.0.0.1:6632"},
		{name: "OtherServiceName", env: "QUEEN_API_SERVICE_HOST=10.0.0.1"},
		{name: "PortNameEmpty", env: "QUEEN_SERVICE_PORT_=6632"},
		{name: "PortNameLowercase", env: "QUEEN_SERVICE_PORT_http=6632"},
		{name: "PortNameTooLong", env: "QUEEN_SERVICE_PORT_ABCDEFGHIJKLMNOP=6632"},
		{name: "PortNameDigitsOnly", env: "QUEEN_SERVICE_PORT_8080=8080"},
		{name: "PortNameDoubleUnderscore", env: "QUEEN_SERVICE_PORT_A__B=1"},
		{name: "PortNumberLeadingZero", env: "QUEEN_PORT_06632_TCP=tcp://10.0.0.1:6632"},
		{name: "PortNumberZero", env: "QUEEN_PORT_0_TCP_PORT=0"},
		{name: "PortNumberTooLarge", env: "QUEEN_PORT_65536_TCP_PORT=65536"},
		{name: "ProtoLowercase", env: "QUEEN_PORT_6632_tcp=tcp://10.0.0.1:6632"},
		{name: "ProtoUnknown", env: "QUEEN_PORT_6632_HTTP=http://10.0.0.1:6632"},
		{name: "SuffixUnknown", env: "QUEEN_PORT_6632_TCP_HOST=10.0.0.1"},
		{name: "NoProto", env: "QUEEN_PORT_6632=tcp://10.0.0.1:6632"},

		// The right names with values Kubernetes never gives them.
		{name: "PortAsPlainNumber", env: "QUEEN_PORT=7000", hint: "PORT"},
		{name: "ServicePortNotANumber", env: "QUEEN_SERVICE_PORT=http", hint: "PORT"},
		{name: "ServiceHostName", env: "QUEEN_SERVICE_HOST=queen.default.svc", hint: "HOST"},
		{name: "DockerLinkUppercaseScheme", env: "QUEEN_PORT=TCP://10.0.0.1:6632", hint: "PORT"},
		{name: "DockerLinkHostName", env: "QUEEN_PORT=tcp://queen:6632", hint: "PORT"},
		{name: "DockerLinkNoPort", env: "QUEEN_PORT=tcp://10.0.0.1", hint: "PORT"},
		{name: "PortProtoOtherPort", env: "QUEEN_PORT_6632_TCP=tcp://10.0.0.1:80"},
		{name: "PortProtoOtherScheme", env: "QUEEN_PORT_6632_TCP=udp://10.0.0.1:6632"},
		{name: "PortProtoProtoUppercase", env: "QUEEN_PORT_6632_TCP_PROTO=TCP"},
		{name: "PortProtoPortOther", env: "QUEEN_PORT_6632_TCP_PORT=80"},
		{name: "PortProtoAddrName", env: "QUEEN_PORT_6632_TCP_ADDR=queen"},
		{name: "ServiceHostEmpty", env: "QUEEN_SERVICE_HOST=", hint: "HOST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name, value, _ := strings.Cut(tc.env, "=")
			require.Equal(t, tc.link, isServiceLink(name, value))
			u := mustLoad(t, tc.env).UnknownVariables()
			if tc.link || !strings.HasPrefix(name, "QUEEN_") {
				require.Empty(t, u, "nothing to report about %s", tc.env)
				return
			}
			require.Len(t, u, 1)
			require.Equal(t, name, u[0].Name)
			require.Equal(t, tc.hint, u[0].Hint)
			require.Equal(t, serviceLinkCheck(name) != nil, u[0].LinkShaped)
		})
	}
}

// TestServiceLinksOfAPodAreSilent: everything Kubernetes gives a pod for a Service
// named queen with two named ports leaves no trace, in the configuration or in print.
func TestServiceLinksOfAPodAreSilent(t *testing.T) {
	t.Parallel()

	environ := []string{
		"QUEEN_SERVICE_HOST=10.96.12.7", "QUEEN_SERVICE_PORT=6632", "QUEEN_SERVICE_PORT_HTTP=6632",
		"QUEEN_SERVICE_PORT_METRICS=9090", "QUEEN_PORT=tcp://10.96.12.7:6632",
		"QUEEN_PORT_6632_TCP=tcp://10.96.12.7:6632", "QUEEN_PORT_6632_TCP_PROTO=tcp",
		"QUEEN_PORT_6632_TCP_PORT=6632", "QUEEN_PORT_6632_TCP_ADDR=10.96.12.7",
		"QUEEN_PORT_9090_TCP=tcp://10.96.12.7:9090", "QUEEN_PORT_9090_TCP_PROTO=tcp",
		"QUEEN_PORT_9090_TCP_PORT=9090", "QUEEN_PORT_9090_TCP_ADDR=10.96.12.7",
		"KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_PORT=tcp://10.96.0.1:443",
	}
	c := mustLoad(t, environ...)
	require.Empty(t, c.UnknownVariables())
	require.Empty(t, c.Warnings())
	require.Empty(t, FindUnknownVariables(environ))
	require.Equal(t, 6632, c.Port)
	require.Equal(t, mustLoad(t).String(), c.String(), "-print-config lists no service link")
	for _, a := range c.LogAttrs() {
		require.NotContains(t, a.Key, "SERVICE_HOST", "the effective-configuration block lists settings only")
		require.NotContains(t, a.Key, "SERVICE_PORT", "the effective-configuration block lists settings only")
		require.False(t, strings.HasPrefix(a.Key, "QUEEN_PORT"), a.Key)
	}
}

func TestLoadIgnoresNonQueenAndClientVariables(t *testing.T) {
	t.Parallel()

	c := mustLoad(t, "PATH=/usr/bin", "HOME=/root", "PG_HOTS=typo-but-not-ours",
		"QUEEN_SERVER=http://localhost:6632", "QUEEN_TOKEN=t", "QUEEN_CONTEXT=prod",
		"QUEEN_CONFIG=/etc/x", "QUEEN_TEST_DATABASE_URL=postgres://x")
	require.Empty(t, c.Warnings())
}

func TestLoadWarnsAboutUnusedUpstreamVariables(t *testing.T) {
	t.Parallel()

	c := mustLoad(t,
		"NUM_WORKERS=4", "SIDECAR_POOL_SIZE=50", "QUEEN_VEGAS_ALPHA=3", "QUEEN_ACK_MAX_HOLD_MS=5",
		"QUEEN_STREAMS_STATE_GET_MAX_CONCURRENT=16", "QUEEN_UDP_PEERS=a,b", "QUEEN_SYNC_SECRET=hunter2",
		"QUEEN_CONCURRENCY_MODE=static", "STATS_HISTORY_RETENTION_DAYS=7",
		"WORKER_ID=", // set but empty is unset: no warning
	)
	w := c.Warnings()
	require.Len(t, w, 9, strings.Join(w, "\n"))
	require.Contains(t, w, `NUM_WORKERS="4" is accepted but unused by this broker: `+
		"queen has no worker event loops; the Go runtime schedules requests")
	require.Contains(t, w, "QUEEN_SYNC_SECRET=<redacted> is accepted but unused by this broker: "+
		"replicas coordinate through PostgreSQL LISTEN/NOTIFY; there is no UDP sync or its caches")
	require.NotContains(t, strings.Join(w, "\n"), "hunter2")
	require.True(t, strings.HasPrefix(w[0], "NUM_WORKERS"), "warnings are sorted")
}

func TestUnusedUpstreamCoversEveryEngineVariable(t *testing.T) {
	t.Parallel()

	names := make(map[string]bool)
	for _, g := range unusedUpstream() {
		require.NotEmpty(t, g.reason)
		for _, n := range g.names {
			require.False(t, names[n], "listed twice: %s", n)
			names[n] = true
		}
	}
	require.Len(t, engineTypes(), 9)
	for _, typ := range engineTypes() {
		for _, suffix := range []string{"PREFERRED_BATCH_SIZE", "MAX_HOLD_MS", "MAX_BATCH_SIZE", "MAX_CONCURRENT"} {
			n := "QUEEN_" + typ + "_" + suffix
			_, isSetting := settingByName(n)
			require.True(t, names[n] || (typ == "PUSH" && isSetting), n)
		}
	}
	for _, n := range []string{
		"NUM_WORKERS", "WORKER_ID", "DB_THREAD_POOL_SERVICE_THREADS", "RESPONSE_TIMER_INTERVAL_MS",
		"RESPONSE_BATCH_SIZE", "RESPONSE_BATCH_MAX", "SIDECAR_POOL_SIZE",
		"QUEEN_VEGAS_RTT_MIN_WINDOW_SEC", "SIDECAR_MICRO_BATCH_WAIT_MS", "SIDECAR_MAX_PENDING_COUNT",
		"QUEUE_BACKOFF_CLEANUP_THRESHOLD", "QUEEN_SYNC_RECV_BUFFER_MB", "QUEEN_CACHE_PARTITION_TTL_MS",
	} {
		require.True(t, names[n], n)
	}
	for _, s := range table() {
		require.False(t, names[s.name], "%s is both a setting and unused", s.name)
	}
}

// TestQueen1xEnvFile loads the environment of a Queen 1.x deployment
// (testdata/queen-1x.env, every variable the 1.x broker reads) as `queen -check-config`
// does: it is valid, holds no unknown variable, and each variable is either a setting
// queen read from it or named in a warning. None is silently ignored.
func TestQueen1xEnvFile(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/queen-1x.env")
	require.NoError(t, err)
	environ := parseEnvFile(string(data))
	require.GreaterOrEqual(t, len(environ), 100, "the file lists the 1.x broker's variables")
	c := mustLoad(t, environ...)
	require.Empty(t, c.UnknownVariables())
	warnings := strings.Join(c.Warnings(), "\n")
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := settingByName(name); ok {
			require.NotEqual(t, SourceDefault, c.Source(name), "%s is a setting but was not read", name)
			continue
		}
		require.Contains(t, warnings, name+"=", "%s is neither a setting nor named in a warning", name)
	}
	// The 1.x meanings that differ from 0.15's are read as 1.x meant them.
	require.Equal(t, "X-Queen-Tenant", c.TenancyHeader)
	require.Equal(t, "new", c.DefaultSubscriptionMode)
	require.Equal(t, "HS512", c.JWTAlgorithm)
	require.Equal(t, "producer", c.JWTRoleWriteOnly)
	require.Equal(t, "queen", c.PGDB)
	require.NotContains(t, warnings, "sync-secret", "secrets are not echoed")
}
