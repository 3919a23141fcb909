package helm_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/httpapi"
	proxyconfig "github.com/queenmq/queen/internal/proxy/config"
	"github.com/queenmq/queen/internal/proxy/proxytest"
)

// probeTimeout bounds one GET of a probe path.
const probeTimeout = 10 * time.Second

// probes lists a container's probes by kind; each must be set and an HTTP GET.
func probes(t *testing.T, c corev1.Container) map[string]*corev1.HTTPGetAction {
	t.Helper()
	out := map[string]*corev1.HTTPGetAction{}
	for kind, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		require.NotNil(t, p, "%s: no %s probe", c.Name, kind)
		require.NotNil(t, p.HTTPGet, "%s: %s probe is not an HTTP GET", c.Name, kind)
		require.Contains(t, []corev1.URIScheme{"", corev1.URISchemeHTTP}, p.HTTPGet.Scheme)
		require.Positive(t, p.PeriodSeconds)
		require.Positive(t, p.FailureThreshold)
		require.LessOrEqual(t, p.TimeoutSeconds, p.PeriodSeconds, "%s: %s probe times out after its period", c.Name, kind)
		out[kind] = p.HTTPGet
	}
	require.Equal(t, "/health/live", out["liveness"].Path, "%s: liveness must not depend on the database", c.Name)
	require.Equal(t, "/health/live", out["startup"].Path, "%s: startup must not depend on the database", c.Name)
	return out
}

// get GETs url and returns the status.
func get(t *testing.T, url string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestProbesHitServedRoutes starts a real broker and a real queen-proxy in front of
// it, and GETs every probe path of every case's Deployments from them: each answers
// 200. The probes' port is the container port the binary listens on by default (the
// chart never sets PORT), and the broker's probe paths are GET routes of its router.
func TestProbesHitServedRoutes(t *testing.T) {
	t.Parallel()
	routes, err := httpapi.Routes()
	require.NoError(t, err)
	brokerDefaults, err := config.Load(nil)
	require.NoError(t, err)
	var proxyPort int
	for _, r := range proxyconfig.References() {
		if r.Name == "PORT" {
			proxyPort, err = strconv.Atoi(r.Default)
			require.NoError(t, err)
		}
	}
	require.Positive(t, proxyPort)

	broker := proxytest.StartBroker(t, daemontest.Options{})
	proxy := proxytest.Start(t, proxytest.Options{Backends: []string{broker.URL}})

	for _, vc := range matrix() {
		r := objects(t, vc)
		b := container(t, r.broker(t))
		require.NotContains(t, r.environ(t, r.broker(t)), "PORT")
		for kind, g := range probes(t, b) {
			require.Equal(t, int32(brokerDefaults.Port), portNumber(t, b, g.Port), "%s: broker %s probe port", vc.name, kind)
			require.True(t, slices.Contains(routes, httpapi.Route{Method: http.MethodGet, Pattern: g.Path}),
				"%s: broker %s probe: GET %s is not a route of the broker", vc.name, kind, g.Path)
			require.Equal(t, http.StatusOK, get(t, broker.URL+g.Path), "%s: broker %s probe GET %s", vc.name, kind, g.Path)
		}
		svc := r.services["queen"]
		require.Equal(t, int32(brokerDefaults.Port), portNumber(t, b, svc.Spec.Ports[0].TargetPort), "%s: Service targetPort", vc.name)
		d := r.proxy()
		if d == nil {
			continue
		}
		p := container(t, d)
		require.NotContains(t, r.environ(t, d), "PORT")
		for kind, g := range probes(t, p) {
			require.Equal(t, int32(proxyPort), portNumber(t, p, g.Port), "%s: proxy %s probe port", vc.name, kind)
			require.Equal(t, http.StatusOK, get(t, proxy.URL+g.Path), "%s: proxy %s probe GET %s", vc.name, kind, g.Path)
		}
		psvc := r.services["queen-proxy"]
		require.Equal(t, int32(proxyPort), portNumber(t, p, psvc.Spec.Ports[0].TargetPort), "%s: proxy Service targetPort", vc.name)
	}
	// Control: a path neither binary serves is not 200, so the checks above can fail.
	require.NotEqual(t, http.StatusOK, get(t, broker.URL+"/health/not-a-route"))
	require.NotEqual(t, http.StatusOK, get(t, proxy.URL+"/health/not-a-route"))
}
