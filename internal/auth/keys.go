package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
)

// MinRSABits is the smallest RSA modulus accepted, from JWT_PUBLIC_KEY or a JWKS.
const MinRSABits = 2048

// Algorithm names of the token header's alg member.
const (
	AlgHS256 = "HS256"
	AlgHS384 = "HS384"
	AlgHS512 = "HS512"
	AlgRS256 = "RS256"
	AlgRS384 = "RS384"
	AlgRS512 = "RS512"
	AlgES256 = "ES256"
	AlgEdDSA = "EdDSA"
)

// AlgAuto is the JWT_ALGORITHM value that accepts every algorithm whose key is
// configured.
const AlgAuto = "auto"

// Algorithms returns the JWT_ALGORITHM values NewVerifier accepts, AlgAuto last.
func Algorithms() []string {
	return []string{AlgHS256, AlgHS384, AlgHS512, AlgRS256, AlgRS384, AlgRS512, AlgES256, AlgEdDSA, AlgAuto}
}

// hmacAlgorithms, rsaAlgorithms: the algorithms of one key family.
var (
	hmacAlgorithms = []string{AlgHS256, AlgHS384, AlgHS512}
	rsaAlgorithms  = []string{AlgRS256, AlgRS384, AlgRS512}
)

// acceptedBy is the set of token algorithms a JWT_ALGORITHM value names, before the
// configured keys narrow it: each algorithm names itself, except RS256, which names
// RS256, RS384 and RS512 (as the Queen 1.x brokers read it), and auto, which names
// them all. nil for an unknown value.
func acceptedBy(setting string) []string {
	switch setting {
	case AlgRS256:
		return slices.Clone(rsaAlgorithms)
	case AlgAuto:
		return slices.DeleteFunc(Algorithms(), func(a string) bool { return a == AlgAuto })
	}
	if slices.Contains(Algorithms(), setting) {
		return []string{setting}
	}
	return nil
}

// isHMAC reports whether alg is verified with JWT_SECRET.
func isHMAC(alg string) bool { return slices.Contains(hmacAlgorithms, alg) }

// ParsePublicKey parses a PEM public key for JWT_PUBLIC_KEY: a PKIX "PUBLIC KEY", a
// PKCS#1 "RSA PUBLIC KEY" or a "CERTIFICATE" (its key is used; the certificate itself is
// not validated). Only RSA keys of at least MinRSABits, ECDSA P-256 and Ed25519 keys
// are accepted;
// a private key is refused, so that it cannot end up in the environment by mistake.
// Errors never quote the key material.
func ParsePublicKey(pemText string) (crypto.PublicKey, error) {
	if strings.Contains(pemText, "PRIVATE KEY-----") {
		return nil, errors.New("the PEM is a private key or holds one; give the public key or certificate only")
	}
	block, _ := pem.Decode([]byte(strings.TrimSpace(pemText)))
	if block == nil {
		return nil, errors.New("not a PEM block")
	}
	var (
		key any
		err error
	)
	switch block.Type {
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			key = cert.PublicKey
		}
	default:
		if strings.Contains(block.Type, "PRIVATE") {
			return nil, fmt.Errorf("PEM block %q is a private key; give the public key only", block.Type)
		}
		return nil, fmt.Errorf("PEM block %q is not a public key", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", block.Type, err)
	}
	return checkKey(key)
}

// checkKey accepts RSA (at least MinRSABits), ECDSA P-256 and Ed25519 public keys.
func checkKey(key any) (crypto.PublicKey, error) {
	switch k := key.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < MinRSABits {
			return nil, fmt.Errorf("RSA key of %d bits is shorter than %d", k.N.BitLen(), MinRSABits)
		}
		return k, nil
	case ed25519.PublicKey:
		if len(k) != ed25519.PublicKeySize {
			return nil, errors.New("Ed25519 key of the wrong size")
		}
		return k, nil
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("ECDSA key on curve %s (want P-256, for ES256)", k.Curve.Params().Name)
		}
		return k, nil
	}
	return nil, fmt.Errorf("unsupported key type %T (want RSA, ECDSA P-256 or Ed25519)", key)
}

// keyAlgorithms are the token algorithms key may verify: RS256, RS384 and RS512 for
// RSA, ES256 for ECDSA P-256, EdDSA for Ed25519.
func keyAlgorithms(key crypto.PublicKey) []string {
	switch key.(type) {
	case *rsa.PublicKey:
		return slices.Clone(rsaAlgorithms)
	case *ecdsa.PublicKey:
		return []string{AlgES256}
	case ed25519.PublicKey:
		return []string{AlgEdDSA}
	}
	return nil
}

// describeKey names a key for the boot log, e.g. "RSA 2048" or "Ed25519".
func describeKey(key crypto.PublicKey) string {
	switch k := key.(type) {
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA %d", k.N.BitLen())
	case *ecdsa.PublicKey:
		return "ECDSA " + k.Curve.Params().Name
	case ed25519.PublicKey:
		return "Ed25519"
	}
	return "unknown"
}

// jwk is the subset of RFC 7517 members queen reads.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// jwksKey is one usable key of a JWKS.
type jwksKey struct {
	kid  string
	algs []string // the token algorithms it verifies
	key  crypto.PublicKey
}

// parseJWK turns j into a usable key, or explains why it is skipped: a use other than
// sig, a key type other than RSA, EC/P-256 or OKP/Ed25519, an alg member that disagrees
// with the key type, or bad key material. A key with an alg member verifies that
// algorithm only; one without verifies every algorithm of its type.
func parseJWK(j jwk) (jwksKey, error) {
	if j.Use != "" && j.Use != "sig" {
		return jwksKey{}, fmt.Errorf("use %q is not sig", j.Use)
	}
	var (
		key any
		err error
	)
	switch j.Kty {
	case "RSA":
		key, err = rsaFromJWK(j.N, j.E)
	case "OKP":
		if j.Crv != "Ed25519" {
			return jwksKey{}, fmt.Errorf("OKP curve %q is not Ed25519", j.Crv)
		}
		var x []byte
		if x, err = decodeB64URL(j.X); err == nil {
			key = ed25519.PublicKey(x)
		}
	case "EC":
		key, err = ecFromJWK(j.Crv, j.X, j.Y)
	default:
		return jwksKey{}, fmt.Errorf("key type %q is not RSA, EC or OKP", j.Kty)
	}
	if err != nil {
		return jwksKey{}, err
	}
	pub, err := checkKey(key)
	if err != nil {
		return jwksKey{}, err
	}
	algs := keyAlgorithms(pub)
	if j.Alg != "" {
		if !slices.Contains(algs, j.Alg) {
			return jwksKey{}, fmt.Errorf("alg %q does not fit a %s key", j.Alg, describeKey(pub))
		}
		algs = []string{j.Alg}
	}
	return jwksKey{kid: j.Kid, algs: algs, key: pub}, nil
}

// ecFromJWK builds a P-256 key from its JWK coordinates; a point off the curve is an
// error.
func ecFromJWK(crv, x, y string) (*ecdsa.PublicKey, error) {
	if crv != "P-256" {
		return nil, fmt.Errorf("EC curve %q is not P-256", crv)
	}
	xb, errX := decodeB64URL(x)
	yb, errY := decodeB64URL(y)
	if errX != nil || errY != nil || len(xb) != 32 || len(yb) != 32 {
		return nil, errors.New("bad EC point")
	}
	k, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), slices.Concat([]byte{4}, xb, yb))
	if err != nil {
		return nil, errors.New("bad EC point")
	}
	return k, nil
}

func rsaFromJWK(n, e string) (*rsa.PublicKey, error) {
	nb, err := decodeB64URL(n)
	if err != nil || len(nb) == 0 {
		return nil, errors.New("bad RSA modulus")
	}
	eb, err := decodeB64URL(e)
	if err != nil || len(eb) == 0 || len(eb) > 4 {
		return nil, errors.New("bad RSA exponent")
	}
	exp := new(big.Int).SetBytes(eb)
	if !exp.IsInt64() || exp.Int64() < 3 || exp.Int64() > 1<<31-1 || exp.Bit(0) == 0 {
		return nil, errors.New("bad RSA exponent")
	}
	return &rsa.PublicKey{N: new(big.Int).SetBytes(nb), E: int(exp.Int64())}, nil
}

// decodeB64URL decodes base64url with or without padding.
func decodeB64URL(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}
