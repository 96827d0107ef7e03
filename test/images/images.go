// Package images builds the container images that a real node of the local cluster runs,
// from binaries on this machine, with neither a registry nor a base image to download:
// each image is one layer holding its binaries and the few files of a distroless base
// (the nonroot user, /tmp), with the entrypoint and user of the image it stands for: the
// Dockerfile's for the operator (TestOperatorImageAgreesWithTheDockerfile), and for the
// schedulers the binary path and user internal/render starts them with
// (TestSchedulerImagesAgreeWithRender). Write puts images in one archive, in the
// layout `docker save` writes, which `ctr -n k8s.io images import` takes.
package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	containerv1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// NonRootUser is distroless' nonroot user and group, as images built on
// gcr.io/distroless/static:nonroot run.
const NonRootUser = "65532:65532"

// File is a binary of an image: the file at Source on this machine, at Path in the image.
type File struct {
	Path   string
	Source string
}

// Spec is an image to build.
type Spec struct {
	// Reference is the name the image is imported as, such as
	// ghcr.io/secondary-scheduler/secondary-scheduler-operator:v0.1.0.
	Reference string
	// Files are the image's binaries, each executable by everyone.
	Files []File
	// Entrypoint is the image's entrypoint.
	Entrypoint []string
	// User is the image's user, "uid:gid"; empty for root.
	User string
}

// Operator is the operator's image as the Dockerfile builds it: the operator at /manager
// (the entrypoint) and the kubectl plugin at /kubectl-secondary_scheduler, as the nonroot
// user.
func Operator(reference, manager, plugin string) Spec {
	return Spec{
		Reference:  reference,
		Files:      []File{{Path: "/manager", Source: manager}, {Path: "/kubectl-secondary_scheduler", Source: plugin}},
		Entrypoint: []string{"/manager"},
		User:       NonRootUser,
	}
}

// Scheduler is a kube-scheduler image of kind, laid out as the published ones are: the
// binary where internal/render starts it (render.Image.Binary), and scheduler-plugins'
// image as the nonroot user; Kubernetes' own kube-scheduler image sets no user, and
// render runs it as nonroot through the pod's security context.
func Scheduler(reference string, kind render.ImageKind, binary string) Spec {
	inImage := render.Image{Kind: kind}.Binary()
	spec := Spec{Reference: reference, Files: []File{{Path: inImage, Source: binary}}, Entrypoint: []string{inImage}}
	if kind != render.KubeSchedulerImage {
		spec.User = NonRootUser
	}
	return spec
}

// PluginController is scheduler-plugins' controller image as its build/controller/Dockerfile
// lays it out: /bin/controller, the entrypoint, as the nonroot user.
func PluginController(reference, binary string) Spec {
	return Spec{Reference: reference, Files: []File{{Path: "/bin/controller", Source: binary}}, Entrypoint: []string{"/bin/controller"}, User: NonRootUser}
}

// Descheduler is sigs.k8s.io/descheduler's release image layout: /bin/descheduler, as user
// 1000 (its Dockerfile's USER).
func Descheduler(reference, binary string) Spec {
	return Spec{Reference: reference, Files: []File{{Path: "/bin/descheduler", Source: binary}}, Entrypoint: []string{"/bin/descheduler"}, User: "1000"}
}

// Pause is the pod sandbox's image, registry.k8s.io/pause's layout: /pause as user 65535.
func Pause(reference, binary string) Spec {
	return Spec{Reference: reference, Files: []File{{Path: "/pause", Source: binary}}, Entrypoint: []string{"/pause"}, User: "65535:65535"}
}

// Build builds the image spec describes, for this machine's architecture. The same spec
// and binaries build the same image, digest included: every file's time is the epoch.
func Build(spec Spec) (containerv1.Image, error) {
	layer, err := layerOf(spec.Files)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Reference, err)
	}
	return imageOf(spec, layer)
}

// imageOf is spec's image of layer, which holds spec's files.
func imageOf(spec Spec, layer containerv1.Layer) (containerv1.Image, error) {
	image, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Reference, err)
	}
	config, err := image.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Reference, err)
	}
	config = config.DeepCopy()
	config.OS, config.Architecture = "linux", runtime.GOARCH
	config.Config.Entrypoint = spec.Entrypoint
	config.Config.User = spec.User
	config.Config.WorkingDir = "/"
	config.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	return mutate.ConfigFile(image, config)
}

// Write builds every spec and writes them to one archive at archivePath, each under its
// reference.
func Write(archivePath string, specs ...Spec) error {
	byReference, err := buildAll(specs)
	if err != nil {
		return err
	}
	return tarball.MultiRefWriteToFile(archivePath, byReference)
}

// buildAll builds every spec, by reference. Specs of the same files share one layer, read
// and digested once: the image of every scheduler-plugins release is built from one binary.
func buildAll(specs []Spec) (map[name.Reference]containerv1.Image, error) {
	byReference := make(map[name.Reference]containerv1.Image, len(specs))
	layers := map[string]containerv1.Layer{}
	for _, spec := range specs {
		reference, err := name.ParseReference(spec.Reference)
		if err != nil {
			return nil, fmt.Errorf("image reference %q: %w", spec.Reference, err)
		}
		key := fmt.Sprint(slices.SortedFunc(slices.Values(spec.Files), func(a, b File) int { return strings.Compare(a.Path, b.Path) }))
		layer, ok := layers[key]
		if !ok {
			if layer, err = layerOf(spec.Files); err != nil {
				return nil, fmt.Errorf("image %s: %w", spec.Reference, err)
			}
			layers[key] = layer
		}
		image, err := imageOf(spec, layer)
		if err != nil {
			return nil, err
		}
		byReference[reference] = image
	}
	return byReference, nil
}

// baseFiles are what a distroless static base holds that the binaries may need: the
// users' names (a process may look up its own), and a /tmp and home of the nonroot user.
var baseFiles = map[string]string{
	"/etc/passwd": "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
	"/etc/group":  "root:x:0:\nnonroot:x:65532:\n",
}

var baseDirectories = map[string]int64{"/tmp": 0o1777, "/home/nonroot": 0o700, "/etc": 0o755}

// layerOf is one layer of the base's files and files, with every directory on their
// paths. It is gzip's stored form, not deflated: the archive goes no further than this
// machine's containerd, and deflating a kube-scheduler binary costs seconds of a CPU on every
// build, for a file that containerd then inflates again.
func layerOf(files []File) (containerv1.Layer, error) {
	var buffer bytes.Buffer
	archive := tar.NewWriter(&buffer)
	epoch := time.Unix(0, 0)
	directories := maps.Clone(baseDirectories)
	paths := make([]string, 0, len(files)+len(baseFiles))
	for _, file := range files {
		paths = append(paths, file.Path)
	}
	for filePath := range baseFiles {
		paths = append(paths, filePath)
	}
	for directory := range baseDirectories {
		paths = append(paths, directory)
	}
	for _, filePath := range paths {
		if !path.IsAbs(filePath) || path.Clean(filePath) != filePath {
			return nil, fmt.Errorf("the path %q in the image is not absolute and clean", filePath)
		}
		for directory := path.Dir(filePath); directory != "/"; directory = path.Dir(directory) {
			if _, ok := directories[directory]; !ok {
				directories[directory] = 0o755
			}
		}
	}
	for _, directory := range slices.Sorted(maps.Keys(directories)) {
		header := &tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(directory, "/") + "/", Mode: directories[directory], ModTime: epoch}
		if directory == "/home/nonroot" {
			header.Uid, header.Gid = 65532, 65532
		}
		if err := archive.WriteHeader(header); err != nil {
			return nil, err
		}
	}
	for _, filePath := range slices.Sorted(maps.Keys(baseFiles)) {
		if err := writeFile(archive, filePath, 0o644, strings.NewReader(baseFiles[filePath]), int64(len(baseFiles[filePath])), epoch); err != nil {
			return nil, err
		}
	}
	sorted := slices.SortedFunc(slices.Values(files), func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	for _, file := range sorted {
		if err := writeBinary(archive, file, epoch); err != nil {
			return nil, err
		}
	}
	if err := archive.Close(); err != nil {
		return nil, err
	}
	content := buffer.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(content)), nil },
		tarball.WithCompressionLevel(gzip.NoCompression))
}

func writeBinary(archive *tar.Writer, file File, modTime time.Time) error {
	source, err := os.Open(file.Source)
	if err != nil {
		return fmt.Errorf("the binary for %s: %w", file.Path, err)
	}
	defer func() { _ = source.Close() }()
	info, err := source.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("the binary for %s, %s, is not a regular file", file.Path, file.Source)
	}
	if err := refuseDynamicLinking(source); err != nil {
		return fmt.Errorf("the binary for %s, %s: %w", file.Path, file.Source, err)
	}
	if _, err := source.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return writeFile(archive, file.Path, 0o755, source, info.Size(), modTime)
}

// refuseDynamicLinking refuses an executable that needs a dynamic loader: the images
// have none, as distroless static has none, and the kernel would answer "no such file or
// directory" for a file that is there. What is not ELF is left to its reader.
func refuseDynamicLinking(binary io.ReaderAt) error {
	executable, err := elf.NewFile(binary)
	if err != nil {
		return nil
	}
	defer func() { _ = executable.Close() }()
	for _, program := range executable.Progs {
		if program.Type == elf.PT_INTERP {
			return errors.New("it is linked dynamically, and the image has no libc: build it with CGO_ENABLED=0")
		}
	}
	return nil
}

func writeFile(archive *tar.Writer, filePath string, mode int64, content io.Reader, size int64, modTime time.Time) error {
	header := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(filePath, "/"), Mode: mode, Size: size, ModTime: modTime}
	if err := archive.WriteHeader(header); err != nil {
		return err
	}
	_, err := io.Copy(archive, content)
	return err
}
