// Package jsonscan is the single-pass JSON reader behind the fast decoders of the
// bodies queen reads most (the broker's push and ack bodies, queen-proxy's push bodies
// and push answers) and the compacting writer of the pop answers' payloads. It reads
// the common shape only and gives up on anything else; its callers then run
// encoding/json on the same bytes, which decides, with its own error messages. The
// strings it scans are walked eight bytes at a time (IndexStop). Stdlib only.
package jsonscan
