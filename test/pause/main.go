// Command pause is what the local cluster's podrunner runs for the pause image
// (registry.k8s.io/pause), which workloads of the docs and the demo use as a container
// that does nothing: like the image's own program, it waits for SIGTERM or SIGINT and
// exits 0.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
