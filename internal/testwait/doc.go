// Package testwait polls a condition in a test until it holds, and on timeout fails
// the test with the condition's last error, so a failure says what was still wrong
// rather than only that time ran out. It is for tests only.
package testwait
