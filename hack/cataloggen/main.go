// Command cataloggen writes the operator's file-based catalog (catalog/ and
// catalog.Dockerfile) from the generated bundle. Run it through `make catalog`; never
// edit its output by hand.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/bundle"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/catalog"
)

func main() {
	var opts catalog.Options
	root := flag.String("root", ".", "Repository root, holding the bundle; the catalog is written there.")
	flag.StringVar(&opts.BundleImage, "bundle-image", "", "Pull spec of the bundle image.")
	flag.StringVar(&opts.OPMImage, "opm-image", "", "Base image of the catalog image, holding /bin/opm.")
	flag.Parse()
	files, err := catalog.Generate(os.DirFS(filepath.Join(*root, bundle.Dir)), opts)
	if err == nil {
		err = catalog.Write(*root, files)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cataloggen:", err)
		os.Exit(1)
	}
}
