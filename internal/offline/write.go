package offline

import (
	"encoding/base64"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// redacted stands for a token in what is written.
const redacted = "<redacted>"

// Write prints r's objects as a YAML stream, in the order the operator applies them,
// after a comment that says what they are. It is for reading, not for kubectl apply: the
// operator creates these objects itself, and adds what only the cluster knows (a bound
// token, the resource's UID). A Secret shows its data decoded, as stringData, and every
// token the scheduler would read is replaced by <redacted>, wherever it appears.
func Write(w io.Writer, r *Rendered) error {
	cr, result := r.Scheduler, r.Result
	header := fmt.Sprintf("# What secondary-scheduler-operator would create for SecondaryScheduler %s/%s: scheduler %s,\n"+
		"# image %s (%s),\n# configuration hash %s. For review, not for kubectl apply: the operator applies these itself.\n",
		cr.Namespace, cr.Name, strings.Join(r.Found.SchedulerNames, ", "), result.Image.Reference, result.Image.Source, result.ConfigHash)
	if _, err := io.WriteString(w, header); err != nil {
		return err
	}
	tokens := r.tokens()
	objects := result.Objects
	if r.RoutingTable != nil {
		if _, err := fmt.Fprintf(w, "# Last, the routing table %s, as it would be with this resource's route alone: the operator\n"+
			"# keeps one table that carries the routes of every SecondaryScheduler. The routing policy %s,\n"+
			"# which reads it, is fixed, and ships with the installer.\n", v1.RoutingTableName, render.RoutingPolicyName); err != nil {
			return err
		}
		objects = append(slices.Clip(objects), r.RoutingTable)
	}
	for _, object := range objects {
		shown, err := readable(object, tokens)
		if err != nil {
			return err
		}
		data, err := yaml.Marshal(shown)
		if err != nil {
			return fmt.Errorf("write %s %s: %w", object.GetKind(), object.GetName(), err)
		}
		if _, err := fmt.Fprintf(w, "---\n%s", data); err != nil {
			return err
		}
	}
	return nil
}

// tokens are the secrets that rendering put into objects.
func (r *Rendered) tokens() []string {
	facts := r.Found.Render
	var tokens []string
	for _, token := range append([]string{facts.MetricsToken}, facts.CustomConfigTokens...) {
		if token != "" {
			tokens = append(tokens, token)
		}
	}
	if identity := facts.MetricsIdentity; identity != nil && identity.Token != nil && identity.Token.Token != "" {
		tokens = append(tokens, identity.Token.Token)
	}
	return tokens
}

// readable is object as Write shows it: a Secret's data decoded into stringData, and the
// tokens replaced in every string.
func readable(object *unstructured.Unstructured, tokens []string) (map[string]any, error) {
	content := object.DeepCopy().Object
	if object.GetKind() == "Secret" && object.GetAPIVersion() == "v1" {
		data, _, err := unstructured.NestedStringMap(content, "data")
		if err != nil {
			return nil, fmt.Errorf("secret %s: %w", object.GetName(), err)
		}
		decoded := map[string]any{}
		for key, value := range data {
			plain, err := base64.StdEncoding.DecodeString(value)
			if err != nil {
				return nil, fmt.Errorf("secret %s, key %s: %w", object.GetName(), key, err)
			}
			decoded[key] = string(plain)
		}
		delete(content, "data")
		if len(decoded) > 0 {
			content["stringData"] = decoded
		}
	}
	return redact(content, tokens).(map[string]any), nil
}

// redact is value with every token in its strings replaced by redacted.
func redact(value any, tokens []string) any {
	switch typed := value.(type) {
	case map[string]any:
		for key, field := range typed {
			typed[key] = redact(field, tokens)
		}
		return typed
	case []any:
		for i, item := range typed {
			typed[i] = redact(item, tokens)
		}
		return typed
	case string:
		for _, token := range tokens {
			typed = strings.ReplaceAll(typed, token, redacted)
		}
		return typed
	default:
		return value
	}
}
