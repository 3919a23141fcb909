package config

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/queenmq/queen/internal/envvalue"
)

// hostListValue is PG_HOST: one host or a comma-separated list of them, as libpq takes
// it (host names, IP addresses, Unix-socket directories). Spaces around entries are
// dropped; an empty entry is an error rather than libpq's "the default host".
type hostListValue struct{ p *string }

func (v hostListValue) Set(raw string) error {
	hosts := splitPGList(raw)
	for i, h := range hosts {
		if h == "" {
			return fmt.Errorf("entry %d of the list is empty", i+1)
		}
	}
	*v.p = strings.Join(hosts, ",")
	return nil
}

func (v hostListValue) Get() string { return *v.p }
func (hostListValue) Kind() string  { return "host, or comma-separated hosts" }

// portListValue is PG_PORT: one port for every host, or a comma-separated list with
// one port per host (Validate checks the count). Each is normalised ("05432" → "5432").
type portListValue struct{ p *string }

func (v portListValue) Set(raw string) error {
	ports := splitPGList(raw)
	for i, s := range ports {
		n, err := envvalue.ParseInt(s, 1, 65535)
		if err != nil {
			if len(ports) == 1 {
				return err
			}
			return fmt.Errorf("port %q: %w", s, err)
		}
		ports[i] = strconv.FormatInt(n, 10)
	}
	*v.p = strings.Join(ports, ",")
	return nil
}

func (v portListValue) Get() string { return *v.p }
func (portListValue) Kind() string  { return "port number (1–65535), or one per host" }

// splitPGList splits a libpq host or port list at commas and trims each entry.
func splitPGList(raw string) []string {
	list := strings.Split(raw, ",")
	for i := range list {
		list[i] = strings.TrimSpace(list[i])
	}
	return list
}

// pemSourceValue is PEM given inline or as the path of a file that holds it
// (PG_SSL_ROOT_CERT, PG_SSL_CERT, PG_SSL_KEY). A value that contains "-----BEGIN" is
// PEM text, with literal `\n` sequences turned into newlines when it has no real one
// (env files cannot hold newlines); anything else is a path, read at once so that a
// missing or unreadable file fails the configuration. raw keeps the value as given,
// for printing; pem receives what it holds; check validates that.
type pemSourceValue struct {
	raw   *string
	pem   *[]byte
	check func(pem []byte) error
}

func (v pemSourceValue) Set(raw string) error {
	var data []byte
	switch {
	case raw == "":
	case strings.Contains(raw, "-----BEGIN"):
		if !strings.Contains(raw, "\n") {
			raw = strings.ReplaceAll(raw, `\n`, "\n")
		}
		data = []byte(raw)
	default:
		b, err := os.ReadFile(raw)
		if err != nil {
			// The path is the value, already in the message (or redacted): only the cause.
			var pathErr *fs.PathError
			if errors.As(err, &pathErr) {
				err = pathErr.Err
			}
			return fmt.Errorf("cannot read the file: %w", err)
		}
		data = b
	}
	if data != nil {
		if err := v.check(data); err != nil {
			return err
		}
	}
	*v.raw, *v.pem = raw, data
	return nil
}

func (v pemSourceValue) Get() string { return *v.raw }
func (pemSourceValue) Kind() string  { return "PEM text or file path" }

// checkCertificates accepts PEM that holds at least one X.509 certificate, every
// CERTIFICATE block of it well-formed.
func checkCertificates(data []byte) error {
	n := 0
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return fmt.Errorf("certificate %d is malformed: %w", n+1, err)
		}
		n++
	}
	if n == 0 {
		return errors.New("holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
	}
	return nil
}

// checkPrivateKey accepts PEM whose first block is a private key. It never quotes the
// key: the value is a secret.
func checkPrivateKey(data []byte) error {
	b, _ := pem.Decode(data)
	if b == nil || !strings.HasSuffix(b.Type, "PRIVATE KEY") {
		return errors.New("holds no PEM private key (-----BEGIN PRIVATE KEY-----)")
	}
	return nil
}
