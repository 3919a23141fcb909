package auth

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Defaults of the optional Config durations.
const (
	DefaultJWKSRefreshInterval    = time.Hour
	DefaultJWKSTimeout            = 5 * time.Second
	DefaultJWKSMinRefetchInterval = 10 * time.Second
)

// maxTokenBytes bounds the token accepted for parsing.
const maxTokenBytes = 16 << 10

// Config is the verifier's configuration; the fields mirror the JWT_* settings.
type Config struct {
	// Algorithm is one of Algorithms(): HS256, HS384, HS512, RS256 (which also accepts
	// RS384 and RS512), RS384, RS512, ES256, EdDSA or auto.
	Algorithm string
	// Secret is the HS256/HS384/HS512 key, used as the raw bytes of the string.
	Secret string
	// PublicKeyPEM is an RSA, ECDSA P-256 or Ed25519 public key; when set it verifies every
	// asymmetric token and the JWKS is not used.
	PublicKeyPEM string
	// JWKSURL is an http(s) JWKS document with RSA, EC P-256 and/or Ed25519 keys.
	JWKSURL string
	// Issuer, when set, must equal the token's iss.
	Issuer string
	// Audience, when set, must be in the token's aud (string or array).
	Audience string
	// ClockSkew is the leeway for exp, nbf and iat.
	ClockSkew time.Duration
	// Roles says where the roles are and which values grant which level; the zero
	// value means DefaultRoleNames.
	Roles RoleNames
	// JWKSRefreshInterval is the period of the timer refresh (0: one hour).
	JWKSRefreshInterval time.Duration
	// JWKSTimeout bounds one JWKS fetch (0: 5 s).
	JWKSTimeout time.Duration
	// JWKSMinRefetchInterval is the least time between two fetches caused by tokens
	// with an unknown kid (0: 10 s), so a flood of random kids costs at most one fetch
	// per interval.
	JWKSMinRefetchInterval time.Duration
	// HTTPClient fetches the JWKS; nil means a plain client. JWKSTimeout applies
	// either way.
	HTTPClient *http.Client
	// Logger receives JWKS events; nil discards them. Tokens are never logged.
	Logger *slog.Logger
	// NowFunc replaces time.Now in tests.
	NowFunc func() time.Time
}

// Verifier checks bearer tokens. It is safe for concurrent use; with a JWKS, [Verifier.Run]
// must run for the timer refresh (tokens with an unknown kid fetch on their own).
type Verifier struct {
	algorithm string
	accepted  []string // token algorithms this verifier accepts
	secret    []byte
	publicKey crypto.PublicKey
	jwks      *jwksCache
	issuer    string
	audience  string
	skew      time.Duration
	roles     RoleNames
	parser    *jwt.Parser
	warnings  []string
}

// NewVerifier checks cfg and builds a verifier. It refuses an unknown algorithm, an
// algorithm without a usable key, a public key of the wrong type for the algorithm,
// and a JWKS URL that is not http(s). It does not fetch the JWKS (see [Verifier.Run]).
func NewVerifier(cfg Config) (*Verifier, error) {
	v := &Verifier{
		algorithm: cfg.Algorithm,
		secret:    []byte(cfg.Secret),
		issuer:    cfg.Issuer,
		audience:  cfg.Audience,
		skew:      max(cfg.ClockSkew, 0),
		roles:     cfg.Roles,
	}
	if v.roles == (RoleNames{}) {
		v.roles = DefaultRoleNames()
	}
	if cfg.PublicKeyPEM != "" {
		key, err := ParsePublicKey(cfg.PublicKeyPEM)
		if err != nil {
			return nil, fmt.Errorf("JWT_PUBLIC_KEY: %w", err)
		}
		v.publicKey = key
	}
	jwksUsable := cfg.JWKSURL != "" && v.publicKey == nil
	if cfg.JWKSURL != "" {
		if u, err := url.Parse(cfg.JWKSURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, errors.New("JWT_JWKS_URL: must be an http or https URL")
		}
	}
	hasSecret := cfg.Secret != ""
	v.accepted = acceptedBy(cfg.Algorithm)
	switch {
	case v.accepted == nil:
		return nil, fmt.Errorf("JWT_ALGORITHM=%q: must be %s", cfg.Algorithm, algorithmList())
	case cfg.Algorithm == AlgAuto:
		v.accepted = v.configuredAlgorithms(hasSecret, jwksUsable)
		if len(v.accepted) == 0 {
			return nil, errors.New("JWT_ALGORITHM=auto needs JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL")
		}
	case isHMAC(cfg.Algorithm):
		if !hasSecret {
			return nil, fmt.Errorf("JWT_ALGORITHM=%s needs JWT_SECRET", cfg.Algorithm)
		}
		if v.publicKey != nil || cfg.JWKSURL != "" {
			v.warnings = append(v.warnings, "JWT_PUBLIC_KEY and JWT_JWKS_URL are ignored with JWT_ALGORITHM="+cfg.Algorithm)
			v.publicKey, jwksUsable = nil, false
		}
	default: // asymmetric
		if v.publicKey != nil {
			fits := slices.DeleteFunc(slices.Clone(v.accepted), func(a string) bool {
				return !slices.Contains(keyAlgorithms(v.publicKey), a)
			})
			if len(fits) == 0 {
				return nil, fmt.Errorf("JWT_PUBLIC_KEY is an %s key, which cannot verify JWT_ALGORITHM=%s tokens",
					describeKey(v.publicKey), cfg.Algorithm)
			}
			v.accepted = fits
		} else if !jwksUsable {
			return nil, fmt.Errorf("JWT_ALGORITHM=%s needs JWT_PUBLIC_KEY or JWT_JWKS_URL", cfg.Algorithm)
		}
		if hasSecret {
			v.warnings = append(v.warnings, "JWT_SECRET is ignored with JWT_ALGORITHM="+cfg.Algorithm)
			v.secret = nil
		}
	}
	if v.publicKey != nil && cfg.JWKSURL != "" && !isHMAC(cfg.Algorithm) {
		v.warnings = append(v.warnings, "JWT_JWKS_URL is ignored because JWT_PUBLIC_KEY is set")
	}
	if hasSecret && slices.ContainsFunc(v.accepted, isHMAC) && len(cfg.Secret) < 32 {
		v.warnings = append(v.warnings, "JWT_SECRET is shorter than 32 bytes; use a long random secret")
	}
	now := cfg.NowFunc
	if now == nil {
		now = time.Now
	}
	if jwksUsable {
		v.jwks = newJWKSCache(cfg, now)
	}
	v.parser = jwt.NewParser(
		jwt.WithValidMethods(v.accepted),
		jwt.WithLeeway(v.skew),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(now),
	)
	return v, nil
}

// configuredAlgorithms is what JWT_ALGORITHM=auto accepts: the HMAC algorithms with a
// secret, and the algorithms of JWT_PUBLIC_KEY, or else of every key type a JWKS may
// hold.
func (v *Verifier) configuredAlgorithms(hasSecret, jwksUsable bool) []string {
	var out []string
	if hasSecret {
		out = append(out, hmacAlgorithms...)
	}
	switch {
	case v.publicKey != nil:
		out = append(out, keyAlgorithms(v.publicKey)...)
	case jwksUsable:
		out = append(out, rsaAlgorithms...)
		out = append(out, AlgES256, AlgEdDSA)
	}
	return out
}

// algorithmList renders Algorithms() for an error: "HS256, …, EdDSA or auto".
func algorithmList() string {
	all := Algorithms()
	return strings.Join(all[:len(all)-1], ", ") + " or " + all[len(all)-1]
}

func newJWKSCache(cfg Config, now func() time.Time) *jwksCache {
	c := &jwksCache{
		url:        cfg.JWKSURL,
		client:     cfg.HTTPClient,
		timeout:    cfg.JWKSTimeout,
		interval:   cfg.JWKSRefreshInterval,
		minRefetch: cfg.JWKSMinRefetchInterval,
		now:        now,
		logger:     cfg.Logger,
	}
	if c.client == nil {
		// A pool of its own: another user of the default transport closing its idle
		// connections must not fail a fetch that had just picked one.
		c.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if c.timeout <= 0 {
		c.timeout = DefaultJWKSTimeout
	}
	if c.interval <= 0 {
		c.interval = DefaultJWKSRefreshInterval
	}
	if c.minRefetch <= 0 {
		c.minRefetch = DefaultJWKSMinRefetchInterval
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	c.logger = c.logger.With("component", "jwks")
	return c
}

// Run keeps the JWKS fresh: it fetches at once, then every JWKSRefreshInterval
// (retrying sooner after a failure), until ctx is done; then it returns nil. Without a
// JWKS it returns nil at once.
func (v *Verifier) Run(ctx context.Context) error {
	if v.jwks == nil {
		return nil
	}
	v.jwks.run(ctx)
	return nil
}

// UsesJWKS reports whether keys come from JWT_JWKS_URL (false for a nil verifier).
func (v *Verifier) UsesJWKS() bool { return v != nil && v.jwks != nil }

// Accepted returns the token algorithms this verifier accepts.
func (v *Verifier) Accepted() []string { return slices.Clone(v.accepted) }

// Warnings lists configuration that is accepted but ignored or weak, for the boot log.
func (v *Verifier) Warnings() []string { return slices.Clone(v.warnings) }

// LogAttrs describes the mode for the boot log. Secrets are never included; the JWKS
// URL is shown without its password.
func (v *Verifier) LogAttrs() []slog.Attr {
	attrs := []slog.Attr{
		slog.String("algorithm", v.algorithm),
		slog.Any("accepted_algorithms", v.accepted),
	}
	var keys []string
	if slices.ContainsFunc(v.accepted, isHMAC) {
		keys = append(keys, "JWT_SECRET")
	}
	if v.publicKey != nil {
		keys = append(keys, "JWT_PUBLIC_KEY ("+describeKey(v.publicKey)+")")
	}
	if v.jwks != nil {
		keys = append(keys, "JWKS")
		u, _ := url.Parse(v.jwks.url)
		attrs = append(attrs, slog.String("jwks_url", u.Redacted()),
			slog.String("jwks_refresh_interval", v.jwks.interval.String()),
			slog.String("jwks_min_refetch_interval", v.jwks.minRefetch.String()))
	}
	attrs = append(attrs, slog.Any("keys", keys), slog.String("issuer", v.issuer),
		slog.String("audience", v.audience), slog.String("clock_skew", v.skew.String()))
	return attrs
}

// Verify checks token and returns its principal. Errors are *Error values matching
// ErrUnauthenticated (401) or ErrKeysUnavailable (503); their messages never quote
// the token. Tokens without exp are accepted (upstream); exp, nbf and a future iat are
// checked with the configured leeway.
func (v *Verifier) Verify(ctx context.Context, token string) (*Principal, error) {
	switch {
	case token == "":
		return nil, unauthenticated(MsgAuthRequired)
	case len(token) > maxTokenBytes:
		return nil, unauthenticated(MsgMalformed)
	}
	claims := jwt.MapClaims{}
	tok, err := v.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		return v.key(ctx, t)
	})
	if err != nil {
		return nil, v.refusal(tok, err)
	}
	if v.issuer != "" {
		if iss, err := claims.GetIssuer(); err != nil || iss != v.issuer {
			return nil, unauthenticated(MsgBadIssuer)
		}
	}
	if v.audience != "" {
		if aud, err := claims.GetAudience(); err != nil || !slices.Contains(aud, v.audience) {
			return nil, unauthenticated(MsgBadAudience)
		}
	}
	p := &Principal{Roles: v.roles.roles(claims)}
	p.Subject, _ = claims["sub"].(string)
	p.Username, _ = claims["username"].(string)
	if raw, ok := claims[TenantClaim]; ok {
		p.Tenant, _ = raw.(string)
		p.HasTenant = true
	}
	if p.Grants = v.roles.grants(p.Roles); len(p.Grants) > 0 {
		p.Level = p.Grants[0]
	}
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		p.ExpiresAt = exp.Time
	}
	return p, nil
}

// key is the keyfunc: it picks the key from the algorithm this verifier accepted,
// never from anything else the header offers (jku, x5u, jwk are ignored).
func (v *Verifier) key(ctx context.Context, t *jwt.Token) (any, error) {
	alg, _ := t.Header["alg"].(string)
	if !slices.Contains(v.accepted, alg) {
		return nil, unauthenticated(MsgUnsupportedAlg) // the parser refuses these first
	}
	if _, ok := t.Header["crit"]; ok {
		return nil, unauthenticated(MsgMalformed) // no critical extension is understood
	}
	switch {
	case isHMAC(alg):
		return v.secret, nil
	case alg != "":
		if v.publicKey != nil {
			return v.publicKey, nil // its algorithms are the only asymmetric ones accepted
		}
		kid := ""
		if raw, ok := t.Header["kid"]; ok {
			if kid, ok = raw.(string); !ok {
				return nil, unauthenticated(MsgMalformed)
			}
		}
		keys, err := v.jwks.keysFor(ctx, kid, alg)
		if err != nil {
			return nil, err
		}
		set := jwt.VerificationKeySet{Keys: make([]jwt.VerificationKey, len(keys))}
		for i, k := range keys {
			set.Keys[i] = k.key
		}
		return set, nil
	}
	return nil, unauthenticated(MsgUnsupportedAlg)
}

// refusal maps a parse failure to a client-safe *Error.
func (v *Verifier) refusal(tok *jwt.Token, err error) error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	if errors.Is(err, jwt.ErrTokenMalformed) {
		return unauthenticated(MsgMalformed)
	}
	if tok != nil {
		if alg, _ := tok.Header["alg"].(string); !slices.Contains(v.accepted, alg) {
			return unauthenticated(MsgUnsupportedAlg)
		}
	}
	switch {
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return unauthenticated(MsgBadSignature)
	case errors.Is(err, jwt.ErrTokenExpired):
		return unauthenticated(MsgExpired)
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return unauthenticated(MsgNotYetValid)
	case errors.Is(err, jwt.ErrTokenInvalidClaims):
		return unauthenticated(MsgBadClaims)
	}
	return unauthenticated(MsgMalformed)
}
