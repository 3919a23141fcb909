//go:build race

package proxytest

// raceBuild says the test binary has the race detector, so Exec's binary has it too:
// a race in a child fails its exit status, and the build reuses the test's packages.
const raceBuild = true
