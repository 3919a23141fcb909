package appliance

// Undo is a stack of closes, after Caddy's provisioning: each part of a daemon pushes
// its close right where it is opened, so that a failed open closes exactly what was
// opened before it, newest first, and no list of parts is kept twice. The zero value
// is an empty stack; it is not safe for concurrent use.
type Undo struct{ closes []func() }

// Push registers the close of a part that was just opened.
func (u *Undo) Push(close func()) { u.closes = append(u.closes, close) }

// Unwind runs the registered closes, newest first, and empties the stack.
func (u *Undo) Unwind() {
	for i := len(u.closes) - 1; i >= 0; i-- {
		u.closes[i]()
	}
	u.closes = nil
}
