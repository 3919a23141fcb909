package daemon

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// certReloader serves the certificate from files, re-read when either changes.
type certReloader struct {
	certFile, keyFile string
	logger            *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime time.Time
}

func (c *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	mt := latestModTime(c.certFile, c.keyFile)
	if c.cert != nil && !mt.After(c.modTime) {
		return c.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		if c.cert != nil {
			c.logger.Warn("TLS certificate changed but does not load; keeping the previous one", "err", err)
			return c.cert, nil
		}
		return nil, err
	}
	c.cert, c.modTime = &cert, mt
	return c.cert, nil
}

func latestModTime(files ...string) time.Time {
	var t time.Time
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.ModTime().After(t) {
			t = fi.ModTime()
		}
	}
	return t
}

// tlsConfig is TLS ≥ 1.2 with the certificate re-read from its files when they
// change; http.Server.ServeTLS adds HTTP/2.
func tlsConfig(certFile, keyFile string, logger *slog.Logger) (*tls.Config, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, logger: logger}
	if _, err := r.get(nil); err != nil {
		return nil, fmt.Errorf("load the TLS certificate: %w", err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.get}, nil
}
