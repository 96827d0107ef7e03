package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
)

// serveKubelet serves the kubelet endpoint of podrunner's nodes on loopback, over TLS as a
// kubelet does: containerLogs, so that kubectl logs reaches pods' processes through the
// API server, and the resource metrics, so that metrics-server (where the cluster runs
// one) does for kubectl top. The nodes give this port as their kubelet's and 127.0.0.1 as
// their address. The local cluster's API server presents no client certificate to
// kubelets, so the endpoint authenticates no one; loopback keeps it to this machine. It
// returns the port.
func (r *runner) serveKubelet(ctx context.Context) (int32, error) {
	mux := http.NewServeMux()
	mux.HandleFunc(containerLogsPattern, r.containerLogs)
	mux.HandleFunc(resourceMetricsPattern, r.resourceMetrics)
	// httptest's server is a TLS server on a loopback port with a certificate of its own,
	// which is all a kubelet endpoint of this cluster needs.
	server := httptest.NewUnstartedServer(mux)
	server.StartTLS()
	go func() {
		<-ctx.Done()
		server.Close()
	}()
	_, port, err := net.SplitHostPort(server.Listener.Addr().String())
	if err != nil {
		return 0, err
	}
	number, err := strconv.ParseInt(port, 10, 32)
	return int32(number), err
}
