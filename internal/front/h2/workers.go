package h2

// A stream's handler runs on a goroutine of its own, since a handler may
// wait (for the engine's round, a long-poll's event, a stream's next
// message). A fresh goroutine starts with a small stack, which the
// handler chain grows again, copying it, on every request; so goroutines
// that have run a stream wait for the next one, up to maxWorkers of them,
// and a stream no idle worker takes starts a goroutine of its own.
// Nothing ever queues.

// maxWorkers bounds the goroutines kept waiting for streams.
const maxWorkers = 256

// dispatch runs st on an idle worker, or on a new goroutine.
func (s *Server) dispatch(st *stream) {
	select {
	case s.jobs <- st:
	default:
		go s.work(st)
	}
}

// work runs st, then, while fewer than maxWorkers wait, the streams
// dispatch hands it, until Shutdown.
func (s *Server) work(st *stream) {
	st.run()
	if s.workers.Add(1) > maxWorkers {
		s.workers.Add(-1)
		return
	}
	defer s.workers.Add(-1)
	for {
		select {
		case st := <-s.jobs:
			st.run()
		case <-s.quit:
			return
		}
	}
}
