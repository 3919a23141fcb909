// Package config is queen-proxy's configuration: one table of settings, read from
// the environment only (Load receives os.Environ() from main), with the broker's
// strict rules. Booleans take systemd's words, numbers and durations are validated,
// an empty value means unset, secrets may come from $CREDENTIALS_DIRECTORY, and any
// bad value or unknown QUEEN_PROXY_* variable is an *Error naming the variable (exit
// 78). Print writes the effective settings with secrets redacted.
package config
