package front

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
)

// TestReadBufGivesEveryByteThenTheError: read in pieces of any size, the
// buffered connection gives the bytes sent, in order, then the error that
// ended them.
func TestReadBufGivesEveryByteThenTheError(t *testing.T) {
	sent := bytes.Repeat([]byte("0123456789abcdef"), 3000) // three buffers' worth
	for _, piece := range []int{1, 9, 100, readBufSize - 1, readBufSize, 3 * readBufSize} {
		client, server := net.Pipe()
		go func() {
			_, _ = client.Write(sent)
			_ = client.Close()
		}()
		var rb readBuf
		var got []byte
		var err error
		p := make([]byte, piece)
		for err == nil {
			var n int
			n, err = rb.read(server, p)
			got = append(got, p[:n]...)
		}
		if !bytes.Equal(got, sent) || !errors.Is(err, io.EOF) {
			t.Errorf("pieces of %d: %d bytes (equal: %v), then %v; want the %d sent, then EOF", piece, len(got), bytes.Equal(got, sent), err, len(sent))
		}
		if rb.buf != nil {
			t.Errorf("pieces of %d: the buffer is held after the connection ended", piece)
		}
		_ = server.Close()
	}
}
