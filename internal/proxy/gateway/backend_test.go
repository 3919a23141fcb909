package gateway

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/proxy/brokerauth"
	"github.com/queenmq/queen/internal/testlog"
	"github.com/queenmq/queen/internal/testwait"
)

// tenancyOn is the broker setting the proxy's default header asks for.
const tenancyOn = "QUEEN_TENANCY_HEADER=X-Queen-Tenant"

// restartable is a real broker that can be stopped and started again on the same
// address and database, with another environment.
type restartable struct {
	addr, dbURL string
	broker      *daemontest.Server
}

func startRestartable(t *testing.T, env ...string) *restartable {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b := &restartable{addr: ln.Addr().String(), dbURL: pgtest.NewDBURL(t)}
	b.broker = daemontest.Start(t, daemontest.Options{Listener: ln, DBURL: b.dbURL, Env: env})
	return b
}

// restart stops the broker and starts it again on its address with env.
func (b *restartable) restart(t *testing.T, env ...string) {
	t.Helper()
	require.NoError(t, b.broker.Stop())
	ln, err := net.Listen("tcp", b.addr)
	require.NoError(t, err)
	b.broker = daemontest.Start(t, daemontest.Options{Listener: ln, DBURL: b.dbURL, Env: env})
}

// testPool is a pool of one broker whose checks the test runs itself, one at a time,
// so that it counts checks instead of waiting for a clock.
func testPool(t *testing.T, rawURL string, authorize func(*http.Request) error) (*Pool, *Backend) {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	b := &Backend{URL: u}
	p := &Pool{backends: []*Backend{b}, client: &http.Client{Transport: newProbeTransport()}, header: "X-Queen-Tenant",
		interval: time.Hour, logger: testlog.Logger(t), authorize: authorize,
		upGauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "up"}, []string{"upstream"})}
	return p, b
}

func noAuth(*http.Request) error { return nil }

// A broker's tenancy is asked at every check, not every 30 s: restarted with tenancy
// off, the very next check makes it misconfigured, and restarted with tenancy on, the
// very next check makes a misconfigured broker up.
func TestEveryCheckReadsTheTenancy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		first, second []string
		want          [2]string
	}{
		{"RestartedWithTenancyOff", []string{tenancyOn}, nil, [2]string{"up", "misconfigured"}},
		{"RestartedWithTenancyOn", nil, []string{tenancyOn}, [2]string{"misconfigured", "up"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := startRestartable(t, tc.first...)
			p, u := testPool(t, "http://"+b.addr, noAuth)
			p.check(t.Context(), u)
			require.Equal(t, tc.want[0], u.State())

			b.restart(t, tc.second...)
			p.check(t.Context(), u)
			require.Equal(t, tc.want[1], u.State(), "one check after the restart")
		})
	}
}

// A tenancy probe that fails (here a 503: the broker verifies JWTs from a JWKS it
// could not fetch yet, as when it starts before the proxy that serves it) is a
// failed check, not a misconfiguration: the broker is down, and it is up two checks
// after it answers. Only a 200 with tenancy off or another header is misconfigured.
func TestAFailedTenancyProbeIsAFailedCheck(t *testing.T) {
	t.Parallel()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	minter, err := brokerauth.New(key, "queen-proxy", "queen", 5*time.Minute, time.Now)
	require.NoError(t, err)
	var serving atomic.Bool
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !serving.Load() {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(minter.JWKS())
	}))
	t.Cleanup(jwks.Close)
	b := startRestartable(t, tenancyOn, "JWT_ENABLED=true", "JWT_ALGORITHM=EdDSA", "JWT_JWKS_URL="+jwks.URL,
		"JWT_ISSUER=queen-proxy", "JWT_AUDIENCE=queen")
	authorize := func(req *http.Request) error {
		tok, err := minter.Token(brokerauth.Claims{Subject: "queen-proxy", Role: "admin"})
		req.Header.Set("Authorization", "Bearer "+tok)
		return err
	}
	p, u := testPool(t, "http://"+b.addr, authorize)
	states := []string{}
	check := func() string {
		p.check(t.Context(), u)
		states = append(states, u.State())
		return u.State()
	}
	require.Equal(t, "down", check(), "the first check decides from unknown")
	require.Equal(t, "down", check())

	// The broker fetches the keys again at most every 10 s, when a token names a kid
	// it lacks: the checks go on until it has them.
	serving.Store(true)
	testwait.For(t, 30*time.Second, 100*time.Millisecond, func() error {
		if s := check(); s != "up" {
			return fmt.Errorf("the broker is %s", s)
		}
		return nil
	})
	require.NotContains(t, states, "misconfigured")
}
