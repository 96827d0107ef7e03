package offline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
)

// yamlBlock is a fenced YAML block of Markdown.
var yamlBlock = regexp.MustCompile("(?s)```ya?ml\n(.*?)```")

// TestEveryDocumentedResourceIsAccepted: every whole SecondaryScheduler in README.md and
// docs/ is one the API server accepts and the operator renders. A snippet may name a
// ConfigMap or Secret it does not show (a refusal for a missing object is allowed, as
// render would say with -f of that object); nothing else.
func TestEveryDocumentedResourceIsAccepted(t *testing.T) {
	pages := []string{filepath.Join("..", "..", "README.md")}
	err := filepath.WalkDir(filepath.Join("..", "..", "docs"), func(path string, entry os.DirEntry, err error) error {
		if err == nil && !entry.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, match := range yamlBlock.FindAllStringSubmatch(string(text), -1) {
			block := match[1]
			if !strings.Contains(block, "kind: SecondaryScheduler") || !strings.Contains(block, "apiVersion: operator.secondary-scheduler.io/v1") {
				continue
			}
			checked++
			_, err := Render(context.Background(), Input{
				Documents:       []Document{{Source: filepath.Base(page), Data: []byte(block)}},
				KubernetesMinor: 37, PrometheusURL: "http://prometheus.monitoring.svc:9090", Namespace: "default",
			})
			if refused, ok := refusal.As(err); ok && missingObject(refused.Reason) {
				continue
			}
			var invalid *InvalidError
			switch {
			case errors.As(err, &invalid):
				t.Errorf("%s, YAML block %d: the API server would refuse it: %v", filepath.Base(page), i+1, err)
			case err != nil:
				t.Errorf("%s, YAML block %d: %v", filepath.Base(page), i+1, err)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no SecondaryScheduler found in the docs")
	}
	t.Logf("%d documented SecondarySchedulers checked", checked)
}
