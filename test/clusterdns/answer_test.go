package main

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// services is a cluster of two Services: prometheus-k8s in monitoring with a cluster IP,
// and prometheus-operated, headless, with two ready endpoints; lookups counts the calls.
func services(lookups *int) lookupFunc {
	return func(namespace, name string) ([]netip.Addr, bool) {
		*lookups++
		switch namespace + "/" + name {
		case "monitoring/prometheus-k8s":
			return []netip.Addr{netip.MustParseAddr("10.96.0.20")}, true
		case "monitoring/prometheus-operated":
			return []netip.Addr{netip.MustParseAddr("10.213.251.2"), netip.MustParseAddr("10.213.251.3"), netip.MustParseAddr("fd00::1")}, true
		case "monitoring/no-endpoints":
			return nil, true
		}
		return nil, false
	}
}

func query(t *testing.T, name string, qtype dnsmessage.Type) []byte {
	t.Helper()
	builder := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7, RecursionDesired: true})
	if err := builder.StartQuestions(); err != nil {
		t.Fatal(err)
	}
	if err := builder.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: qtype, Class: dnsmessage.ClassINET}); err != nil {
		t.Fatal(err)
	}
	message, err := builder.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return message
}

// Each name of a Service is answered with its addresses (IPv4 only, in A records), and
// every other name with NXDOMAIN, without asking the cluster about a name that cannot be
// a Service's.
func TestAnswer(t *testing.T) {
	for _, tc := range []struct {
		name        string
		qtype       dnsmessage.Type
		wantCode    dnsmessage.RCode
		wantAnswers []string
		wantLookups int
	}{
		{"prometheus-k8s.monitoring.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, []string{"10.96.0.20"}, 1},
		{"Prometheus-K8s.Monitoring.SVC.Cluster.Local.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, []string{"10.96.0.20"}, 1},
		{"prometheus-operated.monitoring.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, []string{"10.213.251.2", "10.213.251.3"}, 1},
		{"prometheus-k8s.monitoring.svc.cluster.local.", dnsmessage.TypeAAAA, dnsmessage.RCodeSuccess, nil, 1},
		{"no-endpoints.monitoring.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, nil, 1},
		{"absent.monitoring.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil, 1},
		{"prometheus-k8s.monitoring.svc.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil, 0},
		{"monitoring.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil, 0},
		{"prometheus-k8s.monitoring.svc.example.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil, 0},
		{"example.com.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil, 0},
	} {
		t.Run(tc.name+"/"+tc.qtype.String(), func(t *testing.T) {
			lookups := 0
			response := answer(query(t, tc.name, tc.qtype), "cluster.local", services(&lookups))
			var message dnsmessage.Message
			if err := message.Unpack(response); err != nil {
				t.Fatalf("the response does not parse: %v", err)
			}
			if message.ID != 7 || !message.Response || !message.RecursionDesired {
				t.Errorf("header %+v: want the query's ID, a response, recursion desired echoed", message.Header)
			}
			if message.RCode != tc.wantCode {
				t.Errorf("rcode %v, want %v", message.RCode, tc.wantCode)
			}
			if len(message.Questions) != 1 || message.Questions[0].Name.String() != tc.name {
				t.Errorf("questions %v, want the query's", message.Questions)
			}
			got := make([]string, 0, len(message.Answers))
			for _, resource := range message.Answers {
				a, ok := resource.Body.(*dnsmessage.AResource)
				if !ok {
					t.Fatalf("answer %v is not an A record", resource)
				}
				got = append(got, netip.AddrFrom4(a.A).String())
			}
			if !slices.Equal(got, tc.wantAnswers) {
				t.Errorf("answers %v, want %v", got, tc.wantAnswers)
			}
			if lookups != tc.wantLookups {
				t.Errorf("%d lookups, want %d", lookups, tc.wantLookups)
			}
		})
	}
}

// A message that is not one query gets FORMERR, or nothing when it does not parse.
func TestAnswerRefusesMalformed(t *testing.T) {
	lookups := 0
	if response := answer([]byte{1, 2, 3}, "cluster.local", services(&lookups)); response != nil {
		t.Errorf("a truncated header was answered: %v", response)
	}
	builder := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 9})
	empty, err := builder.Finish()
	if err != nil {
		t.Fatal(err)
	}
	var message dnsmessage.Message
	if err := message.Unpack(answer(empty, "cluster.local", services(&lookups))); err != nil || message.RCode != dnsmessage.RCodeFormatError || message.ID != 9 {
		t.Errorf("a message without a question: %v, rcode %v, want FORMERR", err, message.RCode)
	}
	if lookups != 0 {
		t.Errorf("%d lookups for malformed messages", lookups)
	}
}

// Go's own resolver, over UDP and over TCP, resolves a Service's name through the server,
// and is told a name outside the cluster does not exist.
func TestResolverThroughServer(t *testing.T) {
	packets, streams := listenUDPAndTCP(t)
	lookups := 0
	lookup := services(&lookups)
	go serveUDP(packets, "cluster.local", lookup)
	go serveTCP(streams, "cluster.local", lookup)
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var dialer net.Dialer
				return dialer.DialContext(ctx, network, packets.LocalAddr().String())
			}}
			addresses, err := resolver.LookupHost(context.Background(), "prometheus-operated.monitoring.svc.cluster.local")
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(addresses)
			if want := []string{"10.213.251.2", "10.213.251.3"}; !slices.Equal(addresses, want) {
				t.Errorf("addresses %v, want %v", addresses, want)
			}
			_, err = resolver.LookupHost(context.Background(), "example.com")
			var dnsError *net.DNSError
			if !errors.As(err, &dnsError) || !dnsError.IsNotFound {
				t.Errorf("example.com: %v, want not found", err)
			}
		})
	}
}

// listenUDPAndTCP listens on one loopback port over UDP and TCP, as the server does: the
// port the kernel picks for UDP may be taken for TCP by another process, so a port is
// picked again (a few times) until both are free.
func listenUDPAndTCP(t *testing.T) (net.PacketConn, net.Listener) {
	t.Helper()
	var lastErr error
	for range 20 {
		packets, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		streams, err := net.Listen("tcp", packets.LocalAddr().String())
		if err != nil {
			_ = packets.Close()
			lastErr = err
			continue
		}
		t.Cleanup(func() { _ = packets.Close(); _ = streams.Close() })
		return packets, streams
	}
	t.Fatalf("no loopback port free over both UDP and TCP in 20 tries: %v", lastErr)
	return nil, nil
}
