// Command extender is a scheduler extender for the tests: a real HTTP server speaking
// kube-scheduler's extender protocol (k8s.io/kube-scheduler/extender/v1), whose decisions
// a test can predict and check.
//
//   - POST .../filter keeps the nodes not named by --reject (a comma-separated list) and
//     reports the others as failed, with the reason "rejected by the test extender".
//   - POST .../prioritize scores the nodes named by --prefer 10 and every other node 0.
//   - POST .../bind is not served: the scheduler keeps its own binder.
//
// It answers to node names (nodeCacheCapable: true) and to whole Node objects alike. With
// --tls-cert and --tls-key it serves HTTPS, and with --client-ca it also requires a client
// certificate signed by that CA. It writes the address it listens on to --address-file
// once it listens (--listen may use port 0), and counts the calls it served on
// GET /calls, so that a test can tell the scheduler asked it.
//
// SIGUSR1 takes it down: it keeps its port but closes every connection without an answer,
// as a crashed extender behind a live address does; SIGUSR2 brings it back. A test so
// makes it unreachable and reachable again without giving up its port, which another
// process could take meanwhile.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

func main() {
	var listen, addressFile, reject, prefer, certFile, keyFile, clientCA string
	flag.StringVar(&listen, "listen", "127.0.0.1:0", "address to listen on")
	flag.StringVar(&addressFile, "address-file", "", "file to write the address listened on to")
	flag.StringVar(&reject, "reject", "", "comma-separated names of the nodes filter rejects")
	flag.StringVar(&prefer, "prefer", "", "comma-separated names of the nodes prioritize scores 10 (the others 0)")
	flag.StringVar(&certFile, "tls-cert", "", "PEM certificate to serve HTTPS with")
	flag.StringVar(&keyFile, "tls-key", "", "PEM key of --tls-cert")
	flag.StringVar(&clientCA, "client-ca", "", "PEM CA whose client certificates are required")
	flag.Parse()

	server := &extender{reject: set(reject), prefer: set(prefer)}
	httpServer := &http.Server{Handler: server.handler(), ReadHeaderTimeout: 10 * time.Second}
	toggles := make(chan os.Signal, 4)
	signal.Notify(toggles, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		for toggle := range toggles {
			server.down.Store(toggle == syscall.SIGUSR1)
			log.Printf("extender down: %t", server.down.Load())
		}
	}()
	listener, err := net.Listen("tcp", listen)
	if err != nil {
		log.Fatal(err)
	}
	if certFile != "" {
		config := &tls.Config{MinVersion: tls.VersionTLS12}
		certificate, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			log.Fatal(err)
		}
		config.Certificates = []tls.Certificate{certificate}
		if clientCA != "" {
			pem, err := os.ReadFile(clientCA)
			if err != nil {
				log.Fatal(err)
			}
			config.ClientCAs = x509.NewCertPool()
			if !config.ClientCAs.AppendCertsFromPEM(pem) {
				log.Fatalf("%s holds no PEM certificate", clientCA)
			}
			config.ClientAuth = tls.RequireAndVerifyClientCert
		}
		listener = tls.NewListener(listener, config)
	}
	if addressFile != "" {
		if err := os.WriteFile(addressFile, []byte(listener.Addr().String()), 0o600); err != nil {
			log.Fatal(err)
		}
	}
	log.Printf("extender listening on %s (tls: %t, client certificates required: %t)", listener.Addr(), certFile != "", clientCA != "")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = httpServer.Close()
	}()
	if err := httpServer.Serve(listener); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}

type extender struct {
	reject, prefer map[string]bool
	calls          atomic.Int64
	// down makes every connection close without an answer.
	down atomic.Bool
}

// handler serves the verbs under any path prefix, and the count of calls.
func (e *extender) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /{prefix...}", e.serve)
	mux.HandleFunc("GET /calls", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, e.calls.Load()) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e.down.Load() {
			closeWithoutAnswer(w)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// closeWithoutAnswer closes the request's connection before any answer.
func closeWithoutAnswer(w http.ResponseWriter) {
	hijacker, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	connection, _, err := hijacker.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = connection.Close()
}

func (e *extender) serve(w http.ResponseWriter, r *http.Request) {
	e.calls.Add(1)
	verb := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	var args extenderv1.ExtenderArgs
	if verb == "filter" || verb == "prioritize" {
		if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
			http.Error(w, "decode ExtenderArgs: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	var answer any
	switch verb {
	case "filter":
		answer = e.filter(args)
	case "prioritize":
		answer = e.prioritize(args)
	default:
		http.Error(w, "no verb "+verb, http.StatusNotFound)
		return
	}
	log.Printf("%s %s of pod %s", r.Method, r.URL.Path, podName(args.Pod))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

func (e *extender) filter(args extenderv1.ExtenderArgs) *extenderv1.ExtenderFilterResult {
	result := &extenderv1.ExtenderFilterResult{FailedNodes: extenderv1.FailedNodesMap{}}
	if args.NodeNames != nil {
		kept := []string{}
		for _, name := range *args.NodeNames {
			if e.reject[name] {
				result.FailedNodes[name] = "rejected by the test extender"
				continue
			}
			kept = append(kept, name)
		}
		result.NodeNames = &kept
		return result
	}
	kept := &corev1.NodeList{}
	if args.Nodes != nil {
		for _, node := range args.Nodes.Items {
			if e.reject[node.Name] {
				result.FailedNodes[node.Name] = "rejected by the test extender"
				continue
			}
			kept.Items = append(kept.Items, node)
		}
	}
	result.Nodes = kept
	return result
}

func (e *extender) prioritize(args extenderv1.ExtenderArgs) extenderv1.HostPriorityList {
	var names []string
	if args.NodeNames != nil {
		names = *args.NodeNames
	} else if args.Nodes != nil {
		for _, node := range args.Nodes.Items {
			names = append(names, node.Name)
		}
	}
	scores := make(extenderv1.HostPriorityList, 0, len(names))
	for _, name := range names {
		score := extenderv1.MinExtenderPriority
		if e.prefer[name] {
			score = extenderv1.MaxExtenderPriority
		}
		scores = append(scores, extenderv1.HostPriority{Host: name, Score: score})
	}
	return scores
}

func set(list string) map[string]bool {
	names := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name != "" {
			names[name] = true
		}
	}
	return names
}

func podName(pod *corev1.Pod) string {
	if pod == nil {
		return "?"
	}
	return pod.Namespace + "/" + pod.Name
}
