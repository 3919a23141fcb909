//go:build !race

package proxytest

// raceBuild says the test binary has the race detector; see race.go.
const raceBuild = false
