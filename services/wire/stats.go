package wire

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go/micro"
)

// EndpointStats is wire's own account of one endpoint since the service
// started, served as that endpoint's data in $SRV.STATS (`nats micro
// stats`). It has the fields micro reports at the top level of an
// endpoint's stats, under the same JSON names and in the same units
// (durations in nanoseconds), but counts what the handlers did: micro's
// own fields cannot, as the package doc explains.
type EndpointStats struct {
	// NumRequests counts the requests handled.
	NumRequests int `json:"num_requests"`
	// NumErrors counts the requests answered with an error.
	NumErrors int `json:"num_errors"`
	// LastError is the last error answered, as "code: message".
	LastError string `json:"last_error"`
	// ProcessingTime is the time spent handling requests, from decoding
	// the request to encoding the reply.
	ProcessingTime time.Duration `json:"processing_time"`
	// AverageProcessingTime is ProcessingTime over NumRequests.
	AverageProcessingTime time.Duration `json:"average_processing_time"`
}

// endpointStats holds the EndpointStats of a service's endpoints, by
// subject. micro asks for them under its own lock, so they have their own.
type endpointStats struct {
	mu        sync.Mutex
	bySubject map[string]*EndpointStats
}

func newEndpointStats() *endpointStats {
	return &endpointStats{bySubject: map[string]*EndpointStats{}}
}

// observe accounts one request that subject's handler answered in d, with
// werr (nil for success).
func (st *endpointStats) observe(subject string, werr *Error, d time.Duration) {
	st.mu.Lock()
	defer st.mu.Unlock()
	e := st.bySubject[subject]
	if e == nil {
		e = &EndpointStats{}
		st.bySubject[subject] = e
	}
	e.NumRequests++
	e.ProcessingTime += d
	e.AverageProcessingTime = e.ProcessingTime / time.Duration(e.NumRequests)
	if werr != nil {
		e.NumErrors++
		e.LastError = werr.Error()
	}
}

// data is micro's StatsHandler: the endpoint's EndpointStats, a copy.
// Endpoints have fixed subjects (no wildcards), so the subject a request
// arrived on names its endpoint.
func (st *endpointStats) data(e *micro.Endpoint) any {
	st.mu.Lock()
	defer st.mu.Unlock()
	if s := st.bySubject[e.Subject]; s != nil {
		return *s
	}
	return EndpointStats{}
}

// observe accounts one handled request in both of wire's records: the
// Prometheus metrics (when configured) and the endpoint stats $SRV.STATS
// serves.
func (s *Service) observe(subject string, werr *Error, d time.Duration) {
	var code Code
	if werr != nil {
		code = werr.Code
	}
	s.metrics.observe(s.name, subject, code, d)
	s.stats.observe(subject, werr, d)
}
