package main

import (
	"net/netip"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// ttl is how long a resolver may keep an answer, in seconds: short, since a test creates
// and deletes Services within seconds.
const ttl = 5

// lookupFunc returns the IPv4 addresses of Service NAME in NAMESPACE, and whether the
// Service exists (a headless Service without a ready endpoint exists with none).
type lookupFunc func(namespace, name string) (addresses []netip.Addr, exists bool)

// answer is the response to one DNS query message, as CoreDNS's kubernetes plugin
// answers it for Services: an A record per address for NAME.NAMESPACE.svc.DOMAIN, no
// record (NOERROR) for another type of an existing name, NXDOMAIN for every other name of
// the domain and every name outside it (this cluster has nothing to forward to), and
// FORMERR for a message that is not one query. It returns nil when the message cannot be
// parsed at all, since nothing can be answered to it.
func answer(query []byte, domain string, lookup lookupFunc) []byte {
	var parser dnsmessage.Parser
	header, err := parser.Start(query)
	if err != nil {
		return nil
	}
	response := dnsmessage.Header{ID: header.ID, Response: true, Authoritative: true, RecursionDesired: header.RecursionDesired}
	questions, err := parser.AllQuestions()
	if err != nil || len(questions) != 1 || header.Response || header.OpCode != 0 {
		response.RCode = dnsmessage.RCodeFormatError
		return build(response, nil, nil)
	}
	question := questions[0]
	namespace, name, ok := serviceName(question.Name.String(), domain)
	var addresses []netip.Addr
	if ok {
		addresses, ok = lookup(namespace, name)
	}
	if !ok || question.Class != dnsmessage.ClassINET {
		response.RCode = dnsmessage.RCodeNameError
		return build(response, &question, nil)
	}
	if question.Type != dnsmessage.TypeA {
		return build(response, &question, nil)
	}
	return build(response, &question, addresses)
}

// serviceName splits NAME.NAMESPACE.svc.DOMAIN. (any case) into its namespace and name.
func serviceName(fqdn, domain string) (namespace, name string, ok bool) {
	fqdn = strings.ToLower(strings.TrimSuffix(fqdn, "."))
	prefix, found := strings.CutSuffix(fqdn, ".svc."+strings.ToLower(strings.Trim(domain, ".")))
	if !found {
		return "", "", false
	}
	name, namespace, found = strings.Cut(prefix, ".")
	if !found || name == "" || namespace == "" || strings.Contains(namespace, ".") {
		return "", "", false
	}
	return namespace, name, true
}

// build writes a response with the question, if any, and an A record for each IPv4
// address.
func build(header dnsmessage.Header, question *dnsmessage.Question, addresses []netip.Addr) []byte {
	builder := dnsmessage.NewBuilder(make([]byte, 0, 512), header)
	builder.EnableCompression()
	if question != nil {
		if builder.StartQuestions() != nil || builder.Question(*question) != nil {
			return nil
		}
	}
	if builder.StartAnswers() != nil {
		return nil
	}
	for _, address := range addresses {
		if !address.Is4() {
			continue
		}
		resource := dnsmessage.ResourceHeader{Name: question.Name, Class: dnsmessage.ClassINET, TTL: ttl}
		if builder.AResource(resource, dnsmessage.AResource{A: address.As4()}) != nil {
			return nil
		}
	}
	message, err := builder.Finish()
	if err != nil {
		return nil
	}
	return message
}
