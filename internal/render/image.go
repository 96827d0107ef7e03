package render

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/distribution/reference"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// schedulerPluginsRepository publishes kubernetes-sigs/scheduler-plugins' kube-scheduler,
// which carries every in-tree plugin plus Trimaran and the other out-of-tree ones.
const schedulerPluginsRepository = "registry.k8s.io/scheduler-plugins/kube-scheduler"

// schedulerPluginsReleases maps a Kubernetes minor version to the newest published
// scheduler-plugins release built for it (scheduler-plugins v0.N is built for 1.N).
var schedulerPluginsReleases = map[int]string{
	35: "v0.35.7", // tagged September 2026
	34: "v0.34.7",
	33: "v0.33.5",
	32: "v0.32.7",
	31: "v0.31.8",
	30: "v0.30.12",
}

const newestKnownMinor, oldestKnownMinor = 35, 30

// SchedulerPluginsReleaseImages are the references of every scheduler-plugins release the
// operator knows, oldest first: each is the default image on some cluster.
func SchedulerPluginsReleaseImages() []string {
	references := make([]string, 0, len(schedulerPluginsReleases))
	for minor := oldestKnownMinor; minor <= newestKnownMinor; minor++ {
		references = append(references, schedulerPluginsRepository+":"+schedulerPluginsReleases[minor])
	}
	return references
}

// ImageKind is which kube-scheduler an image holds, as far as its reference tells: it
// decides the path of the binary, the user it runs as, and the plugins it has.
type ImageKind string

const (
	// SchedulerPluginsImage is kubernetes-sigs/scheduler-plugins' kube-scheduler: every
	// in-tree plugin plus Trimaran and the other out-of-tree ones. Its binary is
	// /bin/kube-scheduler and it runs as user 65532 (build/scheduler/Dockerfile of
	// scheduler-plugins: distroless static:nonroot, USER 65532:65532).
	SchedulerPluginsImage ImageKind = "SchedulerPlugins"
	// KubeSchedulerImage is Kubernetes' own kube-scheduler image (registry.k8s.io/kube-scheduler
	// or a mirror of it): in-tree plugins only. Its binary is /usr/local/bin/kube-scheduler
	// (build/server-image/Dockerfile of kubernetes/kubernetes) and, built on go-runner's
	// distroless static base without a USER, it runs as root unless told otherwise.
	KubeSchedulerImage ImageKind = "KubeScheduler"
	// OtherImage is an image known to be neither: it is started as scheduler-plugins' is.
	OtherImage ImageKind = "Other"
)

// Paths of the kube-scheduler binary in the images, and the user the pod runs an image as
// when the image's own user is root: distroless' nonroot.
const (
	schedulerPluginsBinary = "/bin/kube-scheduler"
	kubeSchedulerBinary    = "/usr/local/bin/kube-scheduler"
	nonRootUser            = int64(65532)
)

// Image is the scheduler image and what the operator knows about it.
type Image struct {
	// Reference is the image reference the Deployment runs.
	Reference string
	// Kind is which kube-scheduler the image holds.
	Kind ImageKind
	// KubernetesMinor is the Kubernetes minor version the image is built for, as its tag
	// says (scheduler-plugins v0.N.x and kube-scheduler v1.N.x are built for 1.N); 0 when
	// the tag does not say.
	KubernetesMinor int
	// Source is status.imageSource: where the image comes from, how it is started, and
	// Skew when there is one.
	Source string
	// Skew says that the image is outside Kubernetes' version-skew policy for the cluster,
	// empty when it is within it or either version is unknown.
	Skew string
}

// Binary is the path of the image's kube-scheduler binary: scheduler-plugins' path for
// every image not known to be Kubernetes' own.
func (i Image) Binary() string {
	if i.Kind == KubeSchedulerImage {
		return kubeSchedulerBinary
	}
	return schedulerPluginsBinary
}

// SchedulerImage is the image of cr's scheduler. An explicit spec.schedulerImage wins;
// otherwise the scheduler-plugins release for the cluster's minor version, or the nearest
// known one, said as such. clusterMinor is the cluster's Kubernetes minor version, 0 when
// unknown.
func SchedulerImage(cr *v1.SecondaryScheduler, clusterMinor int) Image {
	var image Image
	if cr.Spec.SchedulerImage != "" {
		image = explicitImage(cr.Spec.SchedulerImage)
	} else {
		image = defaultImage(clusterMinor)
	}
	image.Skew = versionSkew(image.KubernetesMinor, clusterMinor)
	if image.Skew != "" {
		image.Source += ". " + image.Skew
	}
	return image
}

func defaultImage(clusterMinor int) Image {
	image := Image{Kind: SchedulerPluginsImage}
	if release, ok := schedulerPluginsReleases[clusterMinor]; ok {
		image.Reference, image.KubernetesMinor = schedulerPluginsRepository+":"+release, clusterMinor
		image.Source = fmt.Sprintf("default: the scheduler-plugins release for Kubernetes 1.%d", clusterMinor)
		return image
	}
	nearest := newestKnownMinor
	if clusterMinor > 0 && clusterMinor < oldestKnownMinor {
		nearest = oldestKnownMinor
	}
	image.Reference, image.KubernetesMinor = schedulerPluginsRepository+":"+schedulerPluginsReleases[nearest], nearest
	image.Source = fmt.Sprintf("default: no scheduler-plugins release is known for Kubernetes 1.%d, so the one for 1.%d; set spec.schedulerImage to choose",
		clusterMinor, nearest)
	return image
}

func explicitImage(ref string) Image {
	kind, minor := classifyImage(ref)
	image := Image{Reference: ref, Kind: kind, KubernetesMinor: minor}
	switch kind {
	case SchedulerPluginsImage:
		image.Source = "spec.schedulerImage: a scheduler-plugins image, started as " + schedulerPluginsBinary
	case KubeSchedulerImage:
		image.Source = fmt.Sprintf("spec.schedulerImage: Kubernetes' own kube-scheduler, which has the in-tree plugins only; "+
			"started as %s, as user %d since the image's own user is root", kubeSchedulerBinary, nonRootUser)
	default:
		image.Source = fmt.Sprintf("spec.schedulerImage: an image not known to be scheduler-plugins' or Kubernetes' kube-scheduler, "+
			"so its binary is assumed to be %s, as in scheduler-plugins' images (a repository named kube-scheduler is taken for "+
			"Kubernetes' own, whose binary is %s)", schedulerPluginsBinary, kubeSchedulerBinary)
	}
	return image
}

// releaseTag is the tag of a release: v0.N.x for scheduler-plugins, v1.N.x for
// Kubernetes, with anything after the patch version (-rc.0, -amd64) allowed.
var releaseTag = regexp.MustCompile(`^v([01])\.(\d{1,3})\.\d+(?:[-+._].*)?$`)

// classifyImage tells which kube-scheduler an image reference names, and the Kubernetes
// minor version its tag says it is built for (0 when it says none). Mirrors keep the last
// path element and the tag but not always the path before it, so: a repository whose last
// element is kube-scheduler holds scheduler-plugins' build when a path element before it
// is scheduler-plugins or its tag is a scheduler-plugins release (v0.N.x), and Kubernetes'
// own otherwise (its releases are v1.N.x).
func classifyImage(ref string) (ImageKind, int) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return OtherImage, 0 // not reached: spec.schedulerImage is validated before rendering
	}
	path := strings.Split(reference.Path(named), "/")
	if path[len(path)-1] != "kube-scheduler" {
		return OtherImage, 0
	}
	major, minor := -1, 0
	if tagged, ok := named.(reference.Tagged); ok {
		if match := releaseTag.FindStringSubmatch(tagged.Tag()); match != nil {
			major, _ = strconv.Atoi(match[1])
			minor, _ = strconv.Atoi(match[2])
		}
	}
	switch {
	case slices.Contains(path[:len(path)-1], "scheduler-plugins") || major == 0:
		if major != 0 {
			return SchedulerPluginsImage, 0 // a tag that is no scheduler-plugins release
		}
		return SchedulerPluginsImage, minor
	case major == 1 || named.Name() == upstreamSchedulerRepository:
		return KubeSchedulerImage, minor
	}
	// A digest, latest or a tag of one's own on a mirror says nothing: the image is run as
	// scheduler-plugins' (as before images were told apart), and status says so.
	return OtherImage, 0
}

// upstreamSchedulerRepository publishes Kubernetes' own kube-scheduler.
const upstreamSchedulerRepository = "registry.k8s.io/kube-scheduler"

// versionSkew says when an image built for Kubernetes 1.imageMinor is outside the
// version-skew policy for a cluster at 1.clusterMinor: kube-scheduler must not be newer
// than kube-apiserver and may be at most one minor version older
// (https://kubernetes.io/releases/version-skew-policy/). Empty when it is within, or a
// version is unknown.
func versionSkew(imageMinor, clusterMinor int) string {
	if imageMinor == 0 || clusterMinor == 0 {
		return ""
	}
	const unsupported = "Kubernetes' version-skew policy allows a kube-scheduler at most one minor version older than the API server and never newer, " +
		"so this one is unsupported, though it usually works"
	switch {
	case imageMinor > clusterMinor:
		return fmt.Sprintf("The image is built for Kubernetes 1.%d, newer than the cluster's 1.%d: %s; set spec.schedulerImage to one built for 1.%d or 1.%d",
			imageMinor, clusterMinor, unsupported, clusterMinor-1, clusterMinor)
	case imageMinor < clusterMinor-1:
		return fmt.Sprintf("The image is built for Kubernetes 1.%d, %d minor versions older than the cluster's 1.%d: %s; "+
			"set spec.schedulerImage to one built for 1.%d or 1.%d (registry.k8s.io/kube-scheduler:v1.%d.x has the in-tree plugins only)",
			imageMinor, clusterMinor-imageMinor, clusterMinor, unsupported, clusterMinor-1, clusterMinor, clusterMinor)
	}
	return ""
}
