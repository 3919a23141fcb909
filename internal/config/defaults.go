package config

import "fmt"

// Defaults returns the configuration of an empty environment: every setting at its
// default, what Load(nil) gives. Code that needs a default (a test, a library caller)
// takes it from here, so the settings table stays the only place defaults are written.
// It panics only if the table itself is broken.
func Defaults() *Config {
	c, err := Load(nil)
	if err != nil {
		panic(fmt.Sprintf("config: the defaults of the settings table do not load: %v", err))
	}
	return c
}
