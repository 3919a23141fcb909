package config

// Reference is one setting as reference pages list it (the ENVIRONMENT section of
// queen-proxy(8)).
type Reference struct {
	// Name is the variable; Fallback the original Queen 0.15 variable read when it is
	// unset ("" for none).
	Name, Fallback string
	// Default is the built-in default ("" when none).
	Default string
	// Doc is a short meaning ("" when the name says it all).
	Doc string
	// Accepts names the values the setting takes, with their limits.
	Accepts string
	// Secret: never printed or logged; may also come from $CREDENTIALS_DIRECTORY.
	Secret bool
}

// References lists every setting queen-proxy implements, in table order.
func References() []Reference {
	out := make([]Reference, 0, len(settings))
	for _, s := range settings {
		out = append(out, Reference{Name: s.name, Fallback: s.fallback, Default: s.def, Doc: s.doc, Accepts: s.accepts(), Secret: s.secret})
	}
	return out
}
