package metricsprobe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/google/go-cmp/cmp"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

// The probe runs against a real Prometheus scraping series the test controls; each
// failure reason is produced for real, then healed.
func TestProbeAgainstRealPrometheus(t *testing.T) {
	prometheus := promtest.Start(t)
	nodes := []string{"node-a", "node-b"}
	client := &http.Client{Timeout: 5 * time.Second}
	// Short, so that series that stop go stale within seconds: the exporter is scraped
	// every second.
	const staleAfter = 3 * time.Second
	probe := func(address, token string) Result {
		return Probe(context.Background(), client, address, token, nodes, staleAfter)
	}
	// eventually probes until the reason is want, and fails at once on a reason in never.
	eventually := func(want v1.ConditionReason, address, token string, never ...v1.ConditionReason) Result {
		t.Helper()
		var result Result
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			result = probe(address, token)
			switch {
			case result.Reason == want:
				return result
			case slices.Contains(never, result.Reason):
				t.Fatalf("want reason %s, got %s: %s", want, result.Reason, result.Message)
			}
		}
		t.Fatalf("want reason %s, last got %s: %s", want, result.Reason, result.Message)
		return result
	}
	cpu, memory := Series[0], Series[1]
	cpuLoad := map[string]float64{"node-a": 0.3, "node-b": 0.5}
	memoryLoad := map[string]float64{"node-a": 0.2, "node-b": 0.4}

	missing := eventually(v1.ReasonRecordingRuleMissing, prometheus.URL, "")
	if !strings.Contains(missing.Message, cpu) {
		t.Errorf("message should name the missing series: %s", missing.Message)
	}

	prometheus.SetSeries(cpu, cpuLoad)
	prometheus.SetSeries(memory, memoryLoad)
	ok := eventually(v1.ReasonMetricsAvailable, prometheus.URL, "")
	// Prometheus holds samples of both series from now on.
	servedSince := time.Now()
	if !ok.Available || ok.NodesWithMetrics != 2 || ok.Nodes != 2 || ok.StaleNodes != 0 || ok.DataAge > staleAfter || ok.NewestSample.IsZero() {
		t.Errorf("want all nodes covered with fresh data: %+v", ok)
	}

	// node-exporter's default instance label is its address, not the node name.
	prometheus.SetSeries(cpu, map[string]float64{"10.0.0.31:9100": 0.3, "node-b": 0.5})
	mismatch := eventually(v1.ReasonNodeLabelMismatch, prometheus.URL, "")
	if mismatch.NodesWithMetrics != 1 || !strings.Contains(mismatch.Message, `instance="10.0.0.31:9100"`) || !strings.Contains(mismatch.Message, "node-a") {
		t.Errorf("mismatch should count nodes and show an example: %+v", mismatch)
	}
	prometheus.SetSeries(cpu, cpuLoad)
	eventually(v1.ReasonMetricsAvailable, prometheus.URL, "")

	// A source whose timestamps stopped advancing: the series stays, its data ages.
	prometheus.FreezeSeries(cpu)
	frozen := eventually(v1.ReasonMetricsStale, prometheus.URL, "")
	if frozen.Available || frozen.StaleNodes != 2 || frozen.NodesWithMetrics != 0 || frozen.DataAge <= staleAfter ||
		frozen.NewestSample.Before(servedSince) || !strings.Contains(frozen.Message, cpu) || !strings.Contains(frozen.Message, "older than staleAfter 3s") {
		t.Errorf("frozen series should be stale: %+v", frozen)
	}
	time.Sleep(time.Second)
	if later := probe(prometheus.URL, ""); later.Reason != v1.ReasonMetricsStale || !later.NewestSample.Equal(frozen.NewestSample) || later.DataAge <= frozen.DataAge {
		t.Errorf("the frozen sample should stay the newest and get older: %+v, then %+v", frozen, later)
	}
	prometheus.SetSeries(cpu, cpuLoad)
	eventually(v1.ReasonMetricsAvailable, prometheus.URL, "")

	// A series whose rule or scrape stopped: Prometheus writes a staleness marker, and an
	// instant query no longer sees it, but load-watcher's 15-minute averages still do.
	// The probe finds such series at the steps of a subquery, so it must have lived
	// across one.
	time.Sleep(time.Until(servedSince.Truncate(resolution).Add(resolution + time.Second)))
	removed := time.Now()
	prometheus.SetSeries(memory, nil)
	stopped := eventually(v1.ReasonMetricsStale, prometheus.URL, "", v1.ReasonRecordingRuleMissing)
	if stopped.StaleNodes != 2 || stopped.DataAge <= staleAfter || stopped.NewestSample.After(removed) || !strings.Contains(stopped.Message, memory) {
		t.Errorf("stopped series should be stale, with its last sample before it stopped (%s): %+v", removed, stopped)
	}
	prometheus.SetSeries(memory, memoryLoad)
	eventually(v1.ReasonMetricsAvailable, prometheus.URL, "")

	// In front of it, a proxy that wants a bearer token, as kube-rbac-proxy does.
	guarded := prometheus.TokenProxy("right-token")
	unauthorized := eventually(v1.ReasonUnauthorized, guarded.URL, "wrong-token")
	if strings.Contains(unauthorized.Message, "wrong-token") {
		t.Errorf("a token must never appear in a message: %s", unauthorized.Message)
	}
	eventually(v1.ReasonMetricsAvailable, guarded.URL, "right-token")

	prometheus.Stop()
	unreachable := eventually(v1.ReasonPrometheusUnreachable, prometheus.URL, "")
	if !strings.Contains(unreachable.Message, prometheus.URL) {
		t.Errorf("message should name the address: %s", unreachable.Message)
	}
}

// hostileToken looks like a bearer token a misconfigured proxy reflects into its answers.
const hostileToken = "eyJhbGciOiJSUzI1NiIsImtpZCI6Imhvc3RpbGUifQ.c2VjcmV0LXRva2VuLXJlZmxlY3RlZA.c2lnbmF0dXJl"

// countingTransport counts the bytes callers read of answers' bodies.
type countingTransport struct {
	base http.RoundTripper
	read atomic.Int64
}

func (c *countingTransport) RoundTrip(request *http.Request) (*http.Response, error) {
	response, err := c.base.RoundTrip(request)
	if response != nil {
		response.Body = &countingBody{ReadCloser: response.Body, read: &c.read}
	}
	return response, err
}

type countingBody struct {
	io.ReadCloser
	read *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read.Add(int64(n))
	return n, err
}

// vector is a Prometheus instant-query answer with one series per instance, whose
// newest sample is 10 seconds old.
func vector(instances ...string) string {
	results := make([]string, 0, len(instances))
	for _, instance := range instances {
		quoted, _ := json.Marshal(instance)
		results = append(results, fmt.Sprintf(`{"metric":{"instance":%s},"value":[1700000000,"1699999990"]}`, quoted))
	}
	return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(results, ",") + `]}}`
}

func answer(code int, contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// An endpoint can answer anything: the probe's message summarizes what went wrong in
// fixed words, quotes no byte of the answer, stays short, and the probe reads a bounded
// part of an answer.
func TestProbeHostileEndpoints(t *testing.T) {
	nodes := []string{"node-a", "node-b"}
	garbage := `{"status":"success","data":{"resultType":"vector","result":"` + strings.Repeat(hostileToken+`\n\u001b[2J`, 5<<20/(len(hostileToken)+8)) + `"}}`
	endless := `{"status":"` + strings.Repeat("x", 2*maxResponseBytes)
	// elsewhere is another host, which a redirect points to: it answers as a healthy
	// Prometheus, and must never be asked.
	var elsewhereAsked atomic.Bool
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhereAsked.Store(true)
		answer(http.StatusOK, "application/json", vector(nodes...))(w, r)
	}))
	t.Cleanup(elsewhere.Close)
	redirect := elsewhere.URL + "/api/v1/query?access_token=" + hostileToken
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	tests := []struct {
		name  string
		serve http.HandlerFunc
		// hostile is what the endpoint sends that no message may quote.
		hostile string
		// tls serves with a certificate of a CA the probe does not trust.
		tls bool
		// address is where to probe, given the server's URL; nil for the URL itself.
		address     func(serverURL string) string
		timeout     time.Duration
		wantReason  v1.ConditionReason
		wantSummary string
		// maxRead bounds the bytes of answers the probe may read.
		maxRead int64
	}{
		{
			name:        "500 quoting a token, with newlines and control characters",
			serve:       answer(http.StatusInternalServerError, "text/plain", "upstream said:\nAuthorization: Bearer "+hostileToken+"\r\n\x1b[31mred\x00"),
			hostile:     "upstream said:\nAuthorization: Bearer " + hostileToken + "\r\n\x1b[31mred\x00",
			wantReason:  v1.ReasonPrometheusUnreachable,
			wantSummary: "failed: 127.0.0.1:",
		},
		{
			name: "a reason phrase of its own in the status line",
			serve: func(w http.ResponseWriter, _ *http.Request) {
				connection, buffered, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				defer func() { _ = connection.Close() }()
				_, _ = buffered.WriteString("HTTP/1.1 502 token " + hostileToken + "\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno")
				_ = buffered.Flush()
			},
			hostile:     "502 token " + hostileToken,
			wantReason:  v1.ReasonPrometheusUnreachable,
			wantSummary: "failed: 127.0.0.1:",
		},
		{
			name:        "401 with a body",
			serve:       answer(http.StatusUnauthorized, "text/plain", "token "+hostileToken+" is not valid for audience https://kubernetes.default.svc\n"),
			hostile:     "token " + hostileToken + " is not valid for audience https://kubernetes.default.svc\n",
			wantReason:  v1.ReasonUnauthorized,
			wantSummary: "refused the scheduler's credentials (127.0.0.1:",
		},
		{
			name:        "403 with a body",
			serve:       answer(http.StatusForbidden, "text/plain", `User "system:serviceaccount:team:reader" cannot get path "/api/v1/query"`),
			hostile:     `User "system:serviceaccount:team:reader" cannot get path "/api/v1/query"`,
			wantReason:  v1.ReasonUnauthorized,
			wantSummary: "refused the request's credentials)",
		},
		{
			name:        "200 with HTML",
			serve:       answer(http.StatusOK, "text/html", "<!DOCTYPE html><html><body><h1>Sign in to continue</h1><!-- session "+hostileToken+" --></body></html>"),
			hostile:     "<!DOCTYPE html><html><body><h1>Sign in to continue</h1><!-- session " + hostileToken + " --></body></html>",
			wantReason:  v1.ReasonPrometheusUnreachable,
			wantSummary: "failed: response is not a Prometheus API response;",
			maxRead:     200,
		},
		{
			name:        "200 with 5 MB of JSON garbage",
			serve:       answer(http.StatusOK, "application/json", garbage),
			hostile:     garbage,
			wantReason:  v1.ReasonPrometheusUnreachable,
			wantSummary: "failed: response is not a Prometheus API response;",
			maxRead:     int64(len(garbage)),
		},
		{
			name:        "200 that never ends",
			serve:       answer(http.StatusOK, "application/json", endless),
			hostile:     endless[:4096],
			wantReason:  v1.ReasonPrometheusUnreachable,
			wantSummary: "failed: response is larger than 8 MiB",
			maxRead:     maxResponseBytes,
		},
		{
			name:        "a Prometheus error quoting a token",
			serve:       answer(http.StatusOK, "application/json", `{"status":"error","errorType":"execution","error":"query with `+hostileToken+` failed\nretry"}`),
			hostile:     `query with ` + hostileToken + ` failed\nretry`,
			wantReason:  v1.ReasonPrometheusUnreachable,
			wantSummary: "failed: Prometheus refused the query (errorType execution);",
			maxRead:     300,
		},
		{
			name:        "an error type of its own",
			serve:       answer(http.StatusOK, "application/json", `{"status":"error","errorType":"\u001b[2J`+hostileToken+`"}`),
			hostile:     `"\u001b[2J` + hostileToken,
			wantReason:  v1.ReasonPrometheusUnreachable,
			wantSummary: "failed: Prometheus refused the query;",
			maxRead:     300,
		},
		{
			name: "a redirect to another host",
			serve: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, redirect, http.StatusFound)
			},
			hostile:     redirect,
			wantReason:  v1.ReasonPrometheusUnreachable,
			wantSummary: "answered with a redirect, which the probe does not follow",
		},
		{
			name:        "TLS with a certificate of an unknown CA",
			serve:       answer(http.StatusOK, "application/json", vector(nodes...)),
			tls:         true,
			wantReason:  v1.ReasonPrometheusUnreachable,
			wantSummary: "failed: TLS: certificate signed by unknown authority;",
		},
		{
			name:        "plain HTTP at an https address",
			serve:       answer(http.StatusOK, "application/json", vector(nodes...)),
			address:     func(serverURL string) string { return strings.Replace(serverURL, "http://", "https://", 1) },
			wantReason:  v1.ReasonPrometheusUnreachable,
			wantSummary: "failed: TLS: the server does not speak TLS",
		},
		{
			name: "no answer in time",
			serve: func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			},
			timeout:     200 * time.Millisecond,
			wantReason:  v1.ReasonPrometheusUnreachable,
			wantSummary: "failed: timeout after 200ms;",
		},
		{
			name:        "connection refused",
			address:     func(string) string { return closed.URL },
			wantReason:  v1.ReasonPrometheusUnreachable,
			wantSummary: "failed: connection refused;",
		},
		{
			name:  "credentials and a token in the address",
			serve: answer(http.StatusBadGateway, "text/plain", "bad gateway"),
			address: func(serverURL string) string {
				return strings.Replace(serverURL, "http://", "http://admin:hunter2-password@", 1) + "/?token=" + hostileToken
			},
			// The address is the user's, but its secrets must not reach status either.
			hostile:     "admin:hunter2-password token=" + hostileToken,
			wantReason:  v1.ReasonPrometheusUnreachable,
			wantSummary: "failed: 127.0.0.1:",
		},
		{
			// Two jobs recording the same series: node-a has no memory series all the same.
			name: "a node's series twice in one answer and missing from the other",
			serve: func(w http.ResponseWriter, r *http.Request) {
				instances := []string{"node-a", "node-a", "node-b"}
				if !strings.Contains(r.URL.Query().Get("query"), Series[0]) {
					instances = []string{"node-b"}
				}
				answer(http.StatusOK, "application/json", vector(instances...))(w, r)
			},
			wantReason:  v1.ReasonNodeLabelMismatch,
			wantSummary: "1 of 2 nodes have no instance:node_cpu:ratio or instance:node_memory_utilisation:ratio series labelled with their name (for example node-a)",
			maxRead:     1000,
		},
		{
			name:        "series whose instance label is a token",
			serve:       answer(http.StatusOK, "application/json", vector("node-a", "\x1b[2J"+hostileToken+"\nnode-b")),
			hostile:     "\x1b[2J" + hostileToken + "\nnode-b",
			wantReason:  v1.ReasonNodeLabelMismatch,
			wantSummary: "1 of 2 nodes have no",
			maxRead:     1000,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			elsewhereAsked.Store(false)
			serverURL := ""
			if tt.serve != nil {
				server := httptest.NewUnstartedServer(tt.serve)
				if tt.tls {
					server.StartTLS()
				} else {
					server.Start()
				}
				t.Cleanup(server.Close)
				serverURL = server.URL
			}
			address := serverURL
			if tt.address != nil {
				address = tt.address(serverURL)
			}
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 10 * time.Second
			}
			transport := &countingTransport{base: &http.Transport{DisableKeepAlives: true}}
			client := &http.Client{Timeout: timeout, Transport: transport}

			result := Probe(context.Background(), client, address, "the-scheduler-token", nodes, 0)

			if result.Reason != tt.wantReason || result.Available {
				t.Errorf("reason %s (available %v), want %s: %s", result.Reason, result.Available, tt.wantReason, result.Message)
			}
			if !strings.Contains(result.Message, tt.wantSummary) {
				t.Errorf("message %q does not say %q", result.Message, tt.wantSummary)
			}
			if len(result.Message) > 300 {
				t.Errorf("message of %d bytes, want at most 300: %q", len(result.Message), result.Message)
			}
			if i := strings.IndexFunc(result.Message, unicode.IsControl); i >= 0 {
				t.Errorf("message has a control character at %d: %q", i, result.Message)
			}
			// No status code: the address is the author's to choose, and status is no
			// oracle for what a host they could not reach answers.
			for _, secret := range []string{hostileToken, "the-scheduler-token", "hunter2", "HTTP 3", "HTTP 4", "HTTP 5", " 401", " 403", " 500", " 502"} {
				if strings.Contains(result.Message, secret) {
					t.Errorf("message quotes %q: %q", secret, result.Message)
				}
			}
			if quoted := quotedPart(result.Message, tt.hostile, 12); quoted != "" {
				t.Errorf("message quotes %q of the answer: %q", quoted, result.Message)
			}
			if read := transport.read.Load(); read > tt.maxRead {
				t.Errorf("the probe read %d bytes of answers, want at most %d", read, tt.maxRead)
			}
			if elsewhereAsked.Load() {
				t.Errorf("the probe followed a redirect to %s", elsewhere.URL)
			}
		})
	}
}

// quotedPart is a part of message, of window bytes, that also appears in hostile, or
// empty; the address of the loopback servers, in both, is no quote.
func quotedPart(message, hostile string, window int) string {
	for _, loopback := range []string{"http://127.0.0.1:", "127.0.0.1:"} {
		message = strings.ReplaceAll(message, loopback, "\x00")
		hostile = strings.ReplaceAll(hostile, loopback, "\x01")
	}
	for start := 0; start+window <= len(message); start++ {
		if part := message[start : start+window]; strings.Contains(hostile, part) {
			return part
		}
	}
	return ""
}

func TestNodeUseReadsEachNodesShare(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer string
		want   map[string]float64
		err    string
	}{
		{"shares by node", `{"status":"success","data":{"resultType":"vector","result":[` +
			`{"metric":{"instance":"n1"},"value":[1764600000,"0.62"]},{"metric":{"instance":"n2"},"value":[1764600000,"0"]}]}}`,
			map[string]float64{"n1": 0.62, "n2": 0}, ""},
		{"a share above 1", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"instance":"n1"},"value":[1764600000,"1.5"]}]}}`,
			nil, "outside 0 to 1"},
		{"an answer of another shape", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, nil, "is not a Prometheus API response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer secret" || r.URL.Query().Get("query") != "q" {
					w.WriteHeader(http.StatusForbidden)
					return
				}
				_, _ = w.Write([]byte(tc.answer))
			}))
			defer server.Close()
			use, err := NodeUse(context.Background(), server.Client(), server.URL, "secret", "q")
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one saying %q", err, tc.err)
			case err != nil && strings.Contains(err.Error(), "secret"):
				t.Fatalf("error %v names the token", err)
			}
			if diff := cmp.Diff(tc.want, use); diff != "" {
				t.Errorf("use (-want +got):\n%s", diff)
			}
		})
	}
}
