package broker

import (
	"bytes"
	"errors"
	"io"

	"github.com/klauspost/compress/zstd"
)

// timerZstdMaxWindow is the largest zstd window a timer payload may declare: 8 MiB,
// the window every zstd decoder is expected to support (and the default of the
// common encoders), so the decoder's memory stays bounded whatever the frame says.
const timerZstdMaxWindow = 8 << 20

// Why a payloadZstd payload cannot be inflated.
var (
	// errTimerZstdBad means the payload is not a valid zstd stream.
	errTimerZstdBad = errors.New("the payload is not a valid zstd stream")
	// errTimerZstdTooLarge means it decompresses to more than MaxTimerPayload bytes.
	errTimerZstdTooLarge = errors.New("the payload decompresses to more than the payload ceiling")
)

// inflateTimerPayload decompresses a payloadZstd payload (one or more zstd frames),
// reading at most MaxTimerPayload+1 bytes of output: a larger one is
// errTimerZstdTooLarge, a corrupt one errTimerZstdBad.
func inflateTimerPayload(src []byte) ([]byte, error) {
	d, err := zstd.NewReader(bytes.NewReader(src), zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxWindow(timerZstdMaxWindow), zstd.WithDecoderMaxMemory(timerZstdMaxWindow))
	if err != nil {
		return nil, errTimerZstdBad
	}
	defer d.Close()
	out, err := io.ReadAll(io.LimitReader(d, MaxTimerPayload+1))
	switch {
	case err != nil:
		return nil, errTimerZstdBad
	case len(out) > MaxTimerPayload:
		return nil, errTimerZstdTooLarge
	}
	return out, nil
}
