package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/queenmq/queen/internal/auth"
	"github.com/queenmq/queen/internal/config"
)

// newVerifier builds the JWT verifier when JWT_ENABLED is on, and nil (every route
// open) when it is off. A configuration the verifier refuses (a public key of the
// wrong type, a private key, an unparsable JWKS URL, ...) is ErrUnsupportedConfig.
func newVerifier(cfg *config.Config, logger *slog.Logger) (*auth.Verifier, error) {
	if !cfg.JWTEnabled {
		return nil, nil
	}
	v, err := auth.NewVerifier(auth.Config{
		Algorithm:           cfg.JWTAlgorithm,
		Secret:              cfg.JWTSecret,
		PublicKeyPEM:        cfg.JWTPublicKey,
		JWKSURL:             cfg.JWTJWKSURL,
		Issuer:              cfg.JWTIssuer,
		Audience:            cfg.JWTAudience,
		ClockSkew:           cfg.JWTClockSkew,
		JWKSRefreshInterval: cfg.JWTJWKSRefreshInterval,
		JWKSTimeout:         cfg.JWTJWKSTimeout,
		Roles: auth.RoleNames{
			Claim: cfg.JWTRolesClaim, ArrayClaim: cfg.JWTRolesArrayClaim,
			Admin: cfg.JWTRoleAdmin, ReadWrite: cfg.JWTRoleReadWrite, ReadOnly: cfg.JWTRoleReadOnly,
			WriteOnly: cfg.JWTRoleWriteOnly,
		},
		Logger: logger, // it logs JWKS events only, with component=jwks
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupportedConfig, err)
	}
	return v, nil
}

// AuthCheck builds the verifier as the daemon would, without starting it (no JWKS is
// fetched), for `queen -check-config`: the error that would stop the start, and the
// warnings its boot log would carry.
func AuthCheck(cfg *config.Config) (warnings []string, err error) {
	v, err := newVerifier(cfg, slog.New(slog.DiscardHandler))
	if err != nil || v == nil {
		return nil, err
	}
	return v.Warnings(), nil
}

// logAuthMode states the authentication mode at boot: what verifies tokens when it
// is on, and a warning when it is off on an address other hosts can reach.
func logAuthMode(ctx context.Context, logger *slog.Logger, cfg *config.Config, v *auth.Verifier, addr net.Addr) {
	if v == nil {
		host, _, _ := net.SplitHostPort(addr.String())
		if !isLoopback(host) {
			logger.Warn("serving WITHOUT authentication on a non-loopback address; set JWT_ENABLED, or bind 127.0.0.1 (HOST, or ListenStream= in queen.socket) behind a proxy",
				"auth", "off", "addr", addr.String())
			if cfg.TenancyHeader != "" {
				logger.Warn("QUEEN_TENANCY_HEADER is trusted from every client while authentication is off; only a proxy that strips it may reach this address",
					"header", cfg.TenancyHeader, "addr", addr.String())
			}
			return
		}
		logger.Info("authentication off (JWT_ENABLED=false): every route is open", "auth", "off", "addr", addr.String())
		return
	}
	attrs := append([]slog.Attr{slog.String("auth", "jwt"), slog.Any("skip_paths", cfg.JWTSkipPaths)}, v.LogAttrs()...)
	logger.LogAttrs(ctx, slog.LevelInfo, "authentication on: bearer JWT required", attrs...)
	for _, w := range v.Warnings() {
		logger.Warn("authentication configuration warning", "warning", w)
	}
}
