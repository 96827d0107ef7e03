// Command kubectl-secondary_scheduler is the secondary-scheduler-operator's kubectl plugin:
// with it on PATH, `kubectl secondary-scheduler render -f FILE` prints every object the
// operator would create for a SecondaryScheduler, without a cluster (docs/render.md).
//
// kubectl runs an executable named kubectl-NAME found on PATH for `kubectl NAME`. A dash in
// the file name separates command words (kubectl-secondary-scheduler would be
// `kubectl secondary scheduler`), and an underscore stands for a dash within a word, so
// this binary answers `kubectl secondary-scheduler` (and `kubectl secondary_scheduler`).
// It runs as well on its own: `kubectl-secondary_scheduler render -f FILE`.
//
// It is a binary of its own, apart from the operator's, because rendering offline
// validates with the CRD's schema and CEL rules as the API server does, with
// k8s.io/apiextensions-apiserver, which brings k8s.io/apiserver, cel-go, OpenTelemetry and
// gRPC: the operator does not link them (test/depfence fails when it does).
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/offline"
)

// usage lists the plugin's commands.
const usage = `Usage: kubectl secondary-scheduler COMMAND [flags]

Commands:
  render    Print every object the operator would create for a SecondaryScheduler, without a cluster.

"kubectl secondary-scheduler COMMAND -h" lists a command's flags.
`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command of args and returns the exit code: the command's own (those of
// offline.Main for render), offline.ExitUsage for a command that does not exist.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return offline.ExitUsage
	}
	switch args[0] {
	case "render":
		return offline.Main(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return offline.ExitRendered
	}
	fmt.Fprintf(stderr, "unknown command %q\n\n%s", args[0], usage)
	return offline.ExitUsage
}
