package offline

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/tenancy"
)

// Exit codes of Main.
const (
	// ExitRendered: the objects were written.
	ExitRendered = 0
	// ExitUsage: the command line or a file could not be read.
	ExitUsage = 1
	// ExitRefused: the API server or the operator would refuse the resource; the reason
	// is written to standard error.
	ExitRefused = 2
)

// Usage is the command's synopsis.
const Usage = `Usage: kubectl secondary-scheduler render -f FILE [-f FILE ...] [--config-map FILE ...]
    [--kubernetes-version 1.37] [--prometheus-url URL | --prometheus-namespaces NS,...]
    [--scheduler-namespaces NS,...] [-n NAMESPACE]

Prints every object the operator would create for the SecondaryScheduler in the files,
without a cluster, from the operator's own rendering. What the API server or the operator
would refuse is reported with the reason status would show, and the exit code is 2.
`

// Main runs the render command with args (those after "render"), writing the objects to
// stdout and problems to stderr, and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	in, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return ExitRendered
	}
	if err != nil {
		fmt.Fprintf(stderr, "render: %v\n\n%s", err, Usage)
		return ExitUsage
	}
	rendered, err := Render(ctx, in)
	var invalid *InvalidError
	switch refused, isRefusal := refusal.As(err); {
	case errors.As(err, &invalid):
		fmt.Fprintf(stderr, "The API server would refuse SecondaryScheduler %q:\n", invalid.Name)
		for _, cause := range invalid.Causes {
			fmt.Fprintf(stderr, "* %s\n", cause)
		}
		return ExitRefused
	case isRefusal:
		fmt.Fprintf(stderr, "The operator would refuse it and apply nothing; a scheduler already running keeps its last good configuration "+
			"(status: Degraded, reason %s):\n%s\n", refused.Reason, refused.Message)
		if hint := offlineHint(refused.Reason); hint != "" {
			fmt.Fprintln(stderr, hint)
		}
		return ExitRefused
	case err != nil:
		fmt.Fprintf(stderr, "render: %v\n", err)
		return ExitUsage
	}
	for _, note := range rendered.Notes {
		fmt.Fprintf(stderr, "note: %s\n", note)
	}
	if err := Write(stdout, rendered); err != nil {
		fmt.Fprintf(stderr, "render: %v\n", err)
		return ExitUsage
	}
	return ExitRendered
}

// fileList is a flag given once per file.
type fileList []string

func (f *fileList) String() string        { return strings.Join(*f, ",") }
func (f *fileList) Set(path string) error { *f = append(*f, path); return nil }

// DefaultOperatorNamespace is the namespace the installer and the bundle's suggested
// namespace put the operator in (config/manager).
const DefaultOperatorNamespace = "secondary-scheduler-operator"

// parse reads the command line into an Input, with the files' content.
func parse(args []string, stderr io.Writer) (Input, error) {
	flags := flag.NewFlagSet("render", flag.ContinueOnError)
	// Main says what was wrong, once; -h shows the flags.
	flags.SetOutput(io.Discard)
	var files, configMaps fileList
	flags.Var(&files, "f", "A file of the SecondaryScheduler, and of any object it references (YAML or JSON, several objects a file); - for standard input. Repeatable.")
	flags.Var(&configMaps, "config-map", "A file of an object the SecondaryScheduler references: the ConfigMap of spec.schedulerConfig, a labelled Secret, a PriorityClass. Repeatable.")
	kubernetesVersion := flags.String("kubernetes-version", fmt.Sprintf("1.%d", render.NewestKnownMinor()),
		"The cluster's Kubernetes version, which chooses the default scheduler image.")
	prometheusURL := flags.String("prometheus-url", "",
		"The Prometheus that discovery would find, for a load-aware profile that gives no address.")
	schedulerNamespaces := flags.String("scheduler-namespaces", "",
		"The operator's --scheduler-namespaces; empty allows the resource's namespace.")
	prometheusNamespaces := flags.String("prometheus-namespaces", "",
		"The operator's --prometheus-namespaces: where Prometheus is discovered among the objects given. "+
			"Default: none, so discovery finds nothing; the operator's default (its own namespace, and openshift-monitoring on OpenShift) "+
			"depends on the cluster, so list those namespaces here.")
	namespace := flags.String("n", "default", "The namespace of a resource or object that names none.")
	operatorNamespace := flags.String("operator-namespace", DefaultOperatorNamespace,
		"The operator's namespace, whose pods alone reach a descheduler's metrics and which no descheduler evicts.")
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			flags.SetOutput(stderr)
			fmt.Fprint(stderr, Usage+"\nFlags:\n")
			flags.PrintDefaults()
		}
		return Input{}, err
	}
	if flags.NArg() > 0 {
		return Input{}, fmt.Errorf("unexpected argument %q: give files with -f", flags.Arg(0))
	}
	if len(files) == 0 {
		return Input{}, errors.New("no file: give the SecondaryScheduler's with -f")
	}
	minor, err := parseMinor(*kubernetesVersion)
	if err != nil {
		return Input{}, err
	}
	in := Input{KubernetesMinor: minor, PrometheusURL: *prometheusURL, Namespace: *namespace, OperatorNamespace: *operatorNamespace,
		SchedulerNamespaces: tenancy.ParseList(*schedulerNamespaces), PrometheusNamespaces: tenancy.ParseList(*prometheusNamespaces)}
	for _, path := range append(files, configMaps...) {
		data, err := readFile(path)
		if err != nil {
			return Input{}, err
		}
		in.Documents = append(in.Documents, Document{Source: path, Data: data})
	}
	return in, nil
}

func readFile(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(path)
}

// parseMinor reads the minor version of "1.37", "v1.37" or "v1.37.2".
func parseMinor(text string) (int, error) {
	parts := strings.Split(strings.TrimPrefix(text, "v"), ".")
	if len(parts) < 2 || parts[0] != "1" {
		return 0, fmt.Errorf("--kubernetes-version %q: give a version such as 1.37", text)
	}
	minor, err := strconv.Atoi(parts[1])
	if err != nil || minor < 0 {
		return 0, fmt.Errorf("--kubernetes-version %q: give a version such as 1.37", text)
	}
	return minor, nil
}

// offlineHint says how to give render what the operator would find in the cluster, for a
// refusal that may only mean it was not given.
func offlineHint(reason v1.ConditionReason) string {
	switch {
	case reason == v1.ReasonPrometheusNotFound:
		return "(render: give --prometheus-url, or the Prometheus' Service with -f and its namespace with --prometheus-namespaces, for what discovery would find in the cluster.)"
	case missingObject(reason):
		return "(render: if it exists in the cluster, give its file with -f or --config-map.)"
	default:
		return ""
	}
}
