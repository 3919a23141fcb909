package auth

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// MinRSABits is the smallest RSA modulus accepted, from JWT_PUBLIC_KEY or a JWKS.
const MinRSABits = 2048

// Algorithm names of the token header's alg member.
const (
	AlgHS256 = "HS256"
	AlgRS256 = "RS256"
	AlgEdDSA = "EdDSA"
)

// ParsePublicKey parses a PEM public key for JWT_PUBLIC_KEY: a PKIX "PUBLIC KEY", a
// PKCS#1 "RSA PUBLIC KEY" or a "CERTIFICATE" (its key is used; the certificate itself is
// not validated). Only RSA keys of at least MinRSABits and Ed25519 keys are accepted;
// a private key is refused, so that it cannot end up in the environment by mistake.
// Errors never quote the key material.
func ParsePublicKey(pemText string) (crypto.PublicKey, error) {
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

// checkKey accepts RSA (at least MinRSABits) and Ed25519 public keys.
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
	}
	return nil, fmt.Errorf("unsupported key type %T (want RSA or Ed25519)", key)
}

// keyAlgorithm is the only token algorithm key may verify: RS256 for RSA, EdDSA for
// Ed25519.
func keyAlgorithm(key crypto.PublicKey) string {
	switch key.(type) {
	case *rsa.PublicKey:
		return AlgRS256
	case ed25519.PublicKey:
		return AlgEdDSA
	}
	return ""
}

// describeKey names a key for the boot log, e.g. "RSA 2048" or "Ed25519".
func describeKey(key crypto.PublicKey) string {
	switch k := key.(type) {
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA %d", k.N.BitLen())
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
}

// jwksKey is one usable key of a JWKS.
type jwksKey struct {
	kid string
	alg string // the only token algorithm it verifies
	key crypto.PublicKey
}

// parseJWK turns j into a usable key, or explains why it is skipped: a use other than
// sig, a key type other than RSA or OKP/Ed25519, an alg member that disagrees with the
// key type, or bad key material.
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
	default:
		return jwksKey{}, fmt.Errorf("key type %q is not RSA or OKP", j.Kty)
	}
	if err != nil {
		return jwksKey{}, err
	}
	pub, err := checkKey(key)
	if err != nil {
		return jwksKey{}, err
	}
	alg := keyAlgorithm(pub)
	if j.Alg != "" && j.Alg != alg {
		return jwksKey{}, fmt.Errorf("alg %q does not fit a %s key", j.Alg, describeKey(pub))
	}
	return jwksKey{kid: j.Kid, alg: alg, key: pub}, nil
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
