package config

// Reference is one setting as reference pages list it (the ENVIRONMENT section of
// queen(8)): what docs/configuration.md shows, without its Markdown table.
type Reference struct {
	// Name is the variable; Group the docs section it belongs to.
	Name, Group string
	// Default is the default as the docs show it ("" when empty).
	Default string
	// Kind is the value's type ("boolean", "duration", …), with ", secret" or
	// ", credential" when it may come from $CREDENTIALS_DIRECTORY.
	Kind string
	// Doc is the meaning, one paragraph; `code` is in backquotes.
	Doc string
}

// References lists every setting queen implements, in document order.
func References() []Reference {
	t := table()
	out := make([]Reference, 0, len(t))
	for _, s := range t {
		def := s.def
		if s.defDoc != "" {
			def = s.defDoc
		}
		kind := s.bind(&Config{}).Kind()
		if s.secret {
			kind += ", secret"
		}
		if s.credential {
			kind += ", credential"
		}
		out = append(out, Reference{Name: s.name, Group: s.group.title(), Default: def, Kind: kind, Doc: s.doc})
	}
	return out
}
