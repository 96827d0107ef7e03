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
	"syscall"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// Result is what a probe saw.
type Result struct {
	// Reachable says the extender answered.
	Reachable bool
	// Reason is why not: ReasonExtenderUnreachable or ReasonExtenderTLSFailed.
	Reason v1.ConditionReason
	// Message says what happened, in one sentence, for status: whether the extender
	// answered, and if not, which kind of failure (refused, timed out, a name that does
	// not resolve, a certificate the CA does not sign, ...). It quotes no response status
	// and no certificate's names: a resource's author may name any address, and status
	// must not tell them more of a host than whether it is there.
	Message string
	// Detail is the failure as the client reported it, for the operator's log only.
	Detail string
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
		reason, kind := v1.ReasonExtenderUnreachable, failureOf(err)
		if isTLSFailure(err) {
			reason = v1.ReasonExtenderTLSFailed
		}
		return Result{Reason: reason, Message: fmt.Sprintf("GET %s failed: %s", url, kind), Detail: usertext.Cut(cause(err), 300)}
	}
	_ = response.Body.Close()
	return Result{Reachable: true, Message: fmt.Sprintf("GET %s was answered", url)}
}

// failureOf says which kind of failure err is, in words that name nothing of the host
// beyond what the resource gave: the operator's log has the rest (Result.Detail).
func failureOf(err error) string {
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var dns *net.DNSError
	var timeout interface{ Timeout() bool }
	switch {
	case errors.As(err, &hostname):
		return "the extender's certificate is not for the name it is called by (tls.serverName, or the address's host)"
	case errors.As(err, &unknownAuthority):
		return "the extender's certificate is not signed by the CA the scheduler trusts (tls.caBundle, or the system's roots)"
	case errors.As(err, &invalid):
		return "the extender's certificate is not valid (expired, not yet valid, or not for a server)"
	case isTLSFailure(err):
		return "the TLS handshake failed (the extender may refuse the client certificate of tls.clientCertificateSecretRef, or want one)"
	case errors.As(err, &dns):
		return "the address's host name does not resolve"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &timeout) && timeout.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return "no answer within the probe's timeout"
	}
	return "the connection failed"
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
