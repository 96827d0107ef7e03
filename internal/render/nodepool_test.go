package render

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

func TestNodePoolRequirements(t *testing.T) {
	tests := []struct {
		name    string
		pool    *metav1.LabelSelector
		want    []corev1.NodeSelectorRequirement
		wantErr string
	}{
		{name: "no pool"},
		{name: "a pool of every node", pool: &metav1.LabelSelector{}, want: []corev1.NodeSelectorRequirement{}},
		{
			name: "matchLabels become In, sorted by key",
			pool: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a", "pool": "batch"}},
			want: []corev1.NodeSelectorRequirement{expression("pool", corev1.NodeSelectorOpIn, "batch"), expression("zone", corev1.NodeSelectorOpIn, "a")},
		},
		{
			name: "matchExpressions keep their operator, after matchLabels",
			pool: &metav1.LabelSelector{
				MatchLabels: map[string]string{"pool": "batch"},
				MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}},
					{Key: "arch", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"s390x"}},
					{Key: "gpu", Operator: metav1.LabelSelectorOpExists},
					{Key: "retiring", Operator: metav1.LabelSelectorOpDoesNotExist},
				},
			},
			want: []corev1.NodeSelectorRequirement{
				expression("pool", corev1.NodeSelectorOpIn, "batch"),
				expression("zone", corev1.NodeSelectorOpIn, "a", "b"),
				expression("arch", corev1.NodeSelectorOpNotIn, "s390x"),
				expression("gpu", corev1.NodeSelectorOpExists),
				expression("retiring", corev1.NodeSelectorOpDoesNotExist),
			},
		},
		{
			name: "an unknown operator",
			pool: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "cores", Operator: "Gt", Values: []string{"8"}}}},
			wantErr: `spec.nodePool: "Gt" is not a valid label selector operator`,
		},
		{
			name: "In without values",
			pool: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "zone", Operator: metav1.LabelSelectorOpIn}}},
			wantErr: "values set can't be empty",
		},
		{
			name:    "an invalid label value",
			pool:    &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "not a value"}},
			wantErr: "spec.nodePool",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := nodePoolRequirements(tt.pool)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("want an error containing %q, got %v", tt.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("requirements (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodePoolSelector(t *testing.T) {
	tests := []struct {
		name    string
		pool    *metav1.LabelSelector
		want    string
		wantNil bool
		wantErr bool
	}{
		{name: "no pool", wantNil: true},
		{name: "every node", pool: &metav1.LabelSelector{}, want: ""},
		{name: "labels and expressions", pool: &metav1.LabelSelector{
			MatchLabels:      map[string]string{"pool": "batch"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "retiring", Operator: metav1.LabelSelectorOpDoesNotExist}},
		}, want: "pool=batch,!retiring"},
		{name: "invalid", pool: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			selector, err := NodePoolSelector(secondaryScheduler("s", func(cr *v1.SecondaryScheduler) { cr.Spec.NodePool = tt.pool }))
			switch {
			case tt.wantErr:
				if err == nil || !strings.Contains(err.Error(), "spec.nodePool") {
					t.Errorf("want an error naming spec.nodePool, got %v", err)
				}
			case err != nil:
				t.Fatal(err)
			case tt.wantNil:
				if selector != nil {
					t.Errorf("want no selector, got %q", selector)
				}
			case selector == nil || selector.String() != tt.want:
				t.Errorf("got %v, want %q", selector, tt.want)
			}
		})
	}
}

// poolConfig is a Custom configuration of one profile, image-locality, that ends with
// its pluginConfig (or nothing).
func poolConfig(pluginConfig string) string {
	return "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: image-locality\n" + pluginConfig
}

// TestNodePoolInCustomConfig checks that the pool is ANDed with what a Custom profile's
// NodeAffinity args already add, and that the rest of the configuration is kept.
func TestNodePoolInCustomConfig(t *testing.T) {
	pool := &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "batch"}}
	inPool := expression("pool", corev1.NodeSelectorOpIn, "batch")
	term := func(requirements ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: requirements}
	}
	required := func(terms ...corev1.NodeSelectorTerm) *corev1.NodeAffinity {
		return &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}
	}
	gpu := expression("gpu", corev1.NodeSelectorOpExists)
	tests := []struct {
		name         string
		pool         *metav1.LabelSelector
		pluginConfig string
		want         *corev1.NodeAffinity // nil: no NodeAffinity args
		wantPlugins  []string
	}{
		{
			name:        "no pluginConfig",
			pool:        pool,
			want:        required(term(inPool)),
			wantPlugins: []string{"NodeAffinity"},
		},
		{
			name:         "an empty pluginConfig",
			pool:         pool,
			pluginConfig: "  pluginConfig: []\n",
			want:         required(term(inPool)),
			wantPlugins:  []string{"NodeAffinity"},
		},
		{
			name:         "other plugins' args only",
			pool:         pool,
			pluginConfig: "  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n",
			want:         required(term(inPool)),
			wantPlugins:  []string{"NodeResourcesFit", "NodeAffinity"},
		},
		{
			name:         "NodeAffinity without args",
			pool:         pool,
			pluginConfig: "  pluginConfig:\n  - name: NodeAffinity\n",
			want:         required(term(inPool)),
			wantPlugins:  []string{"NodeAffinity"},
		},
		{
			name:         "NodeAffinityArgs without addedAffinity",
			pool:         pool,
			pluginConfig: "  pluginConfig:\n  - name: NodeAffinity\n    args:\n      kind: NodeAffinityArgs\n",
			want:         required(term(inPool)),
			wantPlugins:  []string{"NodeAffinity"},
		},
		{
			name: "addedAffinity of two terms: the pool in each",
			pool: pool,
			pluginConfig: `  pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - key: gpu
              operator: Exists
          - matchExpressions:
            - key: zone
              operator: In
              values: [a]
`,
			want:        required(term(gpu, inPool), term(expression("zone", corev1.NodeSelectorOpIn, "a"), inPool)),
			wantPlugins: []string{"NodeAffinity"},
		},
		{
			name: "a term of fields only gets the pool's expressions; an empty term still matches nothing",
			pool: pool,
			pluginConfig: `  pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchFields:
            - key: metadata.name
              operator: In
              values: [node-1]
          - {}
`,
			want: required(corev1.NodeSelectorTerm{
				MatchFields:      []corev1.NodeSelectorRequirement{expression("metadata.name", corev1.NodeSelectorOpIn, "node-1")},
				MatchExpressions: []corev1.NodeSelectorRequirement{inPool},
			}, corev1.NodeSelectorTerm{}),
			wantPlugins: []string{"NodeAffinity"},
		},
		{
			name: "preferences only: the pool becomes the requirement, the preferences stay",
			pool: pool,
			pluginConfig: `  pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 10
          preference:
            matchExpressions:
            - key: gpu
              operator: Exists
`,
			want: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(inPool)}},
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
					Weight: 10, Preference: term(gpu),
				}},
			},
			wantPlugins: []string{"NodeAffinity"},
		},
		{
			name:        "a pool of every node changes nothing",
			pool:        &metav1.LabelSelector{},
			wantPlugins: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := secondaryScheduler("image-locality", func(cr *v1.SecondaryScheduler) {
				cr.Spec.Profile, cr.Spec.SchedulerConfig, cr.Spec.NodePool = nil, "cm", tt.pool
			})
			rendered, err := SchedulerConfig(cr, Facts{CustomConfig: []byte(poolConfig(tt.pluginConfig))})
			if err != nil {
				t.Fatal(err)
			}
			// Decoded as kube-scheduler decodes it, NodeAffinity args strictly.
			parsed, err := schedconfig.Parse([]byte(rendered), "image-locality", "rendered")
			if err != nil {
				t.Fatalf("the rendered config does not parse: %v\n%s", err, rendered)
			}
			var plugins []string
			var got *corev1.NodeAffinity
			for _, pluginConfig := range parsed.Profiles[0].PluginConfig {
				plugins = append(plugins, pluginConfig.Name)
				if args, ok := pluginConfig.Args.Object.(*schedulerconfigv1.NodeAffinityArgs); ok {
					got = args.AddedAffinity
				}
			}
			if diff := cmp.Diff(tt.wantPlugins, plugins); diff != "" {
				t.Errorf("pluginConfig entries (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("addedAffinity (-want +got):\n%s\n%s", diff, rendered)
			}
			if !strings.Contains(rendered, "- schedulerName: image-locality") {
				t.Errorf("the user's text should be kept as written:\n%s", rendered)
			}
		})
	}
}

// An invalid pool is an error for the Degraded condition, never a panic or a scheduler
// without its pool.
// A profile without the NodeAffinity filter would place pods outside the pool: refused.
func TestNodePoolNeedsTheNodeAffinityPlugin(t *testing.T) {
	tests := []struct {
		name, plugins string
		refused       bool
	}{
		{"disabled at filter", "  plugins:\n    filter:\n      disabled: [{name: NodeAffinity}]\n", true},
		{"disabled at multiPoint", "  plugins:\n    multiPoint:\n      disabled: [{name: NodeAffinity}]\n", true},
		{"all disabled", "  plugins:\n    filter:\n      disabled: [{name: '*'}]\n", true},
		{"all disabled, enabled again", "  plugins:\n    filter:\n      disabled: [{name: '*'}]\n      enabled: [{name: NodeAffinity}]\n", false},
		{"another plugin disabled", "  plugins:\n    filter:\n      disabled: [{name: TaintToleration}]\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := secondaryScheduler("image-locality", func(cr *v1.SecondaryScheduler) {
				cr.Spec.Profile, cr.Spec.SchedulerConfig = nil, "cm"
				cr.Spec.NodePool = &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "batch"}}
			})
			_, err := SchedulerConfig(cr, Facts{CustomConfig: []byte(poolConfig(tt.plugins))})
			if refused := err != nil && strings.Contains(err.Error(), "disables the NodeAffinity plugin"); refused != tt.refused {
				t.Errorf("refused = %t, want %t (err %v)", refused, tt.refused, err)
			}
		})
	}
}

func TestInvalidNodePoolIsRefused(t *testing.T) {
	cr := secondaryScheduler("packer", func(cr *v1.SecondaryScheduler) {
		cr.Spec.NodePool = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pool", Operator: "Near", Values: []string{"a"}}}}
	})
	_, err := Render(cr, Facts{KubernetesMinor: 34})
	if err == nil || !strings.Contains(err.Error(), "spec.nodePool") {
		t.Fatalf("want an error naming spec.nodePool, got %v", err)
	}
}

// FuzzNodePoolInCustomConfig checks that for any configuration schedconfig.Parse accepts,
// adding a pool neither panics nor yields a configuration kube-scheduler would refuse,
// and that every term of every profile's addedAffinity that can match a node then
// requires the pool.
func FuzzNodePoolInCustomConfig(f *testing.F) {
	f.Add(poolConfig(""))
	f.Add(poolConfig("  pluginConfig: null\n"))
	f.Add(poolConfig("  pluginConfig: []\n"))
	f.Add(poolConfig("  pluginConfig:\n  - name: NodeAffinity\n    args: null\n"))
	f.Add(poolConfig("  pluginConfig:\n  - name: NodeAffinity\n    args:\n      addedAffinity: null\n"))
	f.Add(poolConfig("  pluginConfig:\n  - name: NodeAffinity\n    args:\n      addedAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution: {}\n"))
	f.Add(poolConfig("  pluginConfig:\n  - name: NodeAffinity\n    args:\n      addedAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n          nodeSelectorTerms: [null, {matchExpressions: null, matchFields: [{key: metadata.name, operator: In, values: [a]}]}]\n"))
	f.Add(poolConfig("  pluginConfig: [{name: NodeAffinity, args: {addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Exists}]}]}}}}]\n"))
	f.Add(customConfig + nodeAffinityProfile)
	pool := &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "batch"}}
	inPool := expression("pool", corev1.NodeSelectorOpIn, "batch")
	f.Fuzz(func(t *testing.T, config string) {
		if _, err := schedconfig.Parse([]byte(config), "", "fuzz"); err != nil {
			return
		}
		cr := secondaryScheduler("image-locality", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Profile, cr.Spec.SchedulerConfig = nil, "cm"
		})
		// kyaml writes a few exotic spellings back differently (a flow mapping's key
		// without a value, {key}, gets the value ''): only what the pool adds is checked.
		withoutPool, err := SchedulerConfig(cr, Facts{CustomConfig: []byte(config)})
		if err != nil {
			t.Fatalf("rendering an accepted config failed: %v\n%s", err, config)
		}
		if _, err := schedconfig.Parse([]byte(withoutPool), "", "rendered"); err != nil {
			return
		}
		cr.Spec.NodePool = pool
		rendered, err := SchedulerConfig(cr, Facts{CustomConfig: []byte(config)})
		if err != nil && strings.Contains(err.Error(), "disables the NodeAffinity plugin") {
			return // refused: the pool could not be enforced
		}
		if err != nil {
			t.Fatalf("adding the pool to an accepted config failed: %v\n%s", err, config)
		}
		parsed, err := schedconfig.Parse([]byte(rendered), "", "rendered")
		if err != nil {
			t.Fatalf("the rendered config does not parse: %v\n%s\nfrom\n%s", err, rendered, config)
		}
		for i, profile := range parsed.Profiles {
			var added *corev1.NodeAffinity
			for _, pluginConfig := range profile.PluginConfig {
				if args, ok := pluginConfig.Args.Object.(*schedulerconfigv1.NodeAffinityArgs); ok && pluginConfig.Name == nodeAffinityPlugin {
					added = args.AddedAffinity
					break
				}
			}
			if added == nil || added.RequiredDuringSchedulingIgnoredDuringExecution == nil {
				t.Fatalf("profile %d has no required addedAffinity:\n%s", i, rendered)
			}
			for j, term := range added.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
					continue // matches no node
				}
				if !containsRequirement(term.MatchExpressions, inPool) {
					t.Fatalf("term %d of profile %d does not require the pool:\n%s", j, i, rendered)
				}
			}
		}
	})
}

func containsRequirement(requirements []corev1.NodeSelectorRequirement, want corev1.NodeSelectorRequirement) bool {
	for _, requirement := range requirements {
		if cmp.Equal(requirement, want) {
			return true
		}
	}
	return false
}

// Every profile type the API accepts, and the request-based stand-in the failsafe renders
// for each load-aware one, keeps its pods inside spec.nodePool: every profile of the
// configuration has NodeAffinity args whose every term requires the pool. A profile
// without them would place pods on nodes that belong to another scheduler's pool.
func TestNodePoolReachesEveryProfile(t *testing.T) {
	pool := &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "batch"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}
	want := []corev1.NodeSelectorRequirement{expression("pool", corev1.NodeSelectorOpIn, "batch"), expression("zone", corev1.NodeSelectorOpIn, "a", "b")}
	for _, profileType := range profileTypesOfTheCRD(t) {
		for _, byRequests := range []bool{false, true} {
			if byRequests && !profileType.IsLoadAware() {
				continue
			}
			name := string(profileType)
			if byRequests {
				name += " scoring by requests"
			}
			t.Run(name, func(t *testing.T) {
				cr := secondaryScheduler("pooled", func(cr *v1.SecondaryScheduler) {
					cr.Spec.NodePool = pool
					cr.Spec.Profile = &v1.Profile{Type: profileType}
					if profileType == v1.CustomProfile {
						cr.Spec.Profile, cr.Spec.SchedulerConfig = nil, "cm"
					}
				})
				config, err := SchedulerConfig(cr, Facts{ScoreByRequests: byRequests, PrometheusAddress: "http://prometheus.monitoring.svc:9090",
					CustomConfig: []byte(customConfig + nodeAffinityProfile)})
				if err != nil {
					t.Fatal(err)
				}
				parsed, err := schedconfig.Parse([]byte(config), "", "the rendered configuration")
				if err != nil {
					t.Fatal(err)
				}
				for _, profile := range parsed.Profiles {
					terms := addedAffinityTerms(t, profile)
					if len(terms) == 0 {
						t.Errorf("profile %s: no addedAffinity; its pods could go to any node", *profile.SchedulerName)
					}
					for i, term := range terms {
						for _, requirement := range want {
							if !slices.ContainsFunc(term.MatchExpressions, func(r corev1.NodeSelectorRequirement) bool { return cmp.Equal(r, requirement) }) {
								t.Errorf("profile %s, term %d: %v lacks the pool's %v", *profile.SchedulerName, i, term.MatchExpressions, requirement)
							}
						}
					}
				}
			})
		}
	}
}

// addedAffinityTerms are the required node selector terms of a profile's NodeAffinity args.
func addedAffinityTerms(t *testing.T, profile schedulerconfigv1.KubeSchedulerProfile) []corev1.NodeSelectorTerm {
	t.Helper()
	for _, plugin := range profile.PluginConfig {
		if plugin.Name != nodeAffinityPlugin {
			continue
		}
		args, ok := plugin.Args.Object.(*schedulerconfigv1.NodeAffinityArgs)
		if !ok {
			t.Fatalf("profile %s: NodeAffinity args decoded as %T", *profile.SchedulerName, plugin.Args.Object)
		}
		if args.AddedAffinity == nil || args.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			return nil
		}
		return args.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	}
	return nil
}
