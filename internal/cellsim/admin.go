package cellsim

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/queenmq/queen/internal/client"
	"github.com/queenmq/queen/internal/proxy/proxytest"
)

// RouteMissingError is a route the simulation needs that the proxy does not serve
// (it answered 404 or 405).
type RouteMissingError struct {
	Method, Path string
	Status       int
}

// Error names the route and the status it answered.
func (e *RouteMissingError) Error() string {
	return fmt.Sprintf("the proxy does not serve %s %s yet (answered %d)", e.Method, e.Path, e.Status)
}

// admin calls the proxy's admin API with its admin token.
type admin struct {
	c *client.Client
}

func newAdmin(p *proxytest.Proxy, hc *http.Client) admin {
	return admin{c: client.New(p.AdminURL, client.WithToken(proxytest.AdminToken), client.WithHTTPClient(hc))}
}

// call sends a request and decodes a 2xx answer into out. A 404 or 405 of a route
// (route names the route for the error, "" when a 404 means a missing resource)
// returns a *RouteMissingError.
func (a admin) call(ctx context.Context, method, path, route string, body, out any) (int, error) {
	status, err := a.c.Do(ctx, method, path, body, out)
	if route != "" && (status == http.StatusNotFound || status == http.StatusMethodNotAllowed) {
		return status, &RouteMissingError{Method: method, Path: route, Status: status}
	}
	if err != nil {
		return status, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return status, nil
}

// isMissing reports whether err is a *RouteMissingError.
func isMissing(err error) bool {
	var m *RouteMissingError
	return errors.As(err, &m)
}

// keyView is the answer of a key's creation.
type keyView struct {
	Key string `json:"key"`
}
