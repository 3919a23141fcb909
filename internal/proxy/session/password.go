package session

import "golang.org/x/crypto/bcrypt"

// Cost is the bcrypt cost of every stored password hash.
const Cost = 12

// dummyHash is checked against when a user is unknown. It is a real cost-12 hash
// of a password nobody has, so the check takes as long as a real one.
const dummyHash = "$2a$12$AXhPlxb/6qdaWgkjosoB7eEZ0M4ej6MhW3i7b/ViCc5LNx5g2292i"

// HashPassword returns the bcrypt hash of pw at cost (0 = Cost, what the proxy
// always uses; tests go lower, as cost 12 takes seconds under the race detector).
func HashPassword(pw string, cost int) (string, error) {
	if cost == 0 {
		cost = Cost
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), cost)
	if err != nil {
		return "", err
	}
	return string(h), nil
}

// CheckPassword reports whether pw matches hash; an empty hash (an unknown user)
// is checked against a dummy and fails.
func CheckPassword(hash, pw string) bool {
	if hash == "" {
		_ = bcrypt.CompareHashAndPassword([]byte(dummyHash), []byte(pw))
		return false
	}
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(pw)) == nil
}
