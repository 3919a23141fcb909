package config

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
)

// parseSigningKey reads the broker signing key: a PEM private key (Ed25519 or RSA
// of at least 2048 bits) or, when the value is no PEM, an HS256 secret of at least
// 32 bytes. EC keys are refused: the broker cannot verify ES256.
func parseSigningKey(v string) (any, error) {
	if !strings.Contains(v, "-----BEGIN") {
		if len(v) < 32 {
			return nil, hintError("an HS256 secret must be at least 32 bytes")
		}
		return []byte(v), nil
	}
	block, _ := pem.Decode([]byte(v))
	if block == nil {
		return nil, hintError("not a PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		return nil, hintError("EC keys are not supported: the broker cannot verify ES256; use Ed25519 or RSA")
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, hintError("not a PKCS#1 or PKCS#8 private key")
	}
	switch k := key.(type) {
	case ed25519.PrivateKey:
		return k, nil
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return nil, hintError("RSA keys must have at least 2048 bits")
		}
		return k, nil
	case *ecdsa.PrivateKey:
		return nil, hintError("EC keys are not supported: the broker cannot verify ES256; use Ed25519 or RSA")
	}
	return nil, hintError("unsupported key type; use Ed25519 or RSA")
}
