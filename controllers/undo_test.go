package controllers

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/drift"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// TestAnUndoneEditIsSaid: someone scales the scheduler's Deployment, then edits its image
// and a label; the operator writes each back and says so in a Warning Event on the
// SecondaryScheduler, naming who changed which field and the spec field to set instead.
// A change of the spec, which the operator itself rolls out, is no such edit.
func TestAnUndoneEditIsSaid(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("undo")
	s.createRunning(cr)
	deployment := s.deployment(cr)
	image := deployment.Spec.Template.Spec.Containers[0].Image

	// kubectl scale deployment/undo-scheduler --replicas=3
	scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: deployment.Name, Namespace: deployment.Namespace},
		Spec: autoscalingv1.ScaleSpec{Replicas: 3}}
	s.g.Expect(adminClient.SubResource("scale").Update(s.ctx, deployment, client.WithSubResourceBody(scale),
		client.FieldOwner("kubectl-scale"))).To(Succeed())
	s.g.Eventually(func() int32 { return ptr.Deref(s.deployment(cr).Spec.Replicas, 0) }).Should(Equal(int32(1)), "the replicas restored")
	scaled := s.expectUndoneEditEvent(cr, "spec.replicas")
	s.g.Expect(scaled.Note).To(And(HavePrefix("kubectl-scale changed Deployment "+s.namespace+"/"+deployment.Name+" spec.replicas from 1 to 3;"),
		ContainSubstring("set spec.topology")), "who, what, and what to set instead")
	s.g.Expect(scaled.Related).NotTo(BeNil())
	s.g.Expect(scaled.Related.Name).To(Equal(deployment.Name))

	// kubectl edit: another image, and a label of the operator's changed.
	s.g.Eventually(func() error {
		if err := adminClient.Get(s.ctx, client.ObjectKeyFromObject(deployment), deployment); err != nil {
			return err
		}
		deployment.Spec.Template.Spec.Containers[0].Image = "example.com/other:v1"
		deployment.Labels[render.LabelName] = "mine"
		return adminClient.Update(s.ctx, deployment, client.FieldOwner("kubectl-edit"))
	}).Should(Succeed())
	s.g.Eventually(func() []string {
		restored := s.deployment(cr)
		return []string{restored.Spec.Template.Spec.Containers[0].Image, restored.Labels[render.LabelName]}
	}).Should(Equal([]string{image, render.NameValue}), "the image and the label restored")
	edited := s.expectUndoneEditEvent(cr, "image")
	s.g.Expect(edited.Note).To(And(
		HavePrefix("kubectl-edit changed Deployment "),
		ContainSubstring(`metadata.labels["app.kubernetes.io/name"] from "secondary-scheduler" to "mine"`),
		ContainSubstring(`spec.template.spec.containers[name=kube-scheduler].image from "`+image+`" to "example.com/other:v1"`),
		ContainSubstring("set spec.schedulerImage of this SecondaryScheduler"),
		ContainSubstring(`metadata.labels["app.kubernetes.io/name"] no spec field sets: the operator owns it`),
	))

	// The operator's own change: a spec edit rolls out without an EditUndone Event.
	before := len(s.undoneEditEvents(cr))
	s.update(cr, func() {
		cr.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}}
	})
	s.g.Eventually(func() string {
		return s.deployment(cr).Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().String()
	}).Should(Equal("200m"))
	s.g.Consistently(func() int { return len(s.undoneEditEvents(cr)) }).Should(Equal(before), "no EditUndone Event for the operator's own change")
}

// undoneEditEvents are the EditUndone Events about cr.
func (s *scenario) undoneEditEvents(cr *v1.SecondaryScheduler) []eventsv1.Event {
	var found []eventsv1.Event
	for _, event := range s.eventsAbout(cr) {
		if event.Reason == string(v1.ReasonEditUndone) {
			found = append(found, event)
		}
	}
	return found
}

// expectUndoneEditEvent waits for the Warning EditUndone Event about cr whose note names
// field, and returns it.
func (s *scenario) expectUndoneEditEvent(cr *v1.SecondaryScheduler, field string) eventsv1.Event {
	s.t.Helper()
	var found eventsv1.Event
	s.g.Eventually(func() bool {
		for _, event := range s.undoneEditEvents(cr) {
			if strings.Contains(event.Note, field) {
				found = event
				return true
			}
		}
		return false
	}).Should(BeTrue(), "an EditUndone Event naming %s", field)
	s.g.Expect(found.Type).To(Equal(corev1.EventTypeWarning))
	return found
}

// TestUndoneEditMessage: the message names the fields, their values (never a Secret's),
// who changed them, and what to do instead; it stays within an Event's bounds.
func TestUndoneEditMessage(t *testing.T) {
	g := NewWithT(t)
	cr := binPacking("demo")
	cr.Namespace = "ns"
	object := func(kind, name string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetKind(kind)
		o.SetNamespace("ns")
		o.SetName(name)
		return o
	}
	path := func(keys ...string) drift.Path {
		p := make(drift.Path, 0, len(keys))
		for _, key := range keys {
			p = append(p, drift.Step{Key: key, Index: -1})
		}
		return p
	}
	replicas := drift.Change{Path: path("spec", "replicas"), Live: int64(3), Desired: int64(1), Editor: "kubectl-scale"}
	label := drift.Change{Path: path("metadata", "labels", "app.kubernetes.io/name"), Live: "mine", Desired: "secondary-scheduler"}
	tests := []struct {
		name  string
		edits *undoneEdits
		want  string
	}{
		{"scaled", &undoneEdits{object: object("Deployment", "demo-scheduler"), changes: []drift.Change{replicas}},
			"kubectl-scale changed Deployment ns/demo-scheduler spec.replicas from 1 to 3; the operator restored it. " +
				"To change spec.replicas, set spec.topology (mode HighlyAvailable, highlyAvailableTopology.maxReplicas) of this SecondaryScheduler."},
		{"a label, by someone unknown", &undoneEdits{object: object("Deployment", "demo-scheduler"), changes: []drift.Change{label}},
			`someone changed Deployment ns/demo-scheduler metadata.labels["app.kubernetes.io/name"] from "secondary-scheduler" to "mine"; ` +
				`the operator restored it. Metadata.labels["app.kubernetes.io/name"] no spec field sets: the operator owns it, ` +
				"and keeps it so while spec.managementState is Managed (Unmanaged leaves the objects to you)."},
		{"two editors and more fields", &undoneEdits{object: object("Deployment", "demo-scheduler"),
			changes: []drift.Change{replicas, {Path: label.Path, Live: nil, Desired: "x", Editor: "kubectl-label"}}, more: 2},
			`someone changed Deployment ns/demo-scheduler spec.replicas from 1 to 3 (by kubectl-scale), metadata.labels["app.kubernetes.io/name"] ` +
				`from "x" to (none) (by kubectl-label), 2 more fields; the operator restored them. To change spec.replicas, set spec.topology`},
		{"a Secret's values are never told", &undoneEdits{object: object("Secret", "demo-scheduler-config"),
			changes: []drift.Change{{Path: path("data", "config.yaml"), Live: "dG9rZW4=", Desired: "c2VjcmV0", Editor: "kubectl-edit"}}},
			`kubectl-edit changed Secret ns/demo-scheduler-config data["config.yaml"]; the operator restored it. To change data["config.yaml"], ` +
				"set the spec it is rendered from (spec.profile, or the spec.schedulerConfig ConfigMap) of this SecondaryScheduler."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := undoneEditMessage(cr, tt.edits)
			if strings.HasSuffix(tt.want, ".") {
				g.Expect(got).To(Equal(tt.want))
			} else {
				g.Expect(got).To(HavePrefix(tt.want))
			}
			g.Expect(got).NotTo(Or(ContainSubstring("dG9rZW4="), ContainSubstring("c2VjcmV0")))
		})
	}
	long := strings.Repeat("x", 2000)
	many := &undoneEdits{object: object("Deployment", long), changes: []drift.Change{replicas, label, replicas}}
	g.Expect(len(undoneEditMessage(cr, many))).To(BeNumerically("<=", maxEventNote))
}

// TestSpecFieldsSetWhatTheySay changes each spec field that specFields names and renders
// the scheduler again: the fields of its objects that change are said to be set by that
// spec field (or by none, or by the configuration, which is rendered from much of the
// spec), never by another; and every entry of specFields is exercised.
func TestSpecFieldsSetWhatTheySay(t *testing.T) {
	base := func() (*v1.SecondaryScheduler, render.Facts) {
		cr := binPacking("demo")
		cr.Namespace, cr.UID = "ns", "uid"
		return cr, render.Facts{KubernetesMinor: 37, PlacementNodes: 5}
	}
	tests := []struct {
		specField string
		change    func(cr *v1.SecondaryScheduler, facts *render.Facts)
	}{
		{"spec.schedulerImage", func(cr *v1.SecondaryScheduler, _ *render.Facts) {
			cr.Spec.SchedulerImage = "registry.k8s.io/kube-scheduler:v1.37.0" // another binary's path, too
		}},
		{"spec.logLevel", func(cr *v1.SecondaryScheduler, _ *render.Facts) { cr.Spec.LogLevel = v1.Debug }},
		{"spec.resources", func(cr *v1.SecondaryScheduler, _ *render.Facts) {
			cr.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
		}},
		{"spec.nodeSelector", func(cr *v1.SecondaryScheduler, _ *render.Facts) {
			cr.Spec.NodeSelector = map[string]string{"infra": "true"}
		}},
		{"spec.tolerations", func(cr *v1.SecondaryScheduler, _ *render.Facts) {
			cr.Spec.Tolerations = []corev1.Toleration{{Key: "infra", Operator: corev1.TolerationOpExists}}
		}},
		{"spec.affinity", func(cr *v1.SecondaryScheduler, _ *render.Facts) {
			cr.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}
		}},
		{"spec.priorityClassName", func(cr *v1.SecondaryScheduler, facts *render.Facts) {
			cr.Spec.PriorityClassName, facts.PriorityClassName = "high", "high"
		}},
		{"spec.topology", func(cr *v1.SecondaryScheduler, _ *render.Facts) {
			cr.Spec.Topology = &v1.Topology{Mode: v1.HighlyAvailable}
		}},
		{"spec.extenders[].container", func(cr *v1.SecondaryScheduler, _ *render.Facts) {
			cr.Spec.Extenders = []v1.Extender{{Name: "local", Container: &v1.ExtenderContainer{Image: "registry.example.com/local-extender:v2", Port: 8888},
				PrioritizeVerb: "prioritize", Weight: 1}}
		}},
		{"the configuration", func(cr *v1.SecondaryScheduler, _ *render.Facts) {
			cr.Spec.NodePool = &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "packed"}}
		}},
	}
	rendered := func(cr *v1.SecondaryScheduler, facts render.Facts) map[string]*unstructured.Unstructured {
		t.Helper()
		result, err := render.Render(cr, facts)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*unstructured.Unstructured{}
		for _, object := range result.Objects {
			out[object.GetKind()+"/"+object.GetName()] = object
		}
		return out
	}
	configField := specFields[len(specFields)-1].specField
	exercised := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.specField, func(t *testing.T) {
			g := NewWithT(t)
			cr, facts := base()
			before := rendered(cr, facts)
			tt.change(cr, &facts)
			found := false
			for key, object := range rendered(cr, facts) {
				if before[key] == nil {
					continue // a new object is created, not edited
				}
				changes, _ := drift.Changes(before[key].Object, object.Object, 100)
				for _, change := range changes {
					for i, field := range specFields {
						if field.kind == object.GetKind() && strings.HasPrefix(change.Path.String(), field.prefix) {
							exercised[specFields[i].prefix+specFields[i].kind] = true
						}
					}
					specField := specFieldOf(cr, object, change.Path.String())
					if specField == configField || specField == "" {
						continue
					}
					g.Expect(strings.Fields(specField)[0]).To(Equal(tt.specField), "%s %s", key, change.Path)
					found = true
				}
			}
			g.Expect(found || tt.specField == "the configuration").To(BeTrue(), "no field of the objects is said to be set by %s", tt.specField)
		})
	}
	for _, field := range specFields {
		if field.kind != secretKind.name && !exercised[field.prefix+field.kind] {
			t.Errorf("no change of the spec changes %s %s", field.kind, field.prefix)
		}
	}
	// The Deployment's own fields that no spec field sets.
	cr, _ := base()
	g := NewWithT(t)
	deployment := &unstructured.Unstructured{}
	deployment.SetKind("Deployment")
	for _, owned := range []string{`metadata.labels["app.kubernetes.io/name"]`, "spec.template.spec.securityContext.runAsNonRoot",
		"spec.template.spec.containers[name=kube-scheduler].command[1]"} {
		g.Expect(specFieldOf(cr, deployment, owned)).To(BeEmpty(), owned)
	}
}
