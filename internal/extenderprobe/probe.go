// Package extenderprobe asks an extender whether the scheduler can reach it: one HTTP
// request to one of its verbs, over the transport the scheduler uses (its CA, client
// certificate and server name). Any HTTP answer counts, whatever its status: the
// extender is there, and its TLS handshake passed; the operator sends no pod, so it does
// not judge the answer.
package extenderprobe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// Result is what a probe saw.
type Result struct {
	// Reachable says the extender answered.
	Reachable bool
	// Reason is why not: ReasonExtenderUnreachable or ReasonExtenderTLSFailed.
	Reason v1.ConditionReason
	// Message says what happened, in one sentence.
	Message string
}

// Probe sends a GET to address/verb, as the scheduler builds its requests' URLs, with
// client, and tells whether the extender answered.
func Probe(ctx context.Context, client *http.Client, address, verb string) Result {
	url := strings.TrimRight(address, "/") + "/" + verb
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Result{Reason: v1.ReasonExtenderUnreachable, Message: fmt.Sprintf("the request to %s cannot be made: %v", url, err)}
	}
	response, err := client.Do(request)
	if err != nil {
		reason := v1.ReasonExtenderUnreachable
		if isTLSFailure(err) {
			reason = v1.ReasonExtenderTLSFailed
		}
		return Result{Reason: reason, Message: fmt.Sprintf("GET %s failed: %s", url, usertext.Cut(cause(err), 300))}
	}
	_ = response.Body.Close()
	return Result{Reachable: true, Message: fmt.Sprintf("GET %s answered HTTP %d", url, response.StatusCode)}
}

// isTLSFailure reports whether err is the TLS handshake's: a certificate not signed by the
// CA, for another name, or a client certificate refused by the extender.
func isTLSFailure(err error) bool {
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verification *tls.CertificateVerificationError
	var alert tls.AlertError
	var record tls.RecordHeaderError
	if errors.As(err, &unknownAuthority) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verification) || errors.As(err, &alert) || errors.As(err, &record) {
		return true
	}
	// A server that refuses the client certificate alerts after the handshake completes
	// on the client's side, which reports it as "remote error: tls: ..." on the first read.
	return strings.Contains(err.Error(), "remote error: tls:")
}

// cause is the innermost message of a request error: the dial's or the handshake's, without
// the method and URL that Probe's message already gives.
func cause(err error) string {
	var opError *net.OpError
	if errors.As(err, &opError) && opError.Err != nil {
		return opError.Op + ": " + opError.Err.Error()
	}
	message := err.Error()
	if _, after, found := strings.Cut(message, "\": "); found {
		return after
	}
	return message
}
