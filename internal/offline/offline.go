// Package offline renders, without a cluster, every object the operator would create for
// a SecondaryScheduler, so that a GitOps reviewer can read and diff what a resource means
// before it is applied. It runs the operator's own stages on files instead of an API
// server: the resource is defaulted and validated with the CRD's schema and CEL rules as
// the API server would (internal/crdschema); its facts are gathered by internal/gather
// from the objects given (the ConfigMaps, labelled Secrets and PriorityClass it names);
// internal/desired renders and checks it as the controller does. What the API server
// would refuse is an InvalidError; what the operator would refuse is the refusal
// (internal/refusal) whose reason status would show.
//
// The kubectl plugin (cmd/kubectl-secondary_scheduler) runs it; the operator must not
// import it: internal/crdschema links the API server's libraries (test/depfence).
package offline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/version"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/bindata"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/crdschema"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/desired"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/promdiscovery"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/routing"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/tenancy"
)

// CRDAsset is the CRD of SecondarySchedulers in bindata: make manifests copies it there
// from config/crd/bases, so that the binary validates as the API server does.
const CRDAsset = "crd/secondaryschedulers.yaml"

// placeholderUID stands for the resource's UID, which the API server assigns, in the
// owner references of the objects rendered.
const placeholderUID = types.UID("00000000-0000-0000-0000-000000000000")

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1.AddToScheme(scheme))
}

// Document is one input file: a YAML or JSON stream of objects.
type Document struct {
	// Source names it in messages (a path, or "-" for standard input).
	Source string
	Data   []byte
}

// Input is what the offline renderer reads.
type Input struct {
	// Documents hold exactly one SecondaryScheduler, and the objects the operator would
	// read for it: the ConfigMaps and labelled Secrets it names, the PriorityClass of
	// spec.priorityClassName, nodes, a Prometheus' Service to discover.
	Documents []Document
	// KubernetesMinor is the cluster's Kubernetes minor version (37 for 1.37), which
	// chooses the default image.
	KubernetesMinor int
	// PrometheusURL is the Prometheus that discovery would find for a load-aware profile
	// without an address; empty to discover it among the objects given, as the operator
	// does in the cluster.
	PrometheusURL string
	// SchedulerNamespaces are the operator's --scheduler-namespaces; empty for any.
	SchedulerNamespaces []string
	// PrometheusNamespaces are the operator's --prometheus-namespaces, where discovery
	// looks among the objects given; empty for none. The operator's defaults (its own
	// namespace, and openshift-monitoring on OpenShift) depend on a cluster, which
	// rendering offline has not.
	PrometheusNamespaces []string
	// Namespace is the namespace of the resource and objects that name none.
	Namespace string
	// OperatorNamespace is the operator's namespace: its pods alone reach a descheduler's
	// metrics, and no descheduler evicts them.
	OperatorNamespace string
}

// Rendered is what the operator would create for a SecondaryScheduler.
type Rendered struct {
	// Scheduler is the resource as the API server would store it, defaulted.
	Scheduler *v1.SecondaryScheduler
	// Found is what gathering found; Result the scheduler rendered from it.
	Found  *gather.Facts
	Result *render.Result
	// RoutingTable is the routing table for spec.routing, as it would be with this
	// resource's route alone (the operator's one table carries every route); nil
	// without spec.routing, or when the route would not be carried.
	RoutingTable *unstructured.Unstructured
	// Notes are what the operator would say beside: a version skew, recording rules it
	// cannot install, a route it would not carry.
	Notes []string
}

// routingSupportedFrom is the first Kubernetes minor version that serves
// MutatingAdmissionPolicy v1, which routing needs (docs/routing.md).
const routingSupportedFrom = 36

// InvalidError is a resource the API server would refuse: each cause is a message of its
// schema or CEL rules, as kubectl would show it.
type InvalidError struct {
	Name   string
	Causes []string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("SecondaryScheduler %q is invalid: %s", e.Name, strings.Join(e.Causes, "; "))
}

// Render renders what the operator would create for the SecondaryScheduler of in.
func Render(ctx context.Context, in Input) (*Rendered, error) {
	objects, content, err := decodeAll(in)
	if err != nil {
		return nil, err
	}
	cr, err := admit(content, in.Namespace)
	if err != nil {
		return nil, err
	}
	policy := tenancy.Policy{Namespaces: in.SchedulerNamespaces}
	if len(in.SchedulerNamespaces) == 0 {
		policy.Namespaces = []string{cr.Namespace}
	}
	if !policy.Allows(cr.Namespace) {
		return nil, &refusal.Error{Reason: v1.ReasonNamespaceNotAllowed, Message: policy.Refusal(cr.Namespace)}
	}
	// The objects given, served as the API server would serve them: controller-runtime's
	// in-memory client, with the field selectors gathering uses (a labelled Secret is
	// read by name and label, so that no other Secret's data is ever received).
	byName := func(object client.Object) []string { return []string{object.GetName()} }
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(objects, cr)...).
		WithIndex(&v1.SecondaryScheduler{}, gather.SchedulerNameIndex, gather.IndexSchedulerName).
		WithIndex(&corev1.Secret{}, "metadata.name", byName).WithIndex(&corev1.ConfigMap{}, "metadata.name", byName).Build()
	config := gather.Config{
		Cache: reader, API: reader, Mapper: meta.NewDefaultRESTMapper(nil), Kinds: pluginKinds{},
		Version: fixedVersion(in.KubernetesMinor), Tenancy: policy, PrometheusNamespaces: in.PrometheusNamespaces,
		OperatorNamespace: in.OperatorNamespace,
	}
	if in.PrometheusURL != "" {
		config.Discover = func(context.Context, client.Reader, []string) (*promdiscovery.Endpoint, []string, error) {
			return &promdiscovery.Endpoint{URL: in.PrometheusURL, Source: "--prometheus-url"}, nil, nil
		}
	}
	found, _, err := gather.New(config).Gather(ctx, cr)
	if err != nil {
		return nil, err
	}
	result, err := desired.Scheduler(cr, found)
	if err != nil {
		return nil, err
	}
	rendered := &Rendered{Scheduler: cr, Found: found, Result: result}
	for _, note := range []string{result.Image.Skew, found.RecordingRules.Note} {
		if note != "" {
			rendered.Notes = append(rendered.Notes, note)
		}
	}
	if err := rendered.route(in.KubernetesMinor, policy); err != nil {
		return nil, err
	}
	return rendered, nil
}

// route renders the routing table of spec.routing, decided as the operator decides it
// once the scheduler serves its name and is Available, with this resource's route alone.
func (r *Rendered) route(kubernetesMinor int, policy tenancy.Policy) error {
	if r.Scheduler.Spec.Routing == nil {
		return nil
	}
	cr := r.Scheduler.DeepCopy()
	if slices.Contains(r.Found.SchedulerNames, cr.EffectiveSchedulerName()) {
		cr.Status.SchedulerName = cr.EffectiveSchedulerName()
	}
	meta.SetStatusCondition(&cr.Status.Conditions, metav1.Condition{Type: string(v1.ConditionAvailable), Status: metav1.ConditionTrue,
		Reason: string(v1.ReasonSchedulerReady), LastTransitionTime: cr.CreationTimestamp})
	verdicts := routing.Decide([]v1.SecondaryScheduler{*cr}, routing.Facts{
		Supported: kubernetesMinor >= routingSupportedFrom, Allowed: policy.Allows, Now: cr.CreationTimestamp.Time})
	verdict := verdicts[client.ObjectKeyFromObject(cr)]
	if verdict.Route == nil {
		r.Notes = append(r.Notes, fmt.Sprintf("spec.routing is not carried (Routing %s): %s", verdict.Reason, verdict.Message))
		return nil
	}
	table, err := render.RoutingTable([]routing.Route{*verdict.Route}, policy.Namespaces, nil)
	if err != nil {
		return err
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(table)
	if err != nil {
		return fmt.Errorf("convert the routing table: %w", err)
	}
	r.RoutingTable = &unstructured.Unstructured{Object: content}
	return nil
}

// decodeAll reads every object of in's documents: the SecondaryScheduler's content, and
// the others as typed objects in in.Namespace when they name none.
func decodeAll(in Input) ([]client.Object, map[string]any, error) {
	var objects []client.Object
	var scheduler map[string]any
	for _, document := range in.Documents {
		decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(document.Data), 4096)
		for index := 0; ; index++ {
			var raw json.RawMessage
			if err := decoder.Decode(&raw); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, nil, fmt.Errorf("%s, object %d: %w", document.Source, index+1, err)
			}
			// As the API server reads a request: whole numbers as int64, which CEL
			// rules on integer fields need (encoding/json would give float64).
			var content map[string]any
			if err := utiljson.Unmarshal(raw, &content); err != nil {
				return nil, nil, fmt.Errorf("%s, object %d: %w", document.Source, index+1, err)
			}
			if content == nil {
				continue
			}
			items := []map[string]any{content}
			if content["kind"] == "List" {
				items = listItems(content)
			}
			for _, item := range items {
				gvk := schema.FromAPIVersionAndKind(stringAt(item, "apiVersion"), stringAt(item, "kind"))
				if gvk == v1.GroupVersion.WithKind("SecondaryScheduler") {
					if scheduler != nil {
						return nil, nil, fmt.Errorf("%s: a second SecondaryScheduler; render takes one at a time", document.Source)
					}
					scheduler = item
					continue
				}
				object, err := typed(item, gvk, in.Namespace)
				if err != nil {
					return nil, nil, fmt.Errorf("%s, object %d: %w", document.Source, index+1, err)
				}
				objects = append(objects, object)
			}
		}
	}
	if scheduler == nil {
		return nil, nil, errors.New("no SecondaryScheduler (apiVersion " + v1.GroupVersion.String() + ", kind SecondaryScheduler) among the files given")
	}
	return objects, scheduler, nil
}

func listItems(list map[string]any) []map[string]any {
	raw, _ := list["items"].([]any)
	items := make([]map[string]any, 0, len(raw))
	for _, item := range raw {
		if object, ok := item.(map[string]any); ok {
			items = append(items, object)
		}
	}
	return items
}

func stringAt(object map[string]any, key string) string {
	value, _ := object[key].(string)
	return value
}

// specFields are a SecondaryScheduler spec's fields without its UnmarshalJSON, which
// checks quantities before it decodes, and so decodes leniently: the converter hands a
// type with its own UnmarshalJSON the JSON as it is, and checks no field name in it.
type specFields v1.SecondarySchedulerSpec

// strictSpec refuses a SecondaryScheduler whose spec holds a quantity out of bounds, or a
// field the API lacks, as the API server would: the first found by the quantity check
// before any quantity is parsed, the second by a strict conversion of the spec alone.
func strictSpec(cr *v1.SecondaryScheduler, content map[string]any) error {
	if err := cr.Spec.Undecodable(); err != nil {
		return fmt.Errorf("spec.%w", err)
	}
	spec, ok := content["spec"].(map[string]any)
	if !ok {
		return nil
	}
	var fields specFields
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(spec, &fields, true); err != nil {
		return errors.New(strings.Replace(err.Error(), `unknown field "`, `unknown field "spec.`, 1))
	}
	return nil
}

// clusterScoped are the kinds of cluster-scoped objects gathering reads.
var clusterScoped = []string{"Node", "PriorityClass", "Namespace"}

// typed is content as the object of kind gvk it is, strictly: a field the kind lacks is
// an error, as kubectl's default (strict) field validation makes it.
func typed(content map[string]any, gvk schema.GroupVersionKind, namespace string) (client.Object, error) {
	created, err := scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("%s is no kind the operator reads", gvk)
	}
	object, ok := created.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s is no kind the operator reads", gvk)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(content, object, true); err != nil {
		return nil, fmt.Errorf("%s: %w", gvk.Kind, err)
	}
	if object.GetName() == "" {
		return nil, fmt.Errorf("%s without metadata.name", gvk.Kind)
	}
	// The API server keeps stringData only as data.
	if secret, ok := object.(*corev1.Secret); ok && len(secret.StringData) > 0 {
		if secret.Data == nil {
			secret.Data = map[string][]byte{}
		}
		for key, value := range secret.StringData {
			secret.Data[key] = []byte(value)
		}
		secret.StringData = nil
	}
	if object.GetNamespace() == "" && !slices.Contains(clusterScoped, gvk.Kind) {
		object.SetNamespace(namespace)
	}
	object.GetObjectKind().SetGroupVersionKind(gvk)
	return object, nil
}

// admit is the SecondaryScheduler of content as the API server would store it: defaulted
// by the CRD's schema, and refused for any error of its schema or CEL rules, or for a
// field the API lacks.
func admit(content map[string]any, namespace string) (*v1.SecondaryScheduler, error) {
	validator, err := crdValidator()
	if err != nil {
		return nil, err
	}
	name := ""
	if metadata, ok := content["metadata"].(map[string]any); ok {
		name, _ = metadata["name"].(string)
	}
	if name == "" {
		return nil, &InvalidError{Causes: []string{"metadata.name: Required value: name or generateName is required"}}
	}
	validator.Default(content)
	if causes := validator.Errors(content); len(causes) > 0 {
		return nil, &InvalidError{Name: name, Causes: causes}
	}
	cr := &v1.SecondaryScheduler{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(content, cr, true); err != nil {
		return nil, &InvalidError{Name: name, Causes: []string{err.Error()}}
	}
	if err := strictSpec(cr, content); err != nil {
		return nil, &InvalidError{Name: name, Causes: []string{err.Error()}}
	}
	if cr.Namespace == "" {
		cr.Namespace = namespace
	}
	// What the API server sets on create.
	cr.UID = placeholderUID
	cr.Generation = 1
	cr.CreationTimestamp = metav1.NewTime(time.Unix(0, 0).UTC())
	cr.ResourceVersion = ""
	cr.Status = v1.SecondarySchedulerStatus{}
	return cr, nil
}

// crdValidator validates with the embedded CRD, built once: decoding and compiling its
// schema and CEL rules is most of a render's time.
var crdValidator = sync.OnceValues(func() (*crdschema.Validator, error) {
	data, err := bindata.Asset(CRDAsset)
	if err != nil {
		return nil, err
	}
	crd, err := crdschema.Decode(data)
	if err != nil {
		return nil, err
	}
	return crdschema.NewValidator(crd)
})

// missingObject is whether a refusal may only mean that an object the operator would
// read in the cluster was not among the files given.
func missingObject(reason v1.ConditionReason) bool {
	return strings.HasSuffix(string(reason), "NotFound")
}

// fixedVersion is a cluster of one Kubernetes minor version.
type fixedVersion int

func (v fixedVersion) ServerVersion() (*version.Info, error) {
	return &version.Info{Major: "1", Minor: strconv.Itoa(int(v))}, nil
}

// pluginKinds serves the kinds scheduler-plugins' plugins read, and the Workload API's
// PodGroup that Kubernetes' GangScheduling reads, and nothing else: rendering offline
// cannot know which CRDs and APIs a cluster serves, and renders a configuration as if they
// were (the operator refuses it, PluginCRDMissing or WorkloadAPIMissing, on a cluster
// without them).
type pluginKinds struct{}

func (pluginKinds) Serves(kind schema.GroupVersionKind) (bool, error) {
	return kind == desired.WorkloadPodGroup ||
		slices.ContainsFunc(schedconfig.PluginCRDs(), func(crd schedconfig.CustomResource) bool { return crd.GroupVersionKind == kind }), nil
}
