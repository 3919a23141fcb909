package gateway

import (
	"cmp"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/httpapi"
)

// servedOutsideRouter lists the entries of routeTable that name no route of the broker's
// router, each with the reason it stays.
var servedOutsideRouter = map[routeKey]string{
	{http.MethodGet, "/"}:           "the dashboard's page, served by the broker's not-found handler (chi.Walk lists no such route)",
	{http.MethodGet, "/assets/*"}:   "the dashboard's files, served by the broker's not-found handler (chi.Walk lists no such route)",
	{http.MethodGet, "/operations"}: dashboardPage,
	{http.MethodGet, "/queues"}:     dashboardPage,
	{http.MethodGet, "/queues/*"}:   dashboardPage,
	{http.MethodGet, "/consumers"}:  dashboardPage,
	{http.MethodGet, "/messages"}:   dashboardPage,
	{http.MethodGet, "/traces"}:     dashboardPage,
	{http.MethodGet, "/analytics"}:  dashboardPage,
	{http.MethodGet, "/dlq"}:        dashboardPage,
	{http.MethodGet, "/system"}:     dashboardPage,
}

const dashboardPage = "a deep link of the dashboard's history-mode routes, answered with its page by the broker's not-found handler"

// routeKey names a route by method and pattern; an empty method is any method.
type routeKey struct{ method, pattern string }

func (k routeKey) String() string { return cmp.Or(k.method, "ANY") + " " + k.pattern }

// covers reports whether a request to the broker route (method, pattern) reaches the
// table entry rt: the same method, or any for an entry without one, and the same
// pattern (parameter names included, as handlers read them), or one under the entry's
// trailing "/*".
func (rt *route) covers(method, pattern string) bool {
	if rt.method != "" && rt.method != method {
		return false
	}
	if prefix, ok := strings.CutSuffix(rt.pattern, "*"); ok {
		return strings.HasPrefix(pattern, prefix)
	}
	return rt.pattern == pattern
}

// routeTieProblems lists every disagreement between the broker's routes, the proxy's
// table and its not-proxied list: a broker route in neither (or in both), a table entry
// or a not-proxied route the broker does not serve, and stale exceptions.
func routeTieProblems(broker []httpapi.Route, table []route, unproxied []unproxiedRoute, outside map[routeKey]string) []string {
	var problems []string
	served := make(map[routeKey]bool, len(broker))
	for _, br := range broker {
		served[routeKey{br.Method, br.Pattern}] = true
	}
	listed := make(map[routeKey]string, len(unproxied))
	for _, u := range unproxied {
		k := routeKey{u.method, u.pattern}
		if strings.TrimSpace(u.reason) == "" {
			problems = append(problems, fmt.Sprintf("%s: listed as not proxied without a reason", k))
		}
		if !served[k] {
			problems = append(problems, fmt.Sprintf("%s: listed as not proxied, but the broker does not serve it", k))
		}
		listed[k] = u.reason
	}
	for _, br := range broker {
		k := routeKey{br.Method, br.Pattern}
		classified := false
		for i := range table {
			if table[i].covers(br.Method, br.Pattern) {
				classified = true
				break
			}
		}
		_, isListed := listed[k]
		switch {
		case classified && isListed:
			problems = append(problems, fmt.Sprintf("%s: classified in routeTable and listed as not proxied", k))
		case !classified && !isListed:
			problems = append(problems, fmt.Sprintf("%s: broker route neither classified in routeTable nor listed as not proxied (a silent 404 behind the proxy)", k))
		}
	}
	inTable := make(map[routeKey]bool, len(table))
	for i := range table {
		rt := &table[i]
		k := routeKey{rt.method, rt.pattern}
		inTable[k] = true
		reaches := false
		for _, br := range broker {
			if rt.covers(br.Method, br.Pattern) {
				reaches = true
				break
			}
		}
		_, excused := outside[k]
		switch {
		case reaches && excused:
			problems = append(problems, fmt.Sprintf("%s: the broker serves it now; drop it from servedOutsideRouter", k))
		case !reaches && !excused:
			problems = append(problems, fmt.Sprintf("%s: in routeTable, but the broker serves no such route", k))
		}
	}
	for k, reason := range outside {
		if !inTable[k] {
			problems = append(problems, fmt.Sprintf("%s: in servedOutsideRouter (%s), but not in routeTable", k, reason))
		}
	}
	return problems
}

func TestRouteTableMatchesBroker(t *testing.T) {
	t.Parallel()

	broker, err := httpapi.Routes()
	require.NoError(t, err)
	require.NotEmpty(t, broker)
	require.Empty(t, routeTieProblems(broker, routeTable, unproxied, servedOutsideRouter))
}

func TestRouteTieCatchesDrift(t *testing.T) {
	t.Parallel()

	broker, err := httpapi.Routes()
	require.NoError(t, err)

	t.Run("BrokerRouteUnclassified", func(t *testing.T) {
		t.Parallel()
		drifted := append(append([]httpapi.Route{}, broker...), httpapi.Route{Method: http.MethodPost, Pattern: v1 + "/brand-new"})
		require.Equal(t, []string{"POST /api/v1/brand-new: broker route neither classified in routeTable nor listed as not proxied (a silent 404 behind the proxy)"},
			routeTieProblems(drifted, routeTable, unproxied, servedOutsideRouter))
	})
	t.Run("ParameterRenamed", func(t *testing.T) {
		t.Parallel()
		drifted := append([]httpapi.Route{}, broker...)
		for i := range drifted {
			if drifted[i].Pattern == v1+"/pop/queue/{queue}" {
				drifted[i].Pattern = v1 + "/pop/queue/{name}"
			}
		}
		require.ElementsMatch(t, []string{
			"GET /api/v1/pop/queue/{name}: broker route neither classified in routeTable nor listed as not proxied (a silent 404 behind the proxy)",
			"GET /api/v1/pop/queue/{queue}: in routeTable, but the broker serves no such route",
		}, routeTieProblems(drifted, routeTable, unproxied, servedOutsideRouter))
	})
	t.Run("TableRouteNotServed", func(t *testing.T) {
		t.Parallel()
		table := append(append([]route{}, routeTable...), route{method: http.MethodGet, pattern: v1 + "/gone", scope: "read"})
		require.Equal(t, []string{"GET /api/v1/gone: in routeTable, but the broker serves no such route"},
			routeTieProblems(broker, table, unproxied, servedOutsideRouter))
	})
	t.Run("ExceptionStale", func(t *testing.T) {
		t.Parallel()
		drifted := append(append([]httpapi.Route{}, broker...), httpapi.Route{Method: http.MethodGet, Pattern: "/system"})
		require.Equal(t, []string{"GET /system: the broker serves it now; drop it from servedOutsideRouter"},
			routeTieProblems(drifted, routeTable, unproxied, servedOutsideRouter))
	})
	t.Run("NotProxiedButClassified", func(t *testing.T) {
		t.Parallel()
		listed := append(append([]unproxiedRoute{}, unproxied...), unproxiedRoute{http.MethodPost, v1 + "/push", "a reason"})
		require.Equal(t, []string{"POST /api/v1/push: classified in routeTable and listed as not proxied"},
			routeTieProblems(broker, routeTable, listed, servedOutsideRouter))
	})
	t.Run("NotProxiedNotServed", func(t *testing.T) {
		t.Parallel()
		listed := append(append([]unproxiedRoute{}, unproxied...), unproxiedRoute{http.MethodGet, v1 + "/gone", ""})
		require.Equal(t, []string{
			"GET /api/v1/gone: listed as not proxied without a reason",
			"GET /api/v1/gone: listed as not proxied, but the broker does not serve it",
		}, routeTieProblems(broker, routeTable, listed, servedOutsideRouter))
	})
}

// TestDashboardPagesAreForwarded ties the page routes of the table to the dashboard's
// own route list (its history-mode paths): a page added there and not here would be a
// JSON 404 behind the proxy on reload.
func TestDashboardPagesAreForwarded(t *testing.T) {
	t.Parallel()
	js, err := os.ReadFile("../../dashboard/dist/shell/routes.js")
	require.NoError(t, err)
	paths := regexp.MustCompile(`path: '(/[^']*)'`).FindAllStringSubmatch(string(js), -1)
	require.NotEmpty(t, paths, "the dashboard's route list")
	pages := map[string]bool{}
	for i := range routeTable {
		if routeTable[i].page {
			pages[routeTable[i].pattern] = true
		}
	}
	for _, m := range paths {
		pattern := regexp.MustCompile(`/:\w+.*$`).ReplaceAllString(m[1], "/*")
		require.True(t, pages[pattern], "the dashboard's page %s has no page route %s in routeTable", m[1], pattern)
	}
}
