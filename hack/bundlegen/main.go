// Command bundlegen writes the operator's OLM bundle (bundle/ and bundle.Dockerfile) from
// config/. Run it through `make bundle`; never edit its output by hand.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/bundle"
)

func main() {
	var opts bundle.Options
	flag.StringVar(&opts.Root, "root", ".", "Repository root, holding config/; the bundle is written there.")
	flag.StringVar(&opts.Version, "version", "", "The operator's semantic version, without a leading v.")
	flag.StringVar(&opts.PreviousVersion, "previous-version", "", "The version this one replaces; empty for none.")
	flag.StringVar(&opts.Image, "image", "", "The operator's image.")
	flag.Parse()
	generated, err := bundle.Generate(opts)
	if err == nil {
		err = bundle.Write(opts.Root, generated)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bundlegen:", err)
		os.Exit(1)
	}
}
