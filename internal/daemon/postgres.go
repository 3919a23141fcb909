package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"time"

	"github.com/queenmq/queen/internal/config"
)

// unverifiedTLSMessage is the boot warning of PG_SSL_REJECT_UNAUTHORIZED=false.
const unverifiedTLSMessage = "PostgreSQL TLS does not verify the server: its identity is not verified " +
	"(PG_SSL_REJECT_UNAUTHORIZED=false), so anyone on the network path to it can pose as the " +
	"database and read or change what the broker stores"

// logPostgres logs, once at boot, where the broker connects and how: the servers, the
// database, PG_TARGET_SESSION_ATTRS, the sslmode and, when it verifies, what it
// trusts. An unverified TLS connection is a warning, not an Info line: encryption
// without authentication is a choice the operator must see.
func logPostgres(ctx context.Context, logger *slog.Logger, cfg *config.Config) {
	mode := cfg.PGSSLMode()
	attrs := []slog.Attr{
		slog.String("servers", cfg.PGServers()),
		slog.String("database", cfg.PGDB),
		slog.String("target_session_attrs", cfg.PGTargetSessionAttrs),
		slog.String("sslmode", mode),
	}
	switch mode {
	case "require":
		logger.LogAttrs(ctx, slog.LevelWarn, unverifiedTLSMessage, attrs...)
		return
	case "verify-full":
		trusted := "the system's CAs"
		if cfg.PGSSLRootCert != "" {
			trusted = "PG_SSL_ROOT_CERT"
		}
		attrs = append(attrs, slog.String("trusted_cas", trusted), slog.Bool("client_cert", cfg.PGSSLCert != ""))
	}
	logger.LogAttrs(ctx, slog.LevelInfo, "PostgreSQL connection", attrs...)
}

// waitingArgs are the attributes of a "waiting for PostgreSQL" line: the attempt,
// the delay before the next one, the error and, when pgConnectHint has one, a hint.
func waitingArgs(attempt int, retryIn time.Duration, err error) []any {
	args := []any{"attempt", attempt, "retry_in", retryIn.String(), "err", err}
	if hint := pgConnectHint(err); hint != "" {
		args = append(args, "hint", hint)
	}
	return args
}

// pgConnectHint says in words why a connection attempt failed the TLS handshake, and
// which setting to look at, or returns "" for any other failure. pgx already puts the
// cause in the error's text ("tls error: …"); the hint makes the fix plain in the
// "waiting for PostgreSQL" line, which is all an operator sees of it. A server that
// does not speak TLS at all answers no typed error: pgx's "server refused TLS
// connection" says so itself.
func pgConnectHint(err error) string {
	var (
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		alert     tls.AlertError
	)
	switch {
	case errors.As(err, &unknownCA):
		return "TLS: the server's certificate is not signed by a CA the broker trusts; set PG_SSL_ROOT_CERT " +
			"to the CA that signed it (unset, only the system's CAs are trusted)"
	case errors.As(err, &hostname):
		return "TLS: the server's certificate does not name the host connected to (" + hostname.Error() +
			"); PG_HOST must be a name or address that the certificate lists"
	case errors.As(err, &invalid):
		return "TLS: the server's certificate is not valid (" + invalid.Error() + ")"
	case errors.As(err, &alert):
		return "TLS: the server ended the handshake (" + alert.Error() + "); it may require a client " +
			"certificate (PG_SSL_CERT, PG_SSL_KEY) or not accept the one given"
	}
	return ""
}
