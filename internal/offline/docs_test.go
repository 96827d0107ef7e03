package offline

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/markdown"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
)

// TestEveryDocumentedResourceIsAccepted: every whole SecondaryScheduler in README.md and
// docs/ is one the API server accepts and the operator renders. A snippet may name a
// ConfigMap or Secret it does not show (a refusal for a missing object is allowed, as
// render would say with -f of that object); nothing else.
func TestEveryDocumentedResourceIsAccepted(t *testing.T) {
	root := filepath.Join("..", "..")
	pages, err := markdown.Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, page := range pages {
		blocks, err := markdown.Read(filepath.Join(root, page), page)
		if err != nil {
			t.Fatal(err)
		}
		for _, block := range blocks {
			if block.Language != "yaml" || !strings.Contains(block.Body, "kind: SecondaryScheduler") ||
				!strings.Contains(block.Body, "apiVersion: operator.secondary-scheduler.io/v1") {
				continue
			}
			checked++
			_, err := Render(context.Background(), Input{
				Documents:       []Document{{Source: page, Data: []byte(block.Body)}},
				KubernetesMinor: 37, PrometheusURL: "http://prometheus.monitoring.svc:9090", Namespace: "default",
			})
			if refused, ok := refusal.As(err); ok && missingObject(refused.Reason) {
				continue
			}
			var invalid *InvalidError
			switch {
			case errors.As(err, &invalid):
				t.Errorf("%s: the API server would refuse it: %v", block.Where(), err)
			case err != nil:
				t.Errorf("%s: %v", block.Where(), err)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no SecondaryScheduler found in the docs")
	}
	t.Logf("%d documented SecondarySchedulers checked", checked)
}
