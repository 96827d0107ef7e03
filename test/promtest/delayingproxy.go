package promtest

import (
	"context"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"time"
)

// DelayingProxy is a reverse proxy that holds every request for its delay before
// forwarding it: a Prometheus that answers late, as one busy with heavy queries or far
// away does. It counts what it received, and what it did with it.
type DelayingProxy struct {
	delay                          time.Duration
	forward                        http.Handler
	received, forwarded, abandoned atomic.Int64
}

// ProxyCounts are a DelayingProxy's counts: the requests it received, those it forwarded
// once held for its delay, and those whose client gave up while held.
type ProxyCounts struct{ Received, Forwarded, Abandoned int64 }

// NewDelayingProxy forwards to target, after delay.
func NewDelayingProxy(target *url.URL, delay time.Duration) *DelayingProxy {
	forward := httputil.NewSingleHostReverseProxy(target)
	// A client that gives up while an answer is being forwarded is expected here; the
	// default handler would log each one.
	forward.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	return &DelayingProxy{delay: delay, forward: forward}
}

// ServeHTTP holds r for the proxy's delay, then forwards it; a request whose client gave
// up meanwhile is dropped.
func (p *DelayingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.received.Add(1)
	hold := time.NewTimer(p.delay)
	defer hold.Stop()
	select {
	case <-r.Context().Done():
		p.abandoned.Add(1)
		return
	case <-hold.C:
	}
	p.forwarded.Add(1)
	p.forward.ServeHTTP(w, r)
}

// Counts are the proxy's counts now.
func (p *DelayingProxy) Counts() ProxyCounts {
	return ProxyCounts{Received: p.received.Load(), Forwarded: p.forwarded.Load(), Abandoned: p.abandoned.Load()}
}

// SettledCounts are the proxy's counts once it holds no request, or after timeout or
// when ctx ends: a client that gave up is seen a moment later, when its connection
// closes.
func (p *DelayingProxy) SettledCounts(ctx context.Context, timeout time.Duration) ProxyCounts {
	deadline := time.Now().Add(timeout)
	for {
		counts := p.Counts()
		if counts.Settled() || time.Now().After(deadline) {
			return counts
		}
		select {
		case <-ctx.Done():
			return counts
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Settled is whether every request received was forwarded or abandoned: none is held.
func (c ProxyCounts) Settled() bool { return c.Received == c.Forwarded+c.Abandoned }
