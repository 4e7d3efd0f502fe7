// Command emptyhttp serves an empty 200 to every request: the ceiling of
// what Go's net/http can answer on this machine, to measure beside surge's
// /v0 figures in the same session and the same way (docs/BENCHMARKS.md quotes one).
//
//	go run ./scripts/emptyhttp -addr 127.0.0.1:8081
//
// It answers a PUT's 201 and a GET's 200 alike with no body, reading
// whatever body came, so surge bench kv and the wrk scripts run against it
// unchanged. With -fasthttp it is fasthttp's server instead, the ceiling of
// surge's HTTP/1.1 front door (internal/front). With -h2c the net/http
// server also speaks HTTP/2 without TLS (prior knowledge), and answers
// ticket-master's client with the least it accepts: the event it creates
// echoed back (the client reads its areas from it), and each reservation
// read back as an empty object (the client counts it as not reserved).
// scripts/tm-client.sh runs that client against it beside surge.
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
	h2c := flag.Bool("h2c", false, "also serve HTTP/2 without TLS, and ticket-master's routes")
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
	var handler http.Handler = http.HandlerFunc(empty)
	if *h2c {
		handler = ticketMaster()
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	if *h2c {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetUnencryptedHTTP2(true)
	}
	log.Fatal(srv.Serve(ln))
}

// empty reads the body and answers 201 to a PUT, 200 to anything else.
func empty(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	if r.Method == http.MethodPut {
		w.WriteHeader(http.StatusCreated)
	}
}

// ticketMaster answers ticket-master's client: its new event echoed, its
// reservations read back as {}, anything else as empty.
func ticketMaster() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/event", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(w, r.Body)
	})
	mux.HandleFunc("GET /v1/reservation/", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "{}")
	})
	mux.HandleFunc("/", empty)
	return mux
}
