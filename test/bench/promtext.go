package main

import (
	"bufio"
	"fmt"
	"maps"
	"strconv"
	"strings"
)

// metricSample is one sample of the Prometheus text exposition format.
type metricSample struct {
	name   string
	labels map[string]string
	value  float64
}

// metricsSnapshot is what one scrape of the operator's /metrics returned.
type metricsSnapshot []metricSample

// parseMetrics reads the Prometheus text exposition format: comment lines, then
// name{label="value",...} value [timestamp]. Label values may hold \\, \" and \n escapes.
func parseMetrics(text string) (metricsSnapshot, error) {
	var snapshot metricsSnapshot
	scanner := bufio.NewScanner(strings.NewReader(text))
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for number := 1; scanner.Scan(); number++ {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sample, err := parseSampleLine(line)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d %q: %w", number, line, err)
		}
		snapshot = append(snapshot, sample)
	}
	return snapshot, scanner.Err()
}

func parseSampleLine(line string) (metricSample, error) {
	sample := metricSample{labels: map[string]string{}}
	end := strings.IndexAny(line, "{ \t")
	if end <= 0 {
		return sample, fmt.Errorf("no value after the metric name")
	}
	sample.name, line = line[:end], line[end:]
	if strings.HasPrefix(line, "{") {
		rest, err := parseLabels(line[1:], sample.labels)
		if err != nil {
			return sample, err
		}
		line = rest
	}
	fields := strings.Fields(line)
	if len(fields) < 1 || len(fields) > 2 {
		return sample, fmt.Errorf("want a value and an optional timestamp, got %q", line)
	}
	value, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return sample, fmt.Errorf("value: %w", err)
	}
	sample.value = value
	return sample, nil
}

// parseLabels reads label="value" pairs up to the closing brace into labels and returns
// what follows it.
func parseLabels(text string, labels map[string]string) (string, error) {
	for {
		text = strings.TrimLeft(text, " \t,")
		if strings.HasPrefix(text, "}") {
			return text[1:], nil
		}
		name, rest, ok := strings.Cut(text, "=")
		if !ok || !strings.HasPrefix(rest, `"`) {
			return "", fmt.Errorf("label %q has no quoted value", name)
		}
		var value strings.Builder
		i := 1
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] != '\\' || i+1 == len(rest) {
				value.WriteByte(rest[i])
				continue
			}
			i++
			switch rest[i] {
			case 'n':
				value.WriteByte('\n')
			default:
				value.WriteByte(rest[i])
			}
		}
		if i == len(rest) {
			return "", fmt.Errorf("label %s: unterminated value", name)
		}
		labels[strings.TrimSpace(name)] = value.String()
		text = rest[i+1:]
	}
}

// sum adds the samples of name whose labels include match.
func (s metricsSnapshot) sum(name string, match map[string]string) float64 {
	total := 0.0
	for _, sample := range s {
		if sample.name == name && includes(sample.labels, match) {
			total += sample.value
		}
	}
	return total
}

// by adds the samples of name whose labels include match, grouped by the values of the
// labels keys, joined with a space.
func (s metricsSnapshot) by(name string, match map[string]string, keys ...string) map[string]float64 {
	groups := map[string]float64{}
	for _, sample := range s {
		if sample.name != name || !includes(sample.labels, match) {
			continue
		}
		values := make([]string, len(keys))
		for i, key := range keys {
			values[i] = sample.labels[key]
		}
		groups[strings.Join(values, " ")] += sample.value
	}
	return groups
}

func includes(labels, match map[string]string) bool {
	for key, value := range match {
		if labels[key] != value {
			return false
		}
	}
	return true
}

// counterDelta is after minus before for each group of a counter; groups that did not
// change are left out. A counter that went down (a restarted process) counts from zero.
func counterDelta(before, after map[string]float64) map[string]float64 {
	delta := map[string]float64{}
	for key, value := range after {
		change := value - before[key]
		if change < 0 {
			change = value
		}
		if change != 0 {
			delta[key] = change
		}
	}
	return delta
}

// total adds the values of groups.
func total(groups map[string]float64) float64 {
	sum := 0.0
	for value := range maps.Values(groups) {
		sum += value
	}
	return sum
}
