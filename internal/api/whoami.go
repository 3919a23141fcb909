package api

// Access levels as GET /api/v1/auth/whoami names them.
const (
	LevelAdmin     = "admin"
	LevelReadWrite = "read-write"
	LevelReadOnly  = "read-only"
)

// Whoami is the answer of GET /api/v1/auth/whoami: whether authentication is on,
// and the subject, level and expiry (Unix seconds) the broker resolved for the
// request's token. With authentication off: {"authEnabled":false,"sub":null,
// "level":"admin","exp":null}.
type Whoami struct {
	AuthEnabled bool    `json:"authEnabled"`
	Sub         *string `json:"sub"`
	Level       string  `json:"level"`
	Exp         *int64  `json:"exp"`
}
