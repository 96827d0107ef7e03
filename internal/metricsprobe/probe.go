// Package metricsprobe asks a Prometheus endpoint, with the credentials a load-aware
// scheduler will use, for the series that scheduler-plugins' load-watcher reads, and says
// precisely what is wrong when they are not usable. A load-aware scheduler whose metrics
// are missing scores every node 0 without a word; the probe is how the operator notices.
package metricsprobe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// Series are the recording rules load-watcher queries (over 5m, 10m and 15m windows),
// keyed by an instance label that must equal the Node name.
var Series = []string{"instance:node_cpu:ratio", "instance:node_memory_utilisation:ratio"}

// Result is what a probe found.
type Result struct {
	// Available is true when every node has every series.
	Available bool
	// Reason is the MetricsAvailable condition's reason.
	Reason v1.ConditionReason
	// Message says what was found, and what to fix.
	Message string
	// NodesWithMetrics counts the nodes that have every series, of Nodes.
	NodesWithMetrics, Nodes int
}

// Probe queries address (a Prometheus HTTP API root) for Series and compares their
// instance labels with nodeNames. token, when set, is sent as a bearer token.
func Probe(ctx context.Context, client *http.Client, address, token string, nodeNames []string) Result {
	covered := map[string]int{}
	var example string
	for _, series := range Series {
		instances, err := query(ctx, client, address, token, series)
		if err != nil {
			var status *statusError
			if errors.As(err, &status) && (status.code == http.StatusUnauthorized || status.code == http.StatusForbidden) {
				return Result{Reason: v1.ReasonUnauthorized, Nodes: len(nodeNames), Message: fmt.Sprintf(
					"%s refused the scheduler's credentials (%s); give it a token of an identity allowed to query it", address, status)}
			}
			return Result{Reason: v1.ReasonPrometheusUnreachable, Nodes: len(nodeNames), Message: fmt.Sprintf(
				"querying %s for %s failed: %v; check the address and that the scheduler's namespace may reach it", address, series, err)}
		}
		if len(instances) == 0 {
			return Result{Reason: v1.ReasonRecordingRuleMissing, Nodes: len(nodeNames), Message: fmt.Sprintf(
				"%s has no series %s, which load-watcher reads; add the node-exporter recording rules (kube-prometheus defines them) with instance set to the node name", address, series)}
		}
		for _, instance := range instances {
			if slices.Contains(nodeNames, instance) {
				covered[instance]++
			} else if example == "" {
				example = instance
			}
		}
	}
	withMetrics := 0
	var lacking []string
	for _, node := range nodeNames {
		if covered[node] == len(Series) {
			withMetrics++
		} else {
			lacking = append(lacking, node)
		}
	}
	result := Result{NodesWithMetrics: withMetrics, Nodes: len(nodeNames)}
	if len(lacking) > 0 {
		result.Reason = v1.ReasonNodeLabelMismatch
		result.Message = fmt.Sprintf("%d of %d nodes have no %s series labelled with their name (for example %s)",
			len(lacking), len(nodeNames), strings.Join(Series, " or "), lacking[0])
		if example != "" {
			result.Message += fmt.Sprintf("; series carry instance=%q, which is no node name: relabel instance to the node name (from __meta_kubernetes_pod_node_name or __meta_kubernetes_node_name)", example)
		}
		return result
	}
	result.Available, result.Reason = true, v1.ReasonMetricsAvailable
	result.Message = fmt.Sprintf("%s serves %s for all %d nodes", address, strings.Join(Series, " and "), len(nodeNames))
	return result
}

type statusError struct {
	code int
	body string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.body) }

// query runs an instant query and returns the instance label of each series.
func query(ctx context.Context, client *http.Client, address, token, series string) ([]string, error) {
	endpoint := strings.TrimRight(address, "/") + "/api/v1/query?query=" + url.QueryEscape(series)
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		request.Header.Set("Authorization", "Bearer "+token)
	}
	response, err := client.Do(request)
	if err != nil {
		return nil, err
	}
	defer func() { _ = response.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(response.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	if response.StatusCode != http.StatusOK {
		return nil, &statusError{code: response.StatusCode, body: strings.TrimSpace(string(body[:min(len(body), 200)]))}
	}
	var answer struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, fmt.Errorf("not a Prometheus API answer: %w", err)
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("query failed: %s", answer.Error)
	}
	instances := make([]string, 0, len(answer.Data.Result))
	for _, result := range answer.Data.Result {
		instances = append(instances, result.Metric["instance"])
	}
	return instances, nil
}
