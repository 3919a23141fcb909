package envvalue

import (
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// Enum is one word of a closed set, matched in any case and stored in its canonical
// spelling; each alias pair maps an extra spelling onto a canonical one.
type Enum struct {
	P       *string
	Options []string
	Aliases [][2]string
}

// Set stores the option or alias target raw names, in its canonical spelling.
func (v Enum) Set(raw string) error {
	for _, o := range v.Options {
		if strings.EqualFold(raw, o) {
			*v.P = o
			return nil
		}
	}
	for _, a := range v.Aliases {
		if strings.EqualFold(raw, a[0]) {
			*v.P = a[1]
			return nil
		}
	}
	return errors.New("must be one of " + v.words())
}

// Get returns the field.
func (v Enum) Get() string { return *v.P }

// Kind lists the words accepted.
func (v Enum) Kind() string { return "one of " + v.words() }

func (v Enum) words() string {
	var ws []string
	for _, o := range v.Options {
		if o != "" {
			ws = append(ws, o)
		}
	}
	for _, a := range v.Aliases {
		ws = append(ws, a[0])
	}
	return strings.Join(ws, ", ")
}

// List is a comma-separated list; entries are trimmed and empty entries dropped (an
// empty list is nil). Check, when set, validates each entry.
type List struct {
	P     *[]string
	Check func(string) error
}

// Set splits raw at commas and checks each entry.
func (v List) Set(raw string) error {
	var out []string
	for _, e := range strings.Split(raw, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if v.Check != nil {
			if err := v.Check(e); err != nil {
				return err
			}
		}
		out = append(out, e)
	}
	*v.P = out
	return nil
}

// Get joins the entries with commas.
func (v List) Get() string { return strings.Join(*v.P, ",") }

// Kind is "comma-separated list".
func (List) Kind() string { return "comma-separated list" }

// HostPort is a listen address, host:port with a numeric port (1–65535) and any host
// (empty: every interface), or empty.
type HostPort struct{ P *string }

// Set checks raw's form and port.
func (v HostPort) Set(raw string) error {
	if raw != "" {
		_, port, err := net.SplitHostPort(raw)
		if err != nil {
			return errors.New("not a host:port address (e.g. 127.0.0.1:6060)")
		}
		if _, err := ParseInt(port, 1, 65535); err != nil {
			return fmt.Errorf("port %q: %w", port, err)
		}
	}
	*v.P = raw
	return nil
}

// Get returns the field.
func (v HostPort) Get() string { return *v.P }

// Kind is "host:port".
func (HostPort) Kind() string { return "host:port" }

// URL is an http or https URL, or empty.
type URL struct{ P *string }

// Set checks raw's scheme and host.
func (v URL) Set(raw string) error {
	if raw != "" {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("not an http or https URL")
		}
	}
	*v.P = raw
	return nil
}

// Get returns the field.
func (v URL) Get() string { return *v.P }

// Redacted returns the field with the password of its user information, if any,
// replaced by "xxxxx", for printouts and logs.
// The values of its query are replaced too: a JWKS or OTLP endpoint may carry an API
// key there.
func (v URL) Redacted() string {
	u, err := url.Parse(*v.P)
	if err != nil {
		return *v.P
	}
	if q := u.Query(); len(q) > 0 {
		for k := range q {
			q.Set(k, "xxxxx")
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// Kind is "URL".
func (URL) Kind() string { return "URL" }

// PEM is public PEM (a public key or a certificate), or empty. Env files cannot hold
// newlines, so a value with literal `\n` sequences and no real newline has them
// turned into newlines.
type PEM struct{ P *string }

// Set checks that raw (its `\n` sequences expanded) starts a PEM block and holds no
// private key anywhere: such a value is printed and logged as configuration, so a key
// bundled after a certificate would leak.
func (v PEM) Set(raw string) error {
	if raw != "" {
		if !strings.Contains(raw, "\n") {
			raw = strings.ReplaceAll(raw, `\n`, "\n")
		}
		if HoldsPrivateKey(raw) {
			return errors.New("holds a private key (PRIVATE KEY): give the public key or certificate only")
		}
		if b, _ := pem.Decode([]byte(raw)); b == nil {
			return errors.New("not a PEM block (-----BEGIN ...)")
		}
	}
	*v.P = raw
	return nil
}

// Get returns the field.
func (v PEM) Get() string { return *v.P }

// HoldsPrivateKey reports text that contains a PEM private key of any kind (PKCS#8,
// PKCS#1, EC, OpenSSH, encrypted): what no printed or logged value may hold.
func HoldsPrivateKey(text string) bool { return strings.Contains(text, "PRIVATE KEY-----") }

// Kind is "PEM".
func (PEM) Kind() string { return "PEM" }

// Pairs is a comma-separated list of key=value pairs, the format of the OpenTelemetry
// variables OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES: keys and values
// are trimmed and values percent-decoded; an empty list is nil.
type Pairs struct{ P *map[string]string }

// Set parses raw; a pair without '=', with an empty key, or with a value that does
// not percent-decode is an error.
func (v Pairs) Set(raw string) error {
	var m map[string]string
	for _, entry := range strings.Split(raw, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		k, val, ok := strings.Cut(entry, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return fmt.Errorf("%q is not key=value", strings.TrimSpace(entry))
		}
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil {
			return fmt.Errorf("the value of %q is not percent-encoded", k)
		}
		if m == nil {
			m = make(map[string]string)
		}
		m[k] = dec
	}
	*v.P = m
	return nil
}

// Get formats the pairs sorted by key, values percent-encoded.
func (v Pairs) Get() string {
	keys := make([]string, 0, len(*v.P))
	for k := range *v.P {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + url.PathEscape((*v.P)[k])
	}
	return strings.Join(parts, ",")
}

// Kind is "key=value list".
func (Pairs) Kind() string { return "comma-separated key=value list" }
