// Command clusterdns is the local test cluster's DNS for the pods of its real node
// (hack/real-node.sh): it answers a Service's cluster name, NAME.NAMESPACE.svc.cluster.local,
// with the Service's cluster IP, or with the ready endpoints of a headless Service, as
// CoreDNS's kubernetes plugin does on a real cluster. So a scheduler reaches a Prometheus
// the operator found by its Service's name, as it would there. Every other name is
// NXDOMAIN: the machine has nothing to forward to. No pod records, SRV or PTR.
//
// CoreDNS itself builds from the module proxy (v1.15.0 with only its kubernetes, forward,
// cache, errors, log, health and ready plugins): measured here, 85 s of downloads (1.7 GB
// of modules) and 4 minutes of compiling on 2 cores from cold caches, which CI's 45-minute
// budget cannot give to one test component. This is under 300 lines on
// golang.org/x/net/dns/dnsmessage and the client libraries the build has already.
//
// Usage: clusterdns --kubeconfig FILE --listen ADDRESS:PORT [--domain cluster.local]
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"io"
	"net"
	"net/netip"
	"os/signal"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func main() {
	var kubeconfig, listen, domain string
	flag.StringVar(&kubeconfig, "kubeconfig", "", "the cluster's kubeconfig")
	flag.StringVar(&listen, "listen", "", "the address and port to serve DNS on, over UDP and TCP")
	flag.StringVar(&domain, "domain", "cluster.local", "the cluster's domain (the kubelet's clusterDomain)")
	flag.Parse()
	if kubeconfig == "" || listen == "" {
		klog.Fatal("--kubeconfig and --listen are required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, kubeconfig, listen, domain); err != nil {
		klog.Fatal(err)
	}
}

func run(ctx context.Context, kubeconfig, listen, domain string) error {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	// A watch of every Service and EndpointSlice: a query is answered from memory.
	services, err := cache.New(config, cache.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	for _, object := range []client.Object{&corev1.Service{}, &discoveryv1.EndpointSlice{}} {
		if _, err := services.GetInformer(ctx, object); err != nil {
			return err
		}
	}
	go func() {
		if err := services.Start(ctx); err != nil {
			klog.ErrorS(err, "watching Services")
		}
	}()
	if !services.WaitForCacheSync(ctx) {
		return errors.New("the Services and EndpointSlices were not listed")
	}
	lookup := func(namespace, name string) ([]netip.Addr, bool) {
		return serviceAddresses(ctx, services, namespace, name)
	}
	packets, err := net.ListenPacket("udp", listen)
	if err != nil {
		return err
	}
	streams, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		_ = packets.Close()
		_ = streams.Close()
	}()
	klog.InfoS("serving", "address", listen, "domain", domain)
	go serveTCP(streams, domain, lookup)
	serveUDP(packets, domain, lookup)
	return nil
}

// serviceAddresses are a Service's cluster IPs, or a headless one's ready endpoints.
func serviceAddresses(ctx context.Context, reader client.Reader, namespace, name string) ([]netip.Addr, bool) {
	service := &corev1.Service{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, service); err != nil {
		return nil, false
	}
	var addresses []netip.Addr
	if service.Spec.ClusterIP != corev1.ClusterIPNone {
		for _, ip := range service.Spec.ClusterIPs {
			if address, err := netip.ParseAddr(ip); err == nil {
				addresses = append(addresses, address)
			}
		}
		return addresses, true
	}
	slices := &discoveryv1.EndpointSliceList{}
	if err := reader.List(ctx, slices, client.InNamespace(namespace), client.MatchingLabels{discoveryv1.LabelServiceName: name}); err != nil {
		return nil, true
	}
	for _, slice := range slices.Items {
		for _, endpoint := range slice.Endpoints {
			if endpoint.Conditions.Ready != nil && !*endpoint.Conditions.Ready {
				continue
			}
			for _, ip := range endpoint.Addresses {
				if address, err := netip.ParseAddr(ip); err == nil {
					addresses = append(addresses, address)
				}
			}
		}
	}
	return addresses, true
}

// serveUDP answers each datagram until the connection is closed.
func serveUDP(conn net.PacketConn, domain string, lookup lookupFunc) {
	buffer := make([]byte, 65535)
	for {
		n, from, err := conn.ReadFrom(buffer)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if response := answer(buffer[:n], domain, lookup); response != nil {
			_, _ = conn.WriteTo(response, from)
		}
	}
}

// serveTCP answers the length-prefixed messages of each connection (RFC 1035 4.2.2).
func serveTCP(listener net.Listener, domain string, lookup lookupFunc) {
	for {
		conn, err := listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		go func() {
			defer func() { _ = conn.Close() }()
			for {
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				var length [2]byte
				if _, err := io.ReadFull(conn, length[:]); err != nil {
					return
				}
				query := make([]byte, binary.BigEndian.Uint16(length[:]))
				if _, err := io.ReadFull(conn, query); err != nil {
					return
				}
				response := answer(query, domain, lookup)
				if response == nil {
					return
				}
				if _, err := conn.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(response))), response...)); err != nil {
					return
				}
			}
		}()
	}
}
