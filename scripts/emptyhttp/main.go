// Command emptyhttp serves an empty 200 to every request: the ceiling of
// what Go's net/http can answer on this machine, to measure beside surge's
// /v0 figures in the same session and the same way (docs/BENCHMARKS.md quotes one).
//
//	go run ./scripts/emptyhttp -addr 127.0.0.1:8081
//
// It answers a PUT's 201 and a GET's 200 alike with no body, reading
// whatever body came, so surge bench kv and the wrk scripts run against it
// unchanged. With -fasthttp it is fasthttp's server instead, the ceiling of
// surge's HTTP/1.1 front door (internal/front).
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/valyala/fasthttp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "address to listen on")
	fast := flag.Bool("fasthttp", false, "serve with fasthttp instead of net/http")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	// The same listening line as surge serve, so scripts find the port.
	fmt.Printf("surge: listening on http://%s\n", ln.Addr())
	if *fast {
		log.Fatal(fasthttp.Serve(ln, func(ctx *fasthttp.RequestCtx) { // fasthttp has read the body
			if ctx.IsPut() {
				ctx.SetStatusCode(fasthttp.StatusCreated)
			}
		}))
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if r.Method == http.MethodPut {
				w.WriteHeader(http.StatusCreated)
			}
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	log.Fatal(srv.Serve(ln))
}
