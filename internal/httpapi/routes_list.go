package httpapi

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"

	"github.com/go-chi/chi/v5"
)

// Route is one method and pattern registered on the broker's router.
type Route struct {
	// Method is the HTTP method, as registered ("GET", "POST", …).
	Method string
	// Pattern is the chi pattern, as registered ("/api/v1/pop/queue/{queue}").
	Pattern string
}

// Routes lists every method and pattern the broker's router serves, as registered with
// chi, sorted by pattern and then method. The dashboard's files are not among them:
// the router's not-found handler serves those. Routes builds a server without a broker
// and so touches no database; queen-proxy's tests tie its route table to this list.
func Routes() ([]Route, error) {
	var out []Route
	err := chi.Walk(New(Options{}, nil, nil).router, func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		out = append(out, Route{Method: method, Pattern: pattern})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk the broker's routes: %w", err)
	}
	slices.SortFunc(out, func(a, b Route) int {
		return cmp.Or(cmp.Compare(a.Pattern, b.Pattern), cmp.Compare(a.Method, b.Method))
	})
	return out, nil
}
