package queue

import (
	"strings"
	"unicode/utf8"
)

// Fixed limits of the data model: names and transaction
// ids are varchar(255) in the upstream schema, so longer values are refused before
// any SQL runs.
const (
	MaxNameLength          = 255
	MaxTransactionIDLength = 255
	// DefaultPartition is the partition used when a push names none.
	DefaultPartition = "Default"
	// QueueModeGroup is the implicit consumer group of queue mode.
	QueueModeGroup = "__QUEUE_MODE__"
)

// CheckName validates a queue, partition or consumer-group name for field.
func CheckName(field, name string) error {
	if name == "" {
		return Invalid(field, "%s must not be empty", field)
	}
	if utf8.RuneCountInString(name) > MaxNameLength {
		return Invalid(field, "%s must be at most %d characters", field, MaxNameLength)
	}
	if !utf8.ValidString(name) || containsNUL(name) {
		return Invalid(field, "%s must be valid UTF-8 without NUL characters", field)
	}
	return CheckNoReplacement(field, name)
}

// CheckNoReplacement refuses an identifier holding U+FFFD. Decoding JSON turns bytes
// that are not UTF-8, and unpaired surrogate escapes such as \ud800, into U+FFFD, so
// two different names sent that way would be stored as one (a message then answered
// as a duplicate of another, a key overwriting another).
func CheckNoReplacement(field, s string) error {
	if strings.ContainsRune(s, utf8.RuneError) {
		return Invalid(field, "%s must not hold U+FFFD (bytes that are not UTF-8 and unpaired surrogate escapes decode to it)", field)
	}
	return nil
}

// TransactionIDTooLong reports whether id has more characters than a transaction id
// may (varchar counts characters, not bytes).
func TransactionIDTooLong(id string) bool {
	return len(id) > MaxTransactionIDLength && utf8.RuneCountInString(id) > MaxTransactionIDLength
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}
