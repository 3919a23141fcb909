// Package encryption seals message payloads at rest with AES-256-GCM in the on-disk
// format of upstream Queen, so a database written by either broker can be read by
// the other: the stored payload is the JSON object
// {"encrypted": b64(ciphertext), "iv": b64(16 bytes), "authTag": b64(16-byte tag)},
// standard base64 with padding, no additional data. Only the first 12 bytes of the
// 16-byte iv are the GCM nonce (upstream's OpenSSL call ignores the rest); the Sealer
// writes 16 random bytes so upstream can read what it writes.
package encryption

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// KeySize is the AES-256 key length in bytes.
const KeySize = 32

const (
	ivSize  = 16
	tagSize = 16
)

// Sealer encrypts and decrypts payloads with one key. It is safe for concurrent use.
type Sealer struct {
	aead cipher.AEAD
}

// New returns a Sealer for a 32-byte key.
func New(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("encryption: key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("encryption: %w", err)
	}
	aead, err := cipher.NewGCM(block) // 12-byte nonce, 16-byte tag
	if err != nil {
		return nil, fmt.Errorf("encryption: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// envelope is the stored form of an encrypted payload.
type envelope struct {
	Encrypted string `json:"encrypted"`
	IV        string `json:"iv"`
	AuthTag   string `json:"authTag"`
}

// Seal encrypts the compact serialisation of the JSON payload and returns the
// envelope as JSON.
func (s *Sealer) Seal(payload []byte) ([]byte, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, payload); err != nil {
		return nil, fmt.Errorf("encryption: payload is not JSON: %w", err)
	}
	iv := make([]byte, ivSize)
	if _, err := rand.Read(iv); err != nil {
		return nil, fmt.Errorf("encryption: random iv: %w", err)
	}
	sealed := s.aead.Seal(nil, iv[:s.aead.NonceSize()], compact.Bytes(), nil)
	ct, tag := sealed[:len(sealed)-tagSize], sealed[len(sealed)-tagSize:]
	return json.Marshal(envelope{
		Encrypted: base64.StdEncoding.EncodeToString(ct),
		IV:        base64.StdEncoding.EncodeToString(iv),
		AuthTag:   base64.StdEncoding.EncodeToString(tag),
	})
}

// ErrNotEnvelope means the payload is not an encrypted envelope.
var errNotEnvelope = errors.New("encryption: not an envelope")

// Open decrypts payload if it is an envelope and returns the plaintext JSON. Any other
// payload, and an envelope that does not decrypt with this key, comes back unchanged
// (upstream returns the stored object when decryption fails).
func (s *Sealer) Open(payload []byte) []byte {
	plain, err := s.open(payload)
	if err != nil {
		return payload
	}
	return plain
}

// Opens reports whether payload is an envelope that decrypts with this key.
func (s *Sealer) Opens(payload []byte) bool {
	_, err := s.open(payload)
	return err == nil
}

func (s *Sealer) open(payload []byte) ([]byte, error) {
	if !LooksSealed(payload) {
		return nil, errNotEnvelope
	}
	var env envelope
	if err := json.Unmarshal(payload, &env); err != nil || env.Encrypted == "" && env.IV == "" {
		return nil, errNotEnvelope
	}
	ct, err1 := base64.StdEncoding.DecodeString(env.Encrypted)
	iv, err2 := base64.StdEncoding.DecodeString(env.IV)
	tag, err3 := base64.StdEncoding.DecodeString(env.AuthTag)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	if len(iv) < s.aead.NonceSize() || len(tag) != tagSize {
		return nil, errNotEnvelope
	}
	plain, err := s.aead.Open(nil, iv[:s.aead.NonceSize()], append(ct, tag...), nil)
	if err != nil {
		return nil, err
	}
	if !json.Valid(plain) {
		return nil, errNotEnvelope
	}
	return plain, nil
}

// LooksSealed reports cheaply whether payload may be an envelope (an object with the
// three keys), so plain payloads skip the JSON decode.
func LooksSealed(payload []byte) bool {
	p := bytes.TrimSpace(payload)
	return len(p) > 0 && p[0] == '{' &&
		bytes.Contains(p, []byte(`"encrypted"`)) && bytes.Contains(p, []byte(`"iv"`)) && bytes.Contains(p, []byte(`"authTag"`))
}
