package images

import (
	"archive/tar"
	"bufio"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	containerv1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// imageFile is a file of an image as extracted: its mode, owner and content.
type imageFile struct {
	mode     int64
	uid, gid int
	content  string
}

// extract reads every file and directory of image, by path without the leading slash.
func extract(t *testing.T, image containerv1.Image) map[string]imageFile {
	t.Helper()
	reader := mutate.Extract(image)
	defer func() { _ = reader.Close() }()
	files := map[string]imageFile{}
	archive := tar.NewReader(reader)
	for {
		header, err := archive.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		content, err := io.ReadAll(archive)
		if err != nil {
			t.Fatal(err)
		}
		files[header.Name] = imageFile{mode: header.Mode, uid: header.Uid, gid: header.Gid, content: string(content)}
	}
}

func binary(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "binary")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// An image written to an archive comes back, under its reference, with its binaries
// executable at their paths, the base's users and /tmp, and its entrypoint and user.
func TestAnArchiveHoldsTheImagesAsBuilt(t *testing.T) {
	archive := filepath.Join(t.TempDir(), "images.tar")
	operator := Operator("example.test/operator:v1", binary(t, "manager"), binary(t, "plugin"))
	pause := Pause("example.test/pause:3.10", binary(t, "pause"))
	if err := Write(archive, operator, pause); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(operator.Reference)
	if err != nil {
		t.Fatal(err)
	}
	image, err := tarball.ImageFromPath(archive, &tag)
	if err != nil {
		t.Fatal(err)
	}
	config, err := image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if config.OS != "linux" || !slices.Equal(config.Config.Entrypoint, []string{"/manager"}) || config.Config.User != NonRootUser {
		t.Errorf("config: os %s, entrypoint %v, user %q; want linux, [/manager], %q", config.OS, config.Config.Entrypoint, config.Config.User, NonRootUser)
	}
	files := extract(t, image)
	want := map[string]imageFile{
		"manager":                     {mode: 0o755, content: "manager"},
		"kubectl-secondary_scheduler": {mode: 0o755, content: "plugin"},
		"tmp":                         {mode: 0o1777},
		"home/nonroot":                {mode: 0o700, uid: 65532, gid: 65532},
		"etc":                         {mode: 0o755},
		"home":                        {mode: 0o755},
		"etc/passwd":                  {mode: 0o644, content: baseFiles["/etc/passwd"]},
		"etc/group":                   {mode: 0o644, content: baseFiles["/etc/group"]},
	}
	if diff := cmp.Diff(want, files, cmp.AllowUnexported(imageFile{})); diff != "" {
		t.Errorf("files of the operator's image (-want +got):\n%s", diff)
	}
	pauseTag, err := name.NewTag(pause.Reference)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tarball.ImageFromPath(archive, &pauseTag); err != nil {
		t.Errorf("the pause image is not in the archive: %v", err)
	}
}

// The same binaries build the same image, so a rebuilt image is recognised as unchanged.
func TestBuildIsReproducible(t *testing.T) {
	spec := Scheduler("example.test/kube-scheduler:v1.37.0", render.SchedulerPluginsImage, binary(t, "kube-scheduler"))
	digests := make([]containerv1.Hash, 0, 2)
	for range 2 {
		image, err := Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		digest, err := image.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, digest)
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds of one spec: %s and %s", digests[0], digests[1])
	}
}

// dynamicallyLinked is an executable of this machine that needs its dynamic loader.
func dynamicallyLinked(t *testing.T) string {
	t.Helper()
	for _, candidate := range []string{"/bin/true", "/usr/bin/true", "/bin/sh"} {
		executable, err := elf.Open(candidate)
		if err != nil {
			continue
		}
		dynamic := slices.ContainsFunc(executable.Progs, func(program *elf.Prog) bool { return program.Type == elf.PT_INTERP })
		_ = executable.Close()
		if dynamic {
			return candidate
		}
	}
	t.Skip("no dynamically linked executable on this machine")
	return ""
}

// A missing binary, a dynamically linked one, or a path that is not absolute and clean, is an error that names it.
func TestBuildRefusesWhatItCannotLayOut(t *testing.T) {
	for _, test := range []struct {
		name string
		file File
		want string
	}{
		{"missing binary", File{Path: "/manager", Source: filepath.Join(t.TempDir(), "absent")}, "/manager"},
		{"relative path", File{Path: "manager", Source: binary(t, "x")}, `"manager"`},
		{"unclean path", File{Path: "/bin/../manager", Source: binary(t, "x")}, `"/bin/../manager"`},
		{"directory", File{Path: "/manager", Source: t.TempDir()}, "not a regular file"},
		{"dynamically linked", File{Path: "/manager", Source: dynamicallyLinked(t)}, "CGO_ENABLED=0"},
	} {
		t.Run(test.name, func(t *testing.T) {
			_, err := Build(Spec{Reference: "example.test/x:v1", Files: []File{test.file}})
			if err == nil || !strings.Contains(err.Error(), test.want) {
				t.Errorf("error %v, want one naming %s", err, test.want)
			}
		})
	}
}

// The operator's image is laid out as the Dockerfile's final stage lays it out: the same
// files at the same paths, the same user and entrypoint.
func TestOperatorImageAgreesWithTheDockerfile(t *testing.T) {
	dockerfile, err := os.Open(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dockerfile.Close() }()
	copied := []string{}
	var user string
	var entrypoint []string
	lines := bufio.NewScanner(dockerfile)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "FROM": // only the final stage's instructions lay out the image
			copied, user, entrypoint = copied[:0], "", nil
		case "COPY":
			copied = append(copied, fields[len(fields)-1])
		case "USER":
			user = fields[1]
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(strings.TrimSpace(strings.TrimPrefix(lines.Text(), "ENTRYPOINT"))), &entrypoint); err != nil {
				t.Fatalf("ENTRYPOINT is not a JSON array: %v", err)
			}
		}
	}
	operator := Operator("example.test/operator:v1", "manager", "plugin")
	paths := make([]string, 0, len(operator.Files))
	for _, file := range operator.Files {
		paths = append(paths, file.Path)
	}
	if diff := cmp.Diff(copied, paths); diff != "" {
		t.Errorf("files of the operator's image against the Dockerfile's COPY (-Dockerfile +images.Operator):\n%s", diff)
	}
	if user != operator.User || !slices.Equal(entrypoint, operator.Entrypoint) {
		t.Errorf("user %q, entrypoint %v; the Dockerfile has %q, %v", operator.User, operator.Entrypoint, user, entrypoint)
	}
}

// Each kind of scheduler image holds its binary where internal/render starts it, and
// scheduler-plugins' runs as the nonroot user render expects of it.
func TestSchedulerImagesAgreeWithRender(t *testing.T) {
	for _, test := range []struct {
		kind       render.ImageKind
		binary     string
		user       string
		entrypoint string
	}{
		{render.SchedulerPluginsImage, "/bin/kube-scheduler", NonRootUser, "/bin/kube-scheduler"},
		{render.KubeSchedulerImage, "/usr/local/bin/kube-scheduler", "", "/usr/local/bin/kube-scheduler"},
	} {
		spec := Scheduler("example.test/scheduler:v1", test.kind, "kube-scheduler")
		if len(spec.Files) != 1 || spec.Files[0].Path != test.binary || spec.Files[0].Path != (render.Image{Kind: test.kind}).Binary() {
			t.Errorf("%s: files %v, want the binary at %s", test.kind, spec.Files, test.binary)
		}
		if spec.User != test.user || !slices.Equal(spec.Entrypoint, []string{test.entrypoint}) {
			t.Errorf("%s: user %q, entrypoint %v; want %q, [%s]", test.kind, spec.User, spec.Entrypoint, test.user, test.entrypoint)
		}
	}
}

// Images of the same files (every scheduler-plugins release image is built from one binary)
// share one layer, built once and stored rather than deflated; each image comes back from
// the archive with its binary.
func TestImagesOfTheSameFilesShareOneLayer(t *testing.T) {
	scheduler := binary(t, "kube-scheduler")
	releases := []Spec{
		Scheduler("example.test/scheduler-plugins/kube-scheduler:v0.36.0", render.SchedulerPluginsImage, scheduler),
		Scheduler("example.test/scheduler-plugins/kube-scheduler:v0.37.0", render.SchedulerPluginsImage, scheduler),
	}
	built, err := buildAll(releases)
	if err != nil {
		t.Fatal(err)
	}
	layers := make([]containerv1.Layer, 0, len(releases))
	for _, release := range releases {
		reference, err := name.ParseReference(release.Reference)
		if err != nil {
			t.Fatal(err)
		}
		imageLayers, err := built[reference].Layers()
		if err != nil || len(imageLayers) != 1 {
			t.Fatalf("%s's layers: %v, %v; want one", release.Reference, imageLayers, err)
		}
		layers = append(layers, imageLayers[0])
	}
	if layers[0] != layers[1] {
		t.Errorf("the two images of one binary have layers built apart, not one")
	}
	compressed, err := layers[0].Size()
	if err != nil {
		t.Fatal(err)
	}
	uncompressed, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	tarSize, err := io.Copy(io.Discard, uncompressed)
	if err != nil {
		t.Fatal(err)
	}
	if compressed < tarSize {
		t.Errorf("the layer's blob is %d bytes for a tar of %d: deflated, not stored", compressed, tarSize)
	}

	archive := filepath.Join(t.TempDir(), "images.tar")
	if err := Write(archive, releases...); err != nil {
		t.Fatal(err)
	}
	for _, release := range releases {
		tag, err := name.NewTag(release.Reference)
		if err != nil {
			t.Fatal(err)
		}
		image, err := tarball.ImageFromPath(archive, &tag)
		if err != nil {
			t.Fatalf("%s is not in the archive: %v", release.Reference, err)
		}
		if files := extract(t, image); files["bin/kube-scheduler"].content != "kube-scheduler" {
			t.Errorf("%s lacks its binary: %v", release.Reference, files)
		}
	}
}
