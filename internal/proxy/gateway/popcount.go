package gateway

// popCounter counts the elements of the top-level "messages" array of a pop answer
// as its bytes stream past, without holding them: a JSON scanner that tracks only
// nesting, strings and the keys of the outermost object.
type popCounter struct {
	stack      []byte // open containers, '{' or '['
	inStr, esc bool
	keyPos     bool // inside an object, where a key comes next
	collecting bool // reading a key of the outermost object
	key        []byte
	lastKey    string
	inMessages bool // the open array at depth 2 is "messages"
	wantElem   bool // inside it, waiting for an element to start
	n          int64
}

func newPopCounter() *popCounter { return &popCounter{} }

func (p *popCounter) count() int64 { return p.n }

// Write scans b; it never fails.
func (p *popCounter) Write(b []byte) (int, error) {
	for _, c := range b {
		if p.inStr {
			p.scanString(c)
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		if p.wantElem && c != ']' {
			p.n++
			p.wantElem = false
		}
		switch c {
		case '"':
			p.inStr = true
			if len(p.stack) == 1 && p.stack[0] == '{' && p.keyPos {
				p.collecting, p.key = true, p.key[:0]
			}
			p.keyPos = false
		case '{':
			p.stack = append(p.stack, '{')
			p.keyPos = true
		case '[':
			p.stack = append(p.stack, '[')
			if len(p.stack) == 2 && p.stack[0] == '{' && p.lastKey == "messages" {
				p.inMessages, p.wantElem = true, true
			}
		case '}', ']':
			if len(p.stack) > 0 {
				p.stack = p.stack[:len(p.stack)-1]
			}
			if len(p.stack) < 2 {
				p.inMessages = false
			}
			p.wantElem = false
		case ',':
			if len(p.stack) > 0 && p.stack[len(p.stack)-1] == '{' {
				p.keyPos = true
			}
			if p.inMessages && len(p.stack) == 2 {
				p.wantElem = true
			}
		case ':':
			p.keyPos = false
		}
	}
	return len(b), nil
}

func (p *popCounter) scanString(c byte) {
	switch {
	case p.esc:
		p.esc = false
	case c == '\\':
		p.esc = true
	case c == '"':
		p.inStr = false
		if p.collecting {
			p.lastKey, p.collecting = string(p.key), false
		}
		return
	}
	if p.collecting && len(p.key) < 32 {
		p.key = append(p.key, c)
	}
}
