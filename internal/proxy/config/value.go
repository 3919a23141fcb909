package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/queenmq/queen/internal/envvalue"
)

// bind sets a field through the shared parser of internal/envvalue, its errors in the
// proxy's words, which quote the value.
func bind(field func(c *Config) envvalue.Value) func(*Config, string) error {
	return func(c *Config, v string) error { return reword(v, field(c).Set(v)) }
}

// reword puts an error of the shared parser for raw in the proxy's words.
func reword(raw string, err error) error {
	var syntax *envvalue.SyntaxError
	var bounds *envvalue.RangeError
	switch {
	case errors.As(err, &bounds):
		return fmt.Errorf("%s is outside %s..%s", bounds.Got, bounds.Min, bounds.Max)
	case !errors.As(err, &syntax):
		return err
	case syntax.Kind == "boolean":
		return fmt.Errorf("%q is not a boolean (use true/false, 1/0, yes/no or on/off)", raw)
	case syntax.Kind == "duration":
		return fmt.Errorf("%q is not a duration (e.g. 500ms, 2s, 1m)", raw)
	}
	return fmt.Errorf("%q is not an integer", raw)
}

// parseBackends reads a comma list of 1–16 http(s) URLs without query or fragment.
func parseBackends(s string) ([]*url.URL, error) {
	if strings.TrimSpace(s) == "none" {
		return nil, nil // no cell default from the configuration
	}
	var out []*url.URL
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		u, err := url.Parse(part)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return nil, fmt.Errorf("%q is not an http:// or https:// URL of a broker", part)
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		out = append(out, u)
	}
	if len(out) == 0 || len(out) > 16 {
		return nil, fmt.Errorf("give 1 to 16 broker URLs, not %d", len(out))
	}
	return out, nil
}
