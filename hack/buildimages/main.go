// Command buildimages writes the images a real node of the local cluster runs, built from
// binaries on this machine (test/images), to one archive for `ctr -n k8s.io images
// import`:
//
//	go run ./hack/buildimages -o bin/images.tar \
//	  -operator ghcr.io/secondary-scheduler/secondary-scheduler-operator:v0.1.0 -manager bin/manager -plugin bin/kubectl-secondary_scheduler \
//	  -scheduler registry.k8s.io/kube-scheduler:v1.37.0=KubeScheduler:bin/k8s/v1.37.0/kube-scheduler \
//	  -pause registry.k8s.io/pause:3.10=bin/pause \
//	  -scheduler-plugins bin/scheduler-plugins/kube-scheduler -scheduler-plugins-controller bin/scheduler-plugins/controller \
//	  -descheduler bin/k8s/v1.37.0/descheduler
//
// -scheduler may be given more than once; its kind is render.ImageKind's
// (SchedulerPlugins or KubeScheduler), which decides where the binary goes and the user.
// -scheduler-plugins builds, from one binary, the image of every scheduler-plugins release
// the operator knows (render.SchedulerPluginsReleaseImages): the one it runs by default,
// and those a page or a user may name, so that they start on a node that can pull nothing;
// -scheduler-plugins-controller the controller image of each of those releases, which the
// operator runs while a scheduler enables gangs or quotas; -descheduler the descheduler image
// the operator runs for spec.descheduling (render.DefaultDeschedulerImage).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/images"
)

// schedulerFlags are the -scheduler flags, REFERENCE=KIND:BINARY each.
type schedulerFlags []images.Spec

func (s *schedulerFlags) String() string { return fmt.Sprint(len(*s)) }

func (s *schedulerFlags) Set(value string) error {
	reference, rest, ok := strings.Cut(value, "=")
	kind, binary, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || reference == "" || binary == "" {
		return fmt.Errorf("%q is not REFERENCE=KIND:BINARY", value)
	}
	switch render.ImageKind(kind) {
	case render.SchedulerPluginsImage, render.KubeSchedulerImage:
	default:
		return fmt.Errorf("kind %q is neither %s nor %s", kind, render.SchedulerPluginsImage, render.KubeSchedulerImage)
	}
	*s = append(*s, images.Scheduler(reference, render.ImageKind(kind), binary))
	return nil
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "buildimages:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	flags := flag.NewFlagSet("buildimages", flag.ContinueOnError)
	out := flags.String("o", "", "the archive to write")
	operator := flags.String("operator", "", "the operator image's reference; with -manager and -plugin")
	manager := flags.String("manager", "", "the operator binary")
	plugin := flags.String("plugin", "", "the kubectl plugin binary")
	pause := flags.String("pause", "", "the pause image, REFERENCE=BINARY")
	var schedulers schedulerFlags
	flags.Var(&schedulers, "scheduler", "a scheduler image, REFERENCE=KIND:BINARY (KIND SchedulerPlugins or KubeScheduler); repeatable")
	schedulerPlugins := flags.String("scheduler-plugins", "",
		"the binary of every scheduler-plugins release image the operator knows (scheduler-plugins' kube-scheduler; Kubernetes' runs every profile but the load-aware ones)")
	pluginController := flags.String("scheduler-plugins-controller", "",
		"the binary of the controller image of every scheduler-plugins release the operator knows (scheduler-plugins' cmd/controller), which the operator runs for gangs and quotas")
	descheduler := flags.String("descheduler", "",
		"the binary of the descheduler image the operator runs for spec.descheduling (sigs.k8s.io/descheduler, make descheduler)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("-o is required")
	}
	specs := []images.Spec(schedulers)
	if *schedulerPlugins != "" {
		for _, reference := range render.SchedulerPluginsReleaseImages() {
			specs = append(specs, images.Scheduler(reference, render.SchedulerPluginsImage, *schedulerPlugins))
		}
	}
	if *pluginController != "" {
		for _, reference := range render.PluginControllerReleaseImages() {
			specs = append(specs, images.PluginController(reference, *pluginController))
		}
	}
	if *descheduler != "" {
		specs = append(specs, images.Descheduler(render.DefaultDeschedulerImage, *descheduler))
	}
	if *operator != "" {
		if *manager == "" || *plugin == "" {
			return errors.New("-operator needs -manager and -plugin")
		}
		specs = append(specs, images.Operator(*operator, *manager, *plugin))
	}
	if *pause != "" {
		reference, binary, ok := strings.Cut(*pause, "=")
		if !ok {
			return fmt.Errorf("-pause %q is not REFERENCE=BINARY", *pause)
		}
		specs = append(specs, images.Pause(reference, binary))
	}
	if len(specs) == 0 {
		return errors.New("no image to build: give -operator, -scheduler, -scheduler-plugins or -pause")
	}
	return images.Write(*out, specs...)
}
