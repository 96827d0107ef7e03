package admission_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/admission"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/manifests"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reach"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/installer"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/olminstall"
)

const tenantNamespace = "team-a"

// operatorNamespace holds the policy's parameters.
const operatorNamespace = "secondary-scheduler-operator"

// root is the repository's, where config/admission ships the policy.
const root = "../.."

// The users of the tests, each bound in tenantNamespace as its name says.
const (
	// schedulerAdmin holds the shipped admin role, and may read ConfigMap readable-config
	// and Secret readable-token only.
	schedulerAdmin = "scheduler-admin"
	// olmAdmin and olmEditor hold the roles OLM v0 generates for the CRD, which aggregate
	// into the built-in admin and edit roles: what a namespace admin or editor has.
	olmAdmin  = "olm-admin"
	olmEditor = "olm-editor"
)

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// TestAuthorityAtAdmission puts the policies in place on a real kube-apiserver and sends
// real requests as users holding the roles each install path gives: the OLM-generated
// roles of a namespace admin or editor, the shipped admin role, a cluster admin.
func TestAuthorityAtAdmission(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS is not set: no kube-apiserver to test against (make test-integration sets it)")
	}
	ctx := t.Context()
	environment := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	adminConfig, err := environment.Start()
	if err != nil {
		t.Fatalf("start kube-apiserver: %v", err)
	}
	t.Cleanup(func() {
		if err := environment.Stop(); err != nil {
			t.Errorf("stop kube-apiserver: %v", err)
		}
	})
	admin, err := client.New(adminConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(ctx, t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNamespace}})
	grantRoles(ctx, t, admin)
	users := map[string]client.Client{}
	for _, name := range []string{schedulerAdmin, olmAdmin, olmEditor} {
		user, err := environment.AddUser(envtest.User{Name: name}, adminConfig)
		if err != nil {
			t.Fatal(err)
		}
		users[name] = clientFor(t, user.Config())
	}

	mustCreate(ctx, t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}})
	policies := installAsTheInstallerDoes(ctx, t, admin)
	// The admission plugin loads a new policy within a second or so: wait until an editor
	// is refused, with dry runs that create nothing meanwhile.
	waitEnforced(ctx, t, users[olmEditor])

	mustCreate(ctx, t, admin, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: "readable-config"}})
	existing := binPacking("existing", nil)
	existing.Finalizers = []string{cleanupFinalizer}
	mustCreate(ctx, t, admin, existing)

	tests := []struct {
		name string
		user string
		// request sends one request as the user.
		request func(context.Context, client.Client) error
		// wantRefusal is a substring of the refusal, empty when the request must pass.
		wantRefusal string
	}{
		{"a namespace editor (OLM's edit role) cannot create", olmEditor, create(binPacking("by-editor", nil)), "NotAllowedToRunSchedulers"},
		{"a namespace admin (OLM's admin role) cannot create", olmAdmin, create(binPacking("by-admin", nil)), "NotAllowedToRunSchedulers"},
		{"the shipped admin role creates", schedulerAdmin, create(binPacking("by-scheduler-admin", nil)), ""},
		{"a namespace admin cannot change the spec", olmAdmin, changeSpec(existing.Name), "NotAllowedToRunSchedulers"},
		{"a namespace editor may label one: metadata is not checked", olmEditor, label(existing.Name), ""},
		{"a namespace editor cannot strip the operator's finalizer", olmEditor, stripFinalizer(existing.Name), "NotAllowedToRunSchedulers"},
		{"a namespace admin cannot strip the operator's finalizer", olmAdmin, stripFinalizer(existing.Name), "NotAllowedToRunSchedulers"},
		{"the shipped admin role changes the spec", schedulerAdmin, changeSpec(existing.Name), ""},
		{
			"no one names a Secret they may not read", schedulerAdmin,
			create(binPacking("foreign-token", func(cr *v1.SecondaryScheduler) { tokenSecret(cr, "operator-token") })),
			"ReferenceNotReadable: scheduler-admin may not get Secret team-a/operator-token, named by spec.profile.metrics.tokenSecretRef.name",
		},
		{
			"a Secret the author may read can be named", schedulerAdmin,
			create(binPacking("own-token", func(cr *v1.SecondaryScheduler) { tokenSecret(cr, "readable-token") })), "",
		},
		{
			"no one names a ConfigMap they may not read", schedulerAdmin,
			create(custom("foreign-config", "other-config")), "may not get ConfigMap team-a/other-config, named by spec.schedulerConfig",
		},
		{"a ConfigMap the author may read can be named", schedulerAdmin, create(custom("own-config", "readable-config")), ""},
		{
			"no one names a CA bundle they may not read", schedulerAdmin,
			create(binPacking("foreign-ca", func(cr *v1.SecondaryScheduler) {
				targetLoadPacking(cr)
				cr.Spec.Profile.Metrics.CABundle = &v1.ConfigMapKeyReference{Name: "other-ca", Key: "ca.crt"}
			})), "ReferenceNotReadable",
		},
		{"any image while no admin lists images", schedulerAdmin, create(withImage("any-image", "example.com/anything:v1")), ""},
		{"the shipped admin role may remove the finalizer", schedulerAdmin, stripFinalizer(existing.Name), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectOutcome(t, tt.request(ctx, users[tt.user]), tt.wantRefusal)
		})
	}

	t.Run("image policy", func(t *testing.T) {
		withImages, err := admission.Desired(operatorNamespace, []string{"registry.k8s.io/scheduler-plugins/kube-scheduler", "example.com/team/",
			"example.com/pinned@sha256:" + strings.Repeat("a", 64)})
		if err != nil {
			t.Fatal(err)
		}
		if err := withImages.Ensure(ctx, admin, admin); err != nil {
			t.Fatal(err)
		}
		allowed := withImage("allowed-repository", "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.35.7")
		// The admission plugin loads the changed policy within a second or so.
		waitFor(ctx, t, "the image list to apply", func() bool {
			err := users[schedulerAdmin].Create(ctx, withImage("probe", "example.com/elsewhere:v1"), client.DryRunAll)
			return err != nil && strings.Contains(err.Error(), "ImageNotAllowed")
		})
		for _, image := range []struct {
			name, image string
			allowed     bool
		}{
			{"a tag of a listed repository", "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.35.7", true},
			{"a digest of a listed repository", "registry.k8s.io/scheduler-plugins/kube-scheduler@sha256:" + strings.Repeat("b", 64), true},
			{"a repository that only starts like a listed one", "registry.k8s.io/scheduler-plugins/kube-scheduler-evil:v1", false},
			{"under a listed prefix", "example.com/team/scheduler:v2", true},
			{"a pinned digest", "example.com/pinned@sha256:" + strings.Repeat("a", 64), true},
			{"another digest of a pinned image", "example.com/pinned@sha256:" + strings.Repeat("c", 64), false},
			{"another registry", "example.com/elsewhere:v1", false},
		} {
			t.Run(image.name, func(t *testing.T) {
				want := "ImageNotAllowed"
				if image.allowed {
					want = ""
				}
				err := users[schedulerAdmin].Create(ctx, withImage("image-check", image.image), client.DryRunAll)
				expectOutcome(t, err, want)
				if err != nil && !apierrors.IsInvalid(err) {
					t.Errorf("an image refusal is Invalid (422), apart from the 403 of authority: %v", err)
				}
			})
		}
		expectOutcome(t, users[schedulerAdmin].Create(ctx, allowed), "")
		expectOutcome(t, users[schedulerAdmin].Create(ctx, binPacking("default-image", nil)), "")

		expectEverySinkChecked(ctx, t, users[schedulerAdmin])
	})

	// expectSeenAndRestored: Check reports what was changed; the installer's apply (of an
	// installed object) or Ensure (of the parameters) undoes it, and Check passes again.
	expectSeenAndRestored := func(t *testing.T, changed string) {
		t.Helper()
		var notInPlace *admission.NotInPlaceError
		if _, err := policies.Check(ctx, admin); !errors.As(err, &notInPlace) {
			t.Fatalf("Check of %s = %v, want a NotInPlaceError", changed, err)
		}
		if notInPlace.Installed {
			if err := policies.Ensure(ctx, admin, admin); err != nil {
				t.Fatal(err)
			}
			if _, err := policies.Check(ctx, admin); !isNotInPlace(err) {
				t.Fatalf("Ensure restored the installer's %s: Check = %v", changed, err)
			}
			if err := installer.ApplyAdmissionPolicies(ctx, admin, root, operatorNamespace); err != nil {
				t.Fatal(err)
			}
		} else if err := policies.Ensure(ctx, admin, admin); err != nil {
			t.Fatal(err)
		}
		if _, err := policies.Check(ctx, admin); err != nil {
			t.Fatalf("after restoring %s, Check = %v, want nil", changed, err)
		}
	}

	t.Run("a narrowed binding is seen and restored", func(t *testing.T) {
		if err := policies.Ensure(ctx, admin, admin); err != nil { // the image policy's test left its list
			t.Fatal(err)
		}
		before, err := policies.Check(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		// Managed fields record times in seconds: let the next second begin.
		time.Sleep(time.Until(before.Since.Add(time.Second)))
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if err := admin.Get(ctx, client.ObjectKey{Name: render.AuthorityPolicyName}, binding); err != nil {
			t.Fatal(err)
		}
		binding.Spec.MatchResources = &admissionregistrationv1.MatchResources{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"checked": "true"}},
		}
		if err := admin.Update(ctx, binding); err != nil {
			t.Fatal(err)
		}
		expectSeenAndRestored(t, "a narrowed binding")
		// A resource created while the binding was narrowed was not provably checked:
		// Since moves past it, though no policy was created anew.
		after, err := policies.Check(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		if !before.Since.Before(&after.Since) {
			t.Errorf("after an edit and its restoration, Since = %v, want after %v", after.Since, before.Since)
		}
	})

	expectParametersGuarded(ctx, t, admin, users[schedulerAdmin], policies, expectSeenAndRestored)

	t.Run("a removed label is restored", func(t *testing.T) {
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		if err := admin.Get(ctx, client.ObjectKey{Name: render.AuthorityPolicyName}, policy); err != nil {
			t.Fatal(err)
		}
		policy.Labels = nil
		if err := admin.Update(ctx, policy); err != nil {
			t.Fatal(err)
		}
		expectSeenAndRestored(t, "an unlabelled policy")
	})
}

// installAsTheInstallerDoes puts the authority policy in place as an installation does:
// the operator's Ensure writes the parameters and nothing else, and the installer's apply
// the policy and binding, after which Check passes. It returns the operator's rendering.
func installAsTheInstallerDoes(ctx context.Context, t *testing.T, admin client.Client) *admission.Policies {
	t.Helper()
	policies, err := admission.Desired(operatorNamespace, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := policies.Check(ctx, admin); !isNotInPlace(err) {
		t.Fatalf("before anything is installed, Check = %v, want a NotInPlaceError", err)
	}
	// The installer ships the policy and binding; the operator writes the parameters,
	// and only those: Ensure alone puts nothing else in place.
	if err := policies.Ensure(ctx, admin, admin); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	var notInPlace *admission.NotInPlaceError
	if _, err := policies.Check(ctx, admin); !errors.As(err, &notInPlace) || !notInPlace.Installed {
		t.Fatalf("before the installer's policy is applied, Check = %v, want a NotInPlaceError of an installed object", err)
	}
	for _, kind := range []client.Object{&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}} {
		if err := admin.Get(ctx, client.ObjectKey{Name: render.AuthorityPolicyName}, kind); !apierrors.IsNotFound(err) {
			t.Fatalf("Ensure wrote %T: %v", kind, err)
		}
	}
	if err := installer.ApplyAdmissionPolicies(ctx, admin, root, operatorNamespace); err != nil {
		t.Fatal(err)
	}
	// The API server defaults what the assets leave out: they must say it all, or the
	// operator would see what ships differ from what it renders.
	if _, err := policies.Check(ctx, admin); err != nil {
		t.Fatalf("after the installer's apply, Check = %v, want nil", err)
	}
	return policies
}

// expectParametersGuarded: parameters widened by someone else are seen and restored, and
// Check's Since moves past the change; without parameters, the binding denies.
func expectParametersGuarded(ctx context.Context, t *testing.T, admin, author client.Client, policies *admission.Policies,
	expectSeenAndRestored func(*testing.T, string)) {
	t.Helper()
	t.Run("widened parameters are seen and restored", func(t *testing.T) {
		before, err := policies.Check(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(before.Since.Add(time.Second)))
		parameters := &corev1.ConfigMap{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: render.AuthorityPolicyName}, parameters); err != nil {
			t.Fatal(err)
		}
		parameters.Data = map[string]string{render.AllowedImagesKey: "evil.example.com/"}
		if err := admin.Update(ctx, parameters); err != nil {
			t.Fatal(err)
		}
		expectSeenAndRestored(t, "widened parameters")
		after, err := policies.Check(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		if !before.Since.Before(&after.Since) {
			t.Errorf("after parameters were changed and restored, Since = %v, want after %v", after.Since, before.Since)
		}
	})

	t.Run("without parameters, the binding denies", func(t *testing.T) {
		parameters := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: render.AuthorityPolicyName}}
		if err := admin.Delete(ctx, parameters); err != nil {
			t.Fatal(err)
		}
		waitFor(ctx, t, "the missing parameters to deny", func() bool {
			return author.Create(ctx, binPacking("without-parameters", nil), client.DryRunAll) != nil
		})
		expectSeenAndRestored(t, "deleted parameters")
		waitFor(ctx, t, "the parameters to admit again", func() bool {
			return author.Create(ctx, binPacking("with-parameters", nil), client.DryRunAll) == nil
		})
	})

}

// grantRoles binds the tests' users in tenantNamespace: the shipped admin role, and the
// roles OLM generates from the bundle, as OLM v0 creates them.
func grantRoles(ctx context.Context, t *testing.T, admin client.Client) {
	t.Helper()
	shipped := &rbacv1.ClusterRole{}
	documents, err := manifests.Documents(filepath.Join("..", "..", "config", "rbac", "secondaryscheduler_admin_role.yaml"))
	if err != nil || len(documents) != 1 {
		t.Fatalf("read the shipped admin role: %v", err)
	}
	if err := yaml.UnmarshalStrict(documents[0], shipped); err != nil {
		t.Fatal(err)
	}
	mustCreate(ctx, t, admin, shipped)
	bind(ctx, t, admin, schedulerAdmin, shipped.Name)

	bundle, err := olminstall.Read(filepath.Join("..", "..", "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	generated, err := bundle.ProvidedAPIRoles()
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range generated {
		mustCreate(ctx, t, admin, role.ClusterRole)
		// Aggregation (kube-controller-manager's, absent here) would give a namespace
		// admin the admin and view roles, an editor the edit and view roles.
		switch role.Suffix {
		case olminstall.ProvidedAPIAdmin:
			bind(ctx, t, admin, olmAdmin, role.ClusterRole.Name)
		case olminstall.ProvidedAPIEdit:
			bind(ctx, t, admin, olmEditor, role.ClusterRole.Name)
		case olminstall.ProvidedAPIView:
			bind(ctx, t, admin, olmAdmin, role.ClusterRole.Name)
			bind(ctx, t, admin, olmEditor, role.ClusterRole.Name)
		}
	}
	// What the scheduler admin may read: one ConfigMap, one Secret, by name.
	reader := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: "reads-its-own"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"readable-config"}, Verbs: []string{"get"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"readable-token"}, Verbs: []string{"get"}},
		},
	}
	mustCreate(ctx, t, admin, reader)
	mustCreate(ctx, t, admin, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: "reads-its-own"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: reader.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: schedulerAdmin}},
	})
}

func bind(ctx context.Context, t *testing.T, admin client.Client, user, clusterRole string) {
	t.Helper()
	mustCreate(ctx, t, admin, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: user + "-" + clusterRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	})
}

func waitEnforced(ctx context.Context, t *testing.T, editor client.Client) {
	t.Helper()
	waitFor(ctx, t, "the authority policy to be enforced", func() bool {
		err := editor.Create(ctx, binPacking("probe", nil), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "NotAllowedToRunSchedulers")
	})
}

func waitFor(ctx context.Context, t *testing.T, what string, done func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return done(), nil }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func expectOutcome(t *testing.T, err error, wantRefusal string) {
	t.Helper()
	switch {
	case wantRefusal == "" && err != nil:
		t.Errorf("refused: %v", err)
	case wantRefusal != "" && err == nil:
		t.Errorf("allowed, want a refusal with %q", wantRefusal)
	case wantRefusal != "" && !strings.Contains(err.Error(), wantRefusal):
		t.Errorf("refused with %v, want %q", err, wantRefusal)
	}
}

func isNotInPlace(err error) bool {
	var notInPlace *admission.NotInPlaceError
	return errors.As(err, &notInPlace)
}

func create(cr *v1.SecondaryScheduler) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error { return c.Create(ctx, cr) }
}

func changeSpec(name string) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		cr := &v1.SecondaryScheduler{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: tenantNamespace, Name: name}, cr); err != nil {
			return err
		}
		// Always a change: an update that leaves the spec as it is is not checked.
		if cr.Spec.LogLevel == v1.Debug {
			cr.Spec.LogLevel = v1.Trace
		} else {
			cr.Spec.LogLevel = v1.Debug
		}
		return c.Update(ctx, cr)
	}
}

func label(name string) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		cr := &v1.SecondaryScheduler{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: tenantNamespace, Name: name}, cr); err != nil {
			return err
		}
		cr.Labels = map[string]string{"team": "a"}
		return c.Update(ctx, cr)
	}
}

// cleanupFinalizer is the operator's finalizer (controllers.Finalizer), which only those
// who may run schedulers may remove.
const cleanupFinalizer = "operator.secondary-scheduler.io/cleanup"

// stripFinalizer patches the finalizers away, as kubectl patch --type=merge -p
// '{"metadata":{"finalizers":null}}' does.
func stripFinalizer(name string) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: name}}
		return c.Patch(ctx, cr, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	}
}

func binPacking(name string, mutate func(*v1.SecondaryScheduler)) *v1.SecondaryScheduler {
	cr := &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: name},
		Spec:       v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.BinPackingProfile}},
	}
	if mutate != nil {
		mutate(cr)
	}
	return cr
}

func targetLoadPacking(cr *v1.SecondaryScheduler) {
	cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile, Metrics: &v1.LoadMetrics{Address: "https://prometheus.example:9091"}}
}

func tokenSecret(cr *v1.SecondaryScheduler, name string) {
	targetLoadPacking(cr)
	cr.Spec.Profile.Metrics.TokenSecretRef = &corev1.LocalObjectReference{Name: name}
}

func custom(name, configMap string) *v1.SecondaryScheduler {
	return binPacking(name, func(cr *v1.SecondaryScheduler) {
		cr.Spec.Profile = &v1.Profile{Type: v1.CustomProfile}
		cr.Spec.SchedulerConfig = configMap
	})
}

func withImage(name, image string) *v1.SecondaryScheduler {
	return binPacking(name, func(cr *v1.SecondaryScheduler) { cr.Spec.SchedulerImage = image })
}

// expectEverySinkChecked: every place of the spec that reach finds, and so every image
// and reference a scheduler's pod can hold (TestEveryImageAndReferenceOfThePodIsASink),
// is refused with a value the author may not use and accepted with one they may. An
// image list allowing example.com/team/ must be in force.
func expectEverySinkChecked(ctx context.Context, t *testing.T, author client.Client) {
	t.Helper()
	sinks, err := reach.Sinks()
	if err != nil {
		t.Fatal(err)
	}
	for _, sink := range sinks {
		if sink.Check == reach.ConsentLabel {
			continue // the operator checks the label: gather's tests
		}
		t.Run(sink.String(), func(t *testing.T) {
			good, bad := sinkValues(sink)
			if good != "" {
				expectOutcome(t, author.Create(ctx, withSinkValue(t, sink, good), client.DryRunAll), "")
			}
			expectOutcome(t, author.Create(ctx, withSinkValue(t, sink, bad), client.DryRunAll), sink.String())
		})
	}
}

// sinkValues are a value the scheduler admin may use at sink, and one they may not; no
// value may be used where the check is Refused.
func sinkValues(sink reach.Sink) (good, bad string) {
	switch {
	case sink.Check == reach.Refused:
		return "", "readable-token"
	case sink.Kind == reach.Image:
		return "example.com/team/extender:v1", "example.com/elsewhere:v1"
	case sink.Kind == reach.Secret:
		return "readable-token", "operator-token"
	}
	return "readable-config", "other-config"
}

// withSinkValue is a valid SecondaryScheduler that holds value at sink's path (the
// first element of each list): built on the first of a few valid resources whose kind
// of profile the path needs, as unstructured, so that any path can be set.
func withSinkValue(t *testing.T, sink reach.Sink, value string) *unstructured.Unstructured {
	t.Helper()
	base := binPacking("sink-check", func(cr *v1.SecondaryScheduler) {
		cr.Spec.Extenders = []v1.Extender{{Name: "beside", FilterVerb: "filter", Container: &v1.ExtenderContainer{
			Image: "example.com/team/extender:v1", Port: 8888, Env: []corev1.EnvVar{{Name: "MODE", Value: "strict"}}}}}
	})
	switch sink.Path[0].Field {
	case "schedulerConfig":
		base.Spec.Profile = &v1.Profile{Type: v1.CustomProfile}
	case "profile":
		targetLoadPacking(base)
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(base)
	if err != nil {
		t.Fatal(err)
	}
	object := &unstructured.Unstructured{Object: content}
	object.SetGroupVersionKind(v1.GroupVersion.WithKind("SecondaryScheduler"))
	at := object.Object["spec"].(map[string]any)
	for i, segment := range sink.Path {
		if i == len(sink.Path)-1 {
			at[segment.Field] = value
			break
		}
		next, _ := at[segment.Field].(map[string]any)
		if segment.List {
			list, _ := at[segment.Field].([]any)
			if len(list) == 0 {
				list = []any{map[string]any{}}
			}
			at[segment.Field] = list
			next = list[0].(map[string]any)
		} else if next == nil {
			next = map[string]any{}
			at[segment.Field] = next
		}
		at = next
	}
	if strings.HasSuffix(sink.String(), "KeyRef.name") {
		at["key"] = "token" // a key selector's required field
	}
	return object
}

func clientFor(t *testing.T, config *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustCreate(ctx context.Context, t *testing.T, c client.Client, object client.Object) {
	t.Helper()
	if err := c.Create(ctx, object); err != nil {
		t.Fatalf("create %T %s: %v", object, object.GetName(), err)
	}
}
