package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/queenmq/queen/internal/envvalue"
)

// Validate checks the combinations of settings that no single value can check on its
// own, and returns every problem joined (each an *Error matching ErrInvalid), or nil.
// Load calls it; call it again only after changing a Config by hand, as tests do.
func (c *Config) Validate() error {
	var errs []error
	for _, p := range c.problems() {
		errs = append(errs, p)
	}
	return errors.Join(errs...)
}

// problems runs every combination check. Each problem names all the variables it read,
// so that Load can drop it when one of them already failed to parse.
func (c *Config) problems() []*Error {
	var ps []*Error
	add := func(p *Error) {
		if p != nil {
			ps = append(ps, p)
		}
	}
	add(c.notAbove("POP_WAIT_INITIAL_INTERVAL_MS", c.PopWaitInitialInterval > c.PopWaitMaxInterval,
		"POP_WAIT_MAX_INTERVAL_MS"))
	add(c.notAbove("DEFAULT_TIMEOUT", c.DefaultTimeout > c.MaxPopTimeout, "QUEEN_MAX_POP_TIMEOUT_MS"))
	add(c.notAbove("DEFAULT_BATCH_SIZE", c.DefaultBatchSize > c.MaxPopBatch, "QUEEN_MAX_POP_BATCH"))
	if c.ShutdownDelay > 0 && c.ShutdownDelay >= c.ShutdownTimeout {
		add(c.combination("QUEEN_SHUTDOWN_DELAY", "must be less than "+c.assignment("QUEEN_SHUTDOWN_TIMEOUT"),
			"QUEEN_SHUTDOWN_TIMEOUT"))
	}
	add(c.jwtProblem())
	add(c.pgPortsProblem())
	add(c.pgClientCertProblem())
	add(c.notAbove("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", c.Tracing.BatchSize > c.Tracing.BatchQueue, "OTEL_BSP_MAX_QUEUE_SIZE"))
	for _, prefix := range []string{"OTEL_EXPORTER_OTLP_", "OTEL_EXPORTER_OTLP_TRACES_"} {
		o := c.Tracing.OTLP
		if prefix != "OTEL_EXPORTER_OTLP_" {
			o = c.Tracing.Traces
		}
		if (o.ClientCert == "") != (o.ClientKey == "") {
			add(c.combination(prefix+"CLIENT_CERTIFICATE", "needs "+prefix+"CLIENT_KEY beside it (or neither)",
				prefix+"CLIENT_KEY"))
		}
	}
	return ps
}

// pgPortsProblem checks that PG_PORT gives one port for every host or one per host.
func (c *Config) pgPortsProblem() *Error {
	hosts, ports := len(c.PGHosts()), len(strings.Split(c.PGPort, ","))
	if ports == 1 || ports == hosts {
		return nil
	}
	return c.combination("PG_PORT", fmt.Sprintf("has %d ports for the %d hosts of %s: give one port "+
		"for every host, or one per host", ports, hosts, c.assignment("PG_HOST")), "PG_HOST")
}

// pgClientCertProblem checks that PG_SSL_CERT and PG_SSL_KEY come together and make a
// key pair. The key's content never appears in the reason.
func (c *Config) pgClientCertProblem() *Error {
	cert, key := c.pgTLS.cert, c.pgTLS.key
	switch {
	case len(cert) == 0 && len(key) == 0:
		return nil
	case len(key) == 0:
		return c.combination("PG_SSL_CERT", "needs PG_SSL_KEY, its private key", "PG_SSL_KEY")
	case len(cert) == 0:
		return c.combination("PG_SSL_KEY", "needs PG_SSL_CERT, the certificate of the key", "PG_SSL_CERT")
	}
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		return c.combination("PG_SSL_KEY", "is not the private key of PG_SSL_CERT, or cannot be used "+
			"(an encrypted key is not supported): "+err.Error(), "PG_SSL_CERT")
	}
	return nil
}

// notAbove reports "NAME must not exceed OTHER" when bad is true.
func (c *Config) notAbove(name string, bad bool, other string) *Error {
	if !bad {
		return nil
	}
	return c.combination(name, "must not exceed "+c.assignment(other), other)
}

// jwtProblem checks that an enabled JWT configuration has a key for its algorithm.
func (c *Config) jwtProblem() *Error {
	if !c.JWTEnabled {
		return nil
	}
	related := []string{"JWT_ENABLED", "JWT_SECRET", "JWT_JWKS_URL", "JWT_PUBLIC_KEY"}
	switch c.JWTAlgorithm {
	case "HS256", "HS384", "HS512":
		if c.JWTSecret == "" {
			return c.combination("JWT_ALGORITHM", "with JWT_ENABLED=true needs JWT_SECRET", related...)
		}
	case "auto":
		if c.JWTSecret == "" && c.JWTJWKSURL == "" && c.JWTPublicKey == "" {
			return c.combination("JWT_ALGORITHM",
				"with JWT_ENABLED=true needs JWT_SECRET, JWT_JWKS_URL or JWT_PUBLIC_KEY", related...)
		}
	default: // the asymmetric algorithms
		if c.JWTJWKSURL == "" && c.JWTPublicKey == "" {
			return c.combination("JWT_ALGORITHM",
				"with JWT_ENABLED=true needs JWT_JWKS_URL or JWT_PUBLIC_KEY", related...)
		}
	}
	return nil
}

// combination builds the *Error of a check over several variables, with name's
// current value.
func (c *Config) combination(name, reason string, related ...string) *Error {
	s, _ := settingByName(name)
	return &Error{Name: name, Value: c.display(s), Reason: reason, related: related}
}

// assignment renders NAME="value" (or NAME=<redacted>) for use inside a reason.
func (c *Config) assignment(name string) string {
	s, _ := settingByName(name)
	if v := c.display(s); v != redacted {
		return name + "=" + strconv.Quote(v)
	}
	return name + "=" + redacted
}

// display is a setting's current value in its variable's own units, redacted when it
// is a non-empty secret.
func (c *Config) display(s setting) string {
	b := s.bind(c)
	v := b.Get()
	if s.secret && v != "" || envvalue.HoldsPrivateKey(v) {
		return redacted
	}
	if u, ok := b.(envvalue.URL); ok {
		return u.Redacted() // a password in the URL's user information
	}
	return v
}
