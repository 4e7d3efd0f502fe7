package front

import (
	"net/http"
	"sync"
)

// net/http starts a goroutine per request (per stream, over HTTP/2) with a
// small stack, and the handler chain grows it again, copying it, on
// every request. handlerWorkers keeps goroutines whose stacks have grown
// already: a request an idle worker can take runs on it, while its own
// goroutine waits; when every worker is busy (long polls, streams) the
// request runs on its own goroutine, so nothing ever queues. A/B pairs
// show it cheaper per request than net/http's own goroutines alone
// (docs/BENCHMARKS.md, "Server CPU per reservation over HTTP/2").
type handlerWorkers struct {
	h    http.Handler
	jobs chan *handlerJob
	quit chan struct{}
	once sync.Once
}

// handlerJob is one request handed to a worker; done receives the value
// the handler panicked with, or nil.
type handlerJob struct {
	w    http.ResponseWriter
	r    *http.Request
	done chan any
}

// handlerWorkerCount is how many workers wait for requests.
const handlerWorkerCount = 256

var handlerJobs = sync.Pool{New: func() any { return &handlerJob{done: make(chan any, 1)} }}

// onWorkers serves h's requests on n workers, until stop.
func onWorkers(h http.Handler, n int) *handlerWorkers {
	p := &handlerWorkers{h: h, jobs: make(chan *handlerJob), quit: make(chan struct{})}
	for range n {
		go p.work()
	}
	return p
}

// ServeHTTP runs the request on an idle worker, or here if none is idle.
// A panic in the handler is raised again here, where net/http recovers
// it as it would the handler's own.
func (p *handlerWorkers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	j := handlerJobs.Get().(*handlerJob)
	j.w, j.r = w, r
	select {
	case p.jobs <- j:
	default:
		handlerJobs.Put(j)
		p.h.ServeHTTP(w, r)
		return
	}
	v := <-j.done
	j.w, j.r = nil, nil
	handlerJobs.Put(j)
	if v != nil {
		panic(v)
	}
}

func (p *handlerWorkers) work() {
	for {
		select {
		case j := <-p.jobs:
			j.done <- p.serve(j)
		case <-p.quit:
			return
		}
	}
}

// entering gives each request its netRequest (entered) before h serves
// it, and decides its ticket, if admission has not, once h returns.
func entering(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, nr := entered(w, r)
		defer nr.ticket.decide() // a request refused or served outside admission
		h.ServeHTTP(w, r)
	})
}

// stop ends the idle workers, and each busy one when its request ends;
// requests then run on their own goroutines.
func (p *handlerWorkers) stop() { p.once.Do(func() { close(p.quit) }) }

// serve runs one job and returns what its handler panicked with.
func (p *handlerWorkers) serve(j *handlerJob) (panicked any) {
	defer func() { panicked = recover() }()
	p.h.ServeHTTP(j.w, j.r)
	return nil
}
