package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"time"
)

// runStartPrefix and runStartMarker make the line podrunner writes to a pod's log before
// each run of its process: "==== TIME podrunner starts: COMMAND".
const (
	runStartPrefix = "==== "
	runStartMarker = " podrunner starts: "
)

// containerLogsPattern is the kubelet's containerLogs endpoint, which the API server asks
// for a pod's log.
const containerLogsPattern = "GET /containerLogs/{namespace}/{pod}/{container}"

// logOptions are the kubelet's containerLogs query parameters podrunner honours.
type logOptions struct {
	previous, follow bool
	// tailLines is how many lines from the end to return; -1 for all.
	tailLines int
	// limitBytes is how many bytes to return at most; 0 for no limit.
	limitBytes int64
}

// parseLogOptions reads the query of a containerLogs request. podrunner keeps no time of
// each line, so timestamps and since are refused rather than ignored.
func parseLogOptions(query map[string][]string) (logOptions, error) {
	options := logOptions{tailLines: -1}
	value := func(name string) string {
		if values := query[name]; len(values) > 0 {
			return values[0]
		}
		return ""
	}
	for _, name := range []string{"timestamps", "sinceSeconds", "sinceTime"} {
		if value(name) != "" && value(name) != "false" {
			return options, fmt.Errorf("%s: podrunner's logs keep no time of each line (run kubectl logs without --timestamps and --since)", name)
		}
	}
	var err error
	for name, into := range map[string]*bool{"previous": &options.previous, "follow": &options.follow} {
		if text := value(name); text != "" {
			if *into, err = strconv.ParseBool(text); err != nil {
				return options, fmt.Errorf("%s=%q: %w", name, text, err)
			}
		}
	}
	if text := value("tailLines"); text != "" {
		if options.tailLines, err = strconv.Atoi(text); err != nil || options.tailLines < 0 {
			return options, fmt.Errorf("tailLines=%q: want a number of lines, 0 or more", text)
		}
	}
	if text := value("limitBytes"); text != "" {
		if options.limitBytes, err = strconv.ParseInt(text, 10, 64); err != nil || options.limitBytes < 1 {
			return options, fmt.Errorf("limitBytes=%q: want a number of bytes, 1 or more", text)
		}
	}
	return options, nil
}

// containerLogs answers GET /containerLogs/NAMESPACE/POD/CONTAINER as a kubelet does, from
// the log of the pod's process: the current run's output, or with previous the run's
// before it.
func (r *runner) containerLogs(w http.ResponseWriter, request *http.Request) {
	namespace, podName, container := request.PathValue("namespace"), request.PathValue("pod"), request.PathValue("container")
	options, err := parseLogOptions(request.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	process, ok := r.pods[namespace+"/"+podName]
	r.mu.Unlock()
	if !ok {
		http.Error(w, fmt.Sprintf("pod %s/%s is not running on podrunner's nodes", namespace, podName), http.StatusNotFound)
		return
	}
	if name := process.pod.Spec.Containers[0].Name; container != name {
		http.Error(w, fmt.Sprintf("container %q in pod %s/%s: podrunner runs only its first container, %q", container, namespace, podName, name), http.StatusBadRequest)
		return
	}
	log, err := os.ReadFile(process.logPath())
	if errors.Is(err, os.ErrNotExist) {
		log, err = nil, nil
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	output, end, err := runOutput(log, options.previous)
	if err != nil {
		http.Error(w, fmt.Sprintf("container %q in pod %s/%s: %v", container, namespace, podName, err), http.StatusBadRequest)
		return
	}
	written := writeLimited(w, lastLines(output, options.tailLines), options.limitBytes)
	if !options.follow || options.previous || end < int64(len(log)) {
		return
	}
	r.followLog(request.Context(), w, process, int64(len(log)), options.limitBytes-written, options.limitBytes > 0)
}

// followLog writes what the current run adds to the log from offset on, at most remaining
// bytes when limited, until the run ends (the next run's start line is written), the pod
// goes or the client leaves.
func (r *runner) followLog(ctx context.Context, w http.ResponseWriter, process *podProcess, offset, remaining int64, limited bool) {
	flusher, _ := w.(http.Flusher)
	for {
		if flusher != nil {
			flusher.Flush()
		}
		select {
		case <-ctx.Done():
			return
		case <-process.done:
			return
		case <-time.After(250 * time.Millisecond):
		}
		file, err := os.Open(process.logPath())
		if err != nil {
			return
		}
		added, err := io.ReadAll(io.NewSectionReader(file, offset, math.MaxInt64-offset))
		_ = file.Close()
		if err != nil {
			return
		}
		offset += int64(len(added))
		// A start line ends this run's output: what follows is the next run's.
		runEnded := false
		if starts := runStartLines(added); len(starts) > 0 {
			added, runEnded = added[:starts[0].start], true
		}
		if limited && int64(len(added)) >= remaining {
			_, _ = w.Write(added[:remaining])
			return
		}
		remaining -= int64(len(added))
		_, _ = w.Write(added)
		if runEnded {
			return
		}
	}
}

// runOutput is the output of the last run in log, or with previous of the one before it,
// without podrunner's start lines, and where that output ends in log.
func runOutput(log []byte, previous bool) ([]byte, int64, error) {
	starts := runStartLines(log)
	switch {
	case previous && len(starts) < 2:
		return nil, 0, errors.New("previous terminated container not found")
	case previous:
		before, last := starts[len(starts)-2], starts[len(starts)-1]
		return log[before.end:last.start], int64(last.start), nil
	case len(starts) == 0:
		return log, int64(len(log)), nil
	}
	return log[starts[len(starts)-1].end:], int64(len(log)), nil
}

// lineSpan is where a line of a log starts and where the next begins.
type lineSpan struct{ start, end int }

// runStartLines are the start lines podrunner wrote in text, in order.
func runStartLines(text []byte) []lineSpan {
	var spans []lineSpan
	for at := 0; at < len(text); {
		next := len(text)
		if end := bytes.IndexByte(text[at:], '\n'); end >= 0 {
			next = at + end + 1
		}
		line := text[at:next]
		if bytes.HasPrefix(line, []byte(runStartPrefix)) && bytes.Contains(line, []byte(runStartMarker)) {
			spans = append(spans, lineSpan{at, next})
		}
		at = next
	}
	return spans
}

// lastLines is the last n lines of output, or all of it when n is -1.
func lastLines(output []byte, n int) []byte {
	if n < 0 {
		return output
	}
	lines := bytes.SplitAfter(output, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	return bytes.Join(lines[max(0, len(lines)-n):], nil)
}

// writeLimited writes output, at most limit bytes of it when limit is above 0, and
// returns how many bytes it wrote.
func writeLimited(w io.Writer, output []byte, limit int64) int64 {
	if limit > 0 && int64(len(output)) > limit {
		output = output[:limit]
	}
	written, _ := w.Write(output)
	return int64(written)
}
