package store

// The hot result sets (a pop's messages, a push's or an ack's outcomes) repeat the
// same few strings on every row (partition, queue, status) and carry a few unique ones
// (message and transaction ids, payloads). The helpers below scan them without a heap
// allocation per value: repeated values are reused, unique ones share one allocation
// per result set. Raw values are pgtype.DriverBytes, valid only until the next row.

// reuse returns *last when raw spells it, else raw as a new string, kept in *last for
// the next row.
func reuse(last *string, raw []byte) string {
	if string(raw) != *last {
		*last = string(raw)
	}
	return *last
}

// textArena gathers unique text values of a result set into one buffer; after the last
// row, strings turns it into one string that every value is a substring of.
type textArena struct {
	buf []byte
}

// span is the position of a value in a textArena or a byte slab.
type span struct{ from, to int }

// add appends raw and returns its position.
func (a *textArena) add(raw []byte) span {
	from := len(a.buf)
	a.buf = append(a.buf, raw...)
	return span{from, len(a.buf)}
}

// strings returns the gathered text as one string; s[sp.from:sp.to] is a value.
func (a *textArena) strings() string { return string(a.buf) }
