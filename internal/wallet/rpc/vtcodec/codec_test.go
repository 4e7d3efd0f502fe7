package vtcodec

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/encoding"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
)

// historyPage is a GetHistory reply of n items with every field set,
// non-ASCII text included.
func historyPage(n int) *walletv1.GetHistoryResponse {
	res := &walletv1.GetHistoryResponse{NextPageToken: "c42"}
	for i := range n {
		res.Items = append(res.Items, &walletv1.HistoryItem{
			Type:                walletv1.HistoryItem_Type(1 + i%2),
			TransferId:          fmt.Sprintf("wallet-%d-req-%d", i, i*7),
			CounterpartAccount:  fmt.Sprintf("w/%d", 1000+i),
			CounterpartUserId:   uint64(1000 + i),
			CounterpartUsername: fmt.Sprintf("user-%d-ünïcode-💸", i),
			Amount:              int64(1 + i*13),
			BalanceAfter:        int64(-5 + i*1_000_000_007),
			Message:             strings.Repeat("thanks ", i%5),
			Time:                timestamppb.New(time.Unix(1_790_000_000+int64(i), int64(i)*1_000_001)),
		})
	}
	return res
}

func encode(t *testing.T, c encoding.CodecV2, m any) []byte {
	t.Helper()
	data, err := c.Marshal(m)
	if err != nil {
		t.Fatalf("marshal %T: %v", m, err)
	}
	defer data.Free()
	return data.Materialize()
}

// The generated encoder must produce the bytes the reflective one does, for
// small replies and for those large enough to come from the buffer pool.
func TestCodecEncodesAsTheDefaultCodec(t *testing.T) {
	msgs := []any{
		historyPage(0), historyPage(1), historyPage(20), historyPage(500),
		&walletv1.GetBalanceResponse{Balance: 1 << 40, Currency: "SRG"},
		&walletv1.GetBalanceResponse{},
		&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, // no generated code
	}
	for _, m := range msgs {
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(m.(proto.Message))
		if err != nil {
			t.Fatal(err)
		}
		if got := encode(t, Server, m); !bytes.Equal(got, want) {
			t.Errorf("%T: Codec wrote %d bytes that differ from the default codec's %d", m, len(got), len(want))
		}
	}
	if _, ok := any(historyPage(1)).(vtMessage); !ok {
		t.Fatal("GetHistoryResponse has no generated encoder: run make proto")
	}
}

// Both ways of decoding must read back what was encoded, and replace what
// the message held before: grpc-go clients decode into reused replies.
func TestCodecDecodesWhatItEncoded(t *testing.T) {
	for _, c := range []Codec{Server, {TrustInput: true}} {
		for _, want := range []*walletv1.GetHistoryResponse{historyPage(20), historyPage(3), historyPage(0)} {
			got := historyPage(7)
			if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(encode(t, c, want))}, got); err != nil {
				t.Fatalf("%+v: %v", c, err)
			}
			if !proto.Equal(got, want) {
				t.Errorf("%+v: decoded %d items, want %d as encoded", c, len(got.Items), len(want.Items))
			}
		}
	}
}

// The server's codec refuses strings that are not UTF-8, as proto3
// requires.
func TestServerCodecRefusesRequestsThatAreNotUTF8(t *testing.T) {
	good := encode(t, Server, &walletv1.TransferRequest{ToUserId: 7, Amount: 5, Message: "hi"})
	bad := bytes.Replace(good, []byte("hi"), []byte{'h', 0xff}, 1)
	if err := Server.Unmarshal(mem.BufferSlice{mem.SliceBuffer(bad)}, &walletv1.TransferRequest{}); err == nil {
		t.Fatal("a request with a message that is not UTF-8 was decoded")
	}
}

// codecs are the ways of encoding and decoding that the benchmarks compare.
var codecs = []struct {
	name  string
	codec encoding.CodecV2
}{{"default", fallback}, {"generated", Codec{TrustInput: true}}}

// BenchmarkEncodeHistoryPage compares the encoders on the page surge bench
// wallet asks for (20 items).
func BenchmarkEncodeHistoryPage(b *testing.B) {
	page := historyPage(20)
	for _, c := range codecs {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				data, err := c.codec.Marshal(page)
				if err != nil {
					b.Fatal(err)
				}
				data.Free()
			}
		})
	}
}

// BenchmarkDecodeHistoryPage compares the decoders on the same page, into
// a reused reply as the load generator decodes.
func BenchmarkDecodeHistoryPage(b *testing.B) {
	data, err := proto.Marshal(historyPage(20))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range codecs {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var reply walletv1.GetHistoryResponse
			for b.Loop() {
				if err := c.codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, &reply); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
