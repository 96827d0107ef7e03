//go:build docs

package docs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/markdown"
)

// demoNamespace is where objects without a namespace of their own are dry-run.
const demoNamespace = "demo"

// controlPlaneBin is where make builds the control plane the docs' commands use, kubectl
// among it, relative to the checkout.
const controlPlaneBin = "bin/k8s/v1.37.2"

// demoShell is what every page's commands find set, as demo.md has a reader set it.
const demoShell = "export KUBECONFIG=$PWD/_output/secondary-scheduler/kubeconfig\nexport PATH=$PWD/" + controlPlaneBin + ":$PATH\n"

// demoShellBlock runs demoShell before a page's commands.
var demoShellBlock = markdown.Block{File: "the demo's shell", Body: demoShell}

// marker precedes each block's output in the transcript, naming the block.
const marker = "::: running "

// TestPages runs docs/demo.md's commands in one shell, in page order; then each other
// page's on the cluster they left; then demo.md's cleanup; then every whole object of
// README.md and docs/ through the demo cluster's API server; then the teardown.
func TestPages(t *testing.T) {
	snippets, err := markdown.Read(filepath.Join(repoRoot, demoPage), demoPage)
	if err != nil {
		t.Fatal(err)
	}
	byStage := map[string][]markdown.Block{}
	for _, s := range snippets {
		if s.Language == "sh" {
			stage := s.Directive
			if stage != "setup" && stage != "cleanup" && stage != "teardown" {
				stage = "steps"
			}
			byStage[stage] = append(byStage[stage], s)
		}
	}
	if len(byStage["setup"]) == 0 || len(byStage["teardown"]) == 0 {
		t.Fatalf("%s has no setup or teardown block", demoPage)
	}
	pages := otherPages(t)[onDemo]
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	tornDown := false
	t.Cleanup(func() {
		if tornDown {
			return
		}
		// The teardown runs whatever happened, with a context of its own.
		teardownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		keepClusterLogs(teardownCtx, t, "demo-cluster")
		if transcript, err := runShell(teardownCtx, t, "teardown", byStage["teardown"]); err != nil {
			t.Errorf("teardown failed: %v\n%s", err, transcript)
		}
	})
	if transcript, err := runShell(ctx, t, "demo", append(byStage["setup"], byStage["steps"]...)); err != nil {
		t.Fatalf("%s failed at %s: %v\n%s", demoPage, lastBlock(transcript), err, tail(transcript, 60))
	}
	for _, page := range pages {
		t.Run(page.name(), func(t *testing.T) {
			if transcript, err := runShell(ctx, t, page.name(), append([]markdown.Block{demoShellBlock}, page.commands...)); err != nil {
				t.Errorf("%s failed at %s: %v\n%s", page.name(), lastBlock(transcript), err, tail(transcript, 40))
			}
		})
	}
	if transcript, err := runShell(ctx, t, "cleanup", append([]markdown.Block{demoShellBlock}, byStage["cleanup"]...)); err != nil {
		t.Fatalf("%s's cleanup failed at %s: %v\n%s", demoPage, lastBlock(transcript), err, tail(transcript, 40))
	}
	checkObjects(ctx, t)
	// A page that failed leaves the test running on: its logs are kept before the teardown
	// deletes them.
	keepClusterLogs(ctx, t, "demo-cluster")
	tornDown = true
	if transcript, err := runShell(ctx, t, "teardown", byStage["teardown"]); err != nil {
		t.Fatalf("teardown failed: %v\n%s", err, transcript)
	}
}

// TestBarePages runs the commands of the pages marked bare, in path order, each in a shell
// of its own, on a cluster they share (started after TestPages has stopped the demo's,
// whose name and ports it takes): a page may build on what an earlier one installed, as
// migration.md does on getting-started.md's operator.
func TestBarePages(t *testing.T) {
	barePages := otherPages(t)[onBare]
	if len(barePages) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	defer func() {
		keepClusterLogs(context.Background(), t, "bare-cluster")
		if transcript, err := runShell(context.Background(), t, "bare-cluster.down", []markdown.Block{bareCluster.down}); err != nil {
			t.Errorf("stopping the bare cluster failed: %v\n%s", err, transcript)
		}
	}()
	if transcript, err := runShell(ctx, t, "bare-cluster.up", []markdown.Block{bareCluster.up}); err != nil {
		t.Fatalf("starting the bare cluster failed: %v\n%s", err, tail(transcript, 40))
	}
	for _, page := range barePages {
		t.Run(page.name(), func(t *testing.T) {
			if transcript, err := runShell(ctx, t, page.name(), append([]markdown.Block{demoShellBlock}, page.commands...)); err != nil {
				t.Errorf("%s failed at %s: %v\n%s", page.name(), lastBlock(transcript), err, tail(transcript, 40))
			}
		})
	}
}

// bareCluster starts a cluster as a reader's is before installing the operator, with
// kube-prometheus (played by test/kubeprometheus), in place of any demo still running,
// and stops it.
var bareCluster = struct{ up, down markdown.Block }{
	up:   markdown.Block{File: "the test's bare cluster", Body: "hack/demo.sh down\nhack/demo.sh bare\nhack/demo.sh kube-prometheus\n"},
	down: markdown.Block{File: "the test's bare cluster", Body: "hack/demo.sh down\n"},
}

// keepClusterLogs copies, when the test failed, the local cluster's logs (its components',
// the audit log, the real node's containerd, kubelet and kube-proxy, and its pods') into
// _output/docs/NAME-logs, since stopping the cluster deletes them; and its objects, whose
// pods' last states and events say why a container stopped, which its log may not.
func keepClusterLogs(ctx context.Context, t *testing.T, name string) {
	if !t.Failed() {
		return
	}
	dest := filepath.Join(repoRoot, "_output", "docs", name+"-logs")
	script := `rm -rf "$1" && mkdir -p "$1"
cp -r "$(hack/local-cluster.sh logs)"/. "$1"/ || true
cp _output/secondary-scheduler/*.log "$1"/ || true
if [ -d _output/secondary-scheduler/node/logs ]; then mkdir -p "$1"/node && cp -r _output/secondary-scheduler/node/logs/. "$1"/node/ || true; fi
if [ -d _output/secondary-scheduler/node/kubelet/pod-logs ]; then cp -rL _output/secondary-scheduler/node/kubelet/pod-logs "$1"/pods || true; fi
"$2" --kubeconfig "$(hack/local-cluster.sh kubeconfig)" get secondaryschedulers,deployments,pods,events -A -o yaml \
  >"$1"/objects.yaml 2>&1 || true
`
	cmd := exec.CommandContext(ctx, "bash", "-c", script, "keep-cluster-logs", dest, filepath.Join(repoRoot, controlPlaneBin, "kubectl"))
	cmd.Dir = repoRoot
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Logf("keeping the cluster's logs failed: %v\n%s", err, output)
		return
	}
	t.Logf("the cluster's logs are kept in %s", dest)
}

// page is a page whose commands run on the demo after demo.md's, on the bare cluster or in
// a copy of the checkout.
type page struct {
	file     string
	commands []markdown.Block
	// part names the blocks that run here of a page that runs elsewhere: bare for a demo
	// page's bare: blocks. Empty when they are all of the page's.
	part string
}

// name names the page, or its part, in subtests and transcripts.
func (p page) name() string {
	if p.part == "" {
		return p.file
	}
	return p.file + "#" + p.part
}

// Where a page's commands run, as its test-page directive says.
const (
	onDemo     = "demo"
	onBare     = "bare"
	onCheckout = "checkout"
)

// otherPages are the pages of README.md and docs/ other than demo.md, in path order, by
// where their commands run; on the bare cluster, after the bare pages, the blocks of demo
// pages marked bare: (a page of its own each). A page with commands and no test-page
// directive fails the test: every command is either run or said why not.
func otherPages(t *testing.T) map[string][]page {
	files, err := markdownFiles()
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string][]page{}
	var bareLater []page
	for _, file := range files {
		if file == demoPage {
			continue
		}
		snippets, err := markdown.Read(filepath.Join(repoRoot, file), file)
		if err != nil {
			t.Fatal(err)
		}
		var commands, bareCommands []markdown.Block
		for _, s := range snippets {
			switch {
			case s.Language != "sh":
			case strings.HasPrefix(withoutNeeds(s.Directive), bareDirective):
				bareCommands = append(bareCommands, s)
			default:
				commands = append(commands, s)
			}
		}
		if len(commands)+len(bareCommands) == 0 {
			continue
		}
		directive, err := markdown.PageDirective(filepath.Join(repoRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		switch why, skipped := strings.CutPrefix(directive, "skip:"); {
		case skipped:
			t.Logf("%s: its %d commands are not run: %s", file, len(commands)+len(bareCommands), strings.TrimSpace(why))
		case directive == onDemo:
			pages[onDemo] = append(pages[onDemo], page{file: file, commands: commands})
			// Its blocks that need what only an installed operator has run after the bare pages.
			if len(bareCommands) > 0 {
				bareLater = append(bareLater, page{file: file, commands: bareCommands, part: "bare"})
			}
		case directive == onBare || directive == onCheckout:
			pages[directive] = append(pages[directive], page{file: file, commands: append(commands, bareCommands...)})
		default:
			t.Errorf("%s has commands and no <!-- test-page: demo, bare, checkout or skip: WHY --> (it says %q)", file, directive)
		}
	}
	pages[onBare] = append(pages[onBare], bareLater...)
	return pages
}

// TestCheckoutPages runs the commands of the pages marked checkout, a developer's
// (regenerate, update the golden files, run tests), each page in a copy of this checkout of
// its own: its files, committed or not, without what git ignores but bin/, which the copy
// shares. They must leave the copy as it was: on a checkout whose generated and golden
// files are current, as every commit's must be, regenerating changes nothing.
func TestCheckoutPages(t *testing.T) {
	// A bound on a hang, not on speed: make test runs this at nice 19, on the cycles the
	// suites beside it leave, which took 16 minutes of a cold run.
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	for _, page := range otherPages(t)[onCheckout] {
		t.Run(page.file, func(t *testing.T) {
			dir := copyCheckout(ctx, t)
			if transcript, err := runShellIn(ctx, t, dir, page.file, page.commands); err != nil {
				t.Fatalf("%s failed at %s: %v\n%s", page.file, lastBlock(transcript), err, tail(transcript, 40))
			}
			status, err := exec.CommandContext(ctx, "git", "-C", dir, "status", "--porcelain").CombinedOutput()
			if err != nil || len(status) > 0 {
				t.Errorf("%s's commands changed the checkout (%v): generated or golden files are stale, or a command writes what it should not:\n%s", page.file, err, status)
			}
		})
	}
}

// copyCheckout copies the checkout's files, committed or not and without what git ignores,
// into a directory of the test's, links bin/ (the tools and the control plane, built once)
// and commits the copy, so that git diff there shows what the commands change.
func copyCheckout(ctx context.Context, t *testing.T) string {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repoRoot, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	// --ignore-failed-read: a file deleted and not yet committed is listed, and absent.
	script := `git ls-files -z --cached --others --exclude-standard | tar --null --ignore-failed-read -T - -cf - | tar -xf - -C "$1"
# -n: a bin/ that is a symlink, which git does not ignore as it ignores a directory, was
# copied by tar above; replace it rather than link inside what it points to.
ln -sfn "$PWD/bin" "$1/bin"
cd "$1"
git init -q
git add -A
git -c user.name=docs-test -c user.email=docs-test@localhost commit -qm "the checkout under test"
`
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script, "copy-checkout", dir)
	cmd.Dir = repoRoot
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("copy the checkout: %v\n%s", err, output)
	}
	return dir
}

// runShell runs blocks in the checkout as runShellIn does.
func runShell(ctx context.Context, t *testing.T, name string, blocks []markdown.Block) (string, error) {
	return runShellIn(ctx, t, repoRoot, name, blocks)
}

// runShellIn runs blocks in one bash in dir, so that what one exports the next sees,
// stopping at the first command that fails; the transcript names each block before its
// output and is kept in _output/docs/NAME.transcript. Each block's directive decides
// whether and how it runs.
func runShellIn(ctx context.Context, t *testing.T, dir, name string, blocks []markdown.Block) (string, error) {
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for _, block := range blocks {
		body, run := commandsOf(t, block)
		if run {
			fmt.Fprintf(&script, "echo %q\n%s", marker+block.Where(), body)
		}
	}
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = dir
	cmd.Env = readerEnvironment()
	cmd.WaitDelay = 10 * time.Second
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	err := cmd.Run()
	writeTranscript(t, name, output.String())
	return output.String(), err
}

// needsSchedulerPlugins is the directive of a block that runs only with the
// scheduler-plugins kube-scheduler; "needs scheduler-plugins; OTHER" adds another directive.
const needsSchedulerPlugins = "needs scheduler-plugins"

// bareDirective is the prefix of the directive of a demo page's block that runs on the bare cluster.
const bareDirective = "bare:"

// retryDirective runs a block again, once a second, until it succeeds, retryAttempts times
// at most: for a command whose answer is a sample the cluster takes now and then (kubectl
// top shows metrics-server's last scrape of each kubelet, which a loaded kubelet may miss),
// which a reader repeats too.
const retryDirective = "retry:"

const retryAttempts = 120

// makeTestRunsIt is the directive of a block that is one make target that make test runs
// itself, before this test: running it here again would only double its time.
const makeTestRunsIt = "make test runs it"

// makeTestTargets are the targets the Makefile's test target runs: its prerequisites, those
// it always runs and those it runs in CI (inside $(if $(CI),...), whose function and variable
// names are left out), and the jobs its recipe runs through hack/make-parallel.sh.
func makeTestTargets(t *testing.T) []string {
	makefile, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(makefile), "\n")
	for i, line := range lines {
		rule, ok := strings.CutPrefix(line, "test:")
		if !ok {
			continue
		}
		rule, _, _ = strings.Cut(rule, "##")
		for _, recipe := range lines[i+1:] {
			jobs, ok := strings.CutPrefix(recipe, "\thack/make-parallel.sh ")
			if !ok {
				break
			}
			rule += " " + jobs
		}
		words := strings.FieldsFunc(rule, func(r rune) bool { return strings.ContainsRune(" \t$(),'", r) })
		// nice: marks a job make-parallel.sh runs at low priority; it is no target.
		return slices.DeleteFunc(words, func(word string) bool {
			return word == "if" || word == "nice:" || strings.ToLower(word) != word
		})
	}
	t.Fatal("the Makefile has no test target")
	return nil
}

// withoutNeeds is directive without its needs scheduler-plugins part: the other directive
// it may carry, or none.
func withoutNeeds(directive string) string {
	rest, ok := strings.CutPrefix(directive, needsSchedulerPlugins)
	if !ok {
		return directive
	}
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ";"))
}

// commandsOf is what runs for block, by its directive, and whether anything does.
func commandsOf(t *testing.T, block markdown.Block) (string, bool) {
	directive := withoutNeeds(block.Directive)
	if directive != block.Directive && !schedulerPluginsBuilt() {
		t.Logf("%s is not run: it needs the scheduler-plugins kube-scheduler (make scheduler-plugins), which is not built", block.Where())
		return "", false
	}
	command := func(prefix string) string { return strings.TrimSpace(strings.TrimPrefix(directive, prefix)) }
	switch {
	case directive == "" || directive == "setup" || directive == "cleanup" || directive == "teardown":
		return block.Body, true
	case strings.HasPrefix(directive, "skip:"):
		why, _ := block.Skipped()
		t.Logf("%s is not run: %s", block.Where(), why)
		return "", false
	case directive == makeTestRunsIt:
		target, ok := strings.CutPrefix(strings.TrimSpace(block.Body), "make ")
		if !ok || !slices.Contains(makeTestTargets(t), target) {
			t.Errorf("%s says make test runs it, but it is not make T with T a prerequisite of make test: %q", block.Where(), block.Body)
		} else {
			t.Logf("%s is not run here: make test runs target %s itself", block.Where(), target)
		}
		return "", false
	case strings.HasPrefix(directive, "before:"):
		return command("before:") + "\n" + block.Body, true
	case strings.HasPrefix(directive, retryDirective):
		// A subshell per attempt, so that a failed one leaves nothing set.
		return fmt.Sprintf("for attempt in $(seq %d); do\n(\n%s) && break\n[ \"$attempt\" -lt %d ] || exit 1\nsleep 1\ndone\n",
			retryAttempts, block.Body, retryAttempts), true
	case strings.HasPrefix(directive, bareDirective):
		return command(bareDirective) + "\n" + block.Body, true
	case strings.HasPrefix(directive, "with:"):
		// A subshell, so that the values hold for this block only.
		return "(\n" + command("with:") + "\n" + block.Body + ")\n", true
	case strings.HasPrefix(directive, "instead:"):
		return command("instead:") + "\n", true
	}
	t.Errorf("%s: unknown directive %q (setup, cleanup, teardown, needs scheduler-plugins[; OTHER], before: CMD, retry: WHY, with: VALUES, bare: CMD, instead: CMD, make test runs it, skip: WHY)", block.Where(), block.Directive)
	return "", false
}

// readerEnvironment is the test's environment without what would point the page's
// commands elsewhere than a reader's fresh shell does.
func readerEnvironment() []string {
	return slices.DeleteFunc(os.Environ(), func(variable string) bool {
		name, _, _ := strings.Cut(variable, "=")
		return slices.Contains([]string{"KUBECONFIG", "CLUSTER_NAME", "OUTPUT_DIR", "SCHEDULER_NAMESPACES"}, name)
	})
}

// schedulerPluginsBuilt is whether make demo runs the scheduler-plugins kube-scheduler.
func schedulerPluginsBuilt() bool {
	if os.Getenv("SCHEDULER_PLUGINS_BINARY") != "" {
		return true
	}
	_, err := os.Stat(filepath.Join(repoRoot, "bin/scheduler-plugins/kube-scheduler"))
	return err == nil
}

func writeTranscript(t *testing.T, name, transcript string) {
	dir := filepath.Join(repoRoot, "_output", "docs")
	if err := os.MkdirAll(dir, 0o755); err == nil {
		path := filepath.Join(dir, strings.ReplaceAll(name, "/", "_")+".transcript")
		if os.WriteFile(path, []byte(transcript), 0o644) == nil {
			t.Logf("transcript of %s: %s", name, path)
		}
	}
}

func lastBlock(transcript string) string {
	at := strings.LastIndex(transcript, marker)
	if at < 0 {
		return "its start"
	}
	line, _, _ := strings.Cut(transcript[at+len(marker):], "\n")
	return line
}

func tail(text string, lines int) string {
	all := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// checkObjects sends every whole object and SecondaryScheduler fragment of README.md and
// docs/ to the demo cluster's API server as a server-side dry run: its schema, CEL rules
// and admission policies judge them as they would a reader's. Kinds the cluster does not
// serve (the Prometheus Operator's, OLM's) are named, not judged.
func checkObjects(ctx context.Context, t *testing.T) {
	files, err := markdownFiles()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(repoRoot, "_output/secondary-scheduler/kubeconfig")
	kubectl := filepath.Join(repoRoot, controlPlaneBin, "kubectl")
	served, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "api-resources", "--no-headers").Output()
	if err != nil {
		t.Fatalf("kubectl api-resources: %v", err)
	}
	checked := 0
	for _, file := range files {
		snippets, err := markdown.Read(filepath.Join(repoRoot, file), file)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range snippets {
			if s.Language != "yaml" {
				continue
			}
			for _, object := range objectsOf(t, s) {
				if !servedKind(string(served), object.apiVersion, object.kind) {
					t.Logf("%s: %s %s is not checked: the demo cluster does not serve it", s.Where(), object.apiVersion, object.kind)
					continue
				}
				// The namespaces the docs name are made here, as a reader's cluster has them.
				if object.ns != "" {
					create := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "create", "namespace", object.ns)
					if output, err := create.CombinedOutput(); err != nil && !strings.Contains(string(output), "AlreadyExists") {
						t.Fatalf("create namespace %s: %v: %s", object.ns, err, output)
					}
				}
				apply := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side",
					"--dry-run=server", "--field-manager=docs-test", "-n", object.namespace(), "-f", "-")
				apply.Stdin = strings.NewReader(object.text)
				if output, err := apply.CombinedOutput(); err != nil {
					t.Errorf("%s: the API server refuses this %s: %s", s.Where(), object.kind, strings.TrimSpace(string(output)))
				}
				checked++
			}
		}
	}
	t.Logf("%d objects of the docs accepted by the API server", checked)
}

// docObject is one object of a yaml block.
type docObject struct {
	apiVersion, kind, ns, text string
}

// namespace is where the object is dry-run: its own, or the demo's.
func (o docObject) namespace() string {
	if o.ns != "" {
		return o.ns
	}
	return demoNamespace
}

// objectsOf are the objects of a yaml block: each whole document with apiVersion and kind,
// and a SecondaryScheduler fragment (a block starting with spec:) completed into one.
func objectsOf(t *testing.T, s markdown.Block) []docObject {
	var objects []docObject
	for _, document := range strings.Split(s.Body, "\n---\n") {
		var fields struct {
			APIVersion string         `json:"apiVersion"`
			Kind       string         `json:"kind"`
			Metadata   map[string]any `json:"metadata"`
			Spec       any            `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(document), &fields); err != nil {
			t.Errorf("%s: not YAML: %v", s.Where(), err)
			continue
		}
		switch {
		case fields.APIVersion != "" && fields.Kind != "":
			ns, _ := fields.Metadata["namespace"].(string)
			objects = append(objects, docObject{apiVersion: fields.APIVersion, kind: fields.Kind, ns: ns, text: document})
		case fields.Spec != nil && fields.APIVersion == "" && fields.Kind == "":
			objects = append(objects, docObject{apiVersion: "operator.secondary-scheduler.io/v1", kind: "SecondaryScheduler", text: "apiVersion: operator.secondary-scheduler.io/v1\n" +
				"kind: SecondaryScheduler\nmetadata:\n  name: docs-fragment\n" + document})
		}
	}
	return objects
}

// servedKind is whether the cluster's api-resources table (NAME [SHORTNAMES] APIVERSION
// NAMESPACED KIND) has apiVersion's kind.
func servedKind(served, apiVersion, kind string) bool {
	for _, line := range strings.Split(served, "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 4 && fields[len(fields)-1] == kind && fields[len(fields)-3] == apiVersion {
			return true
		}
	}
	return false
}

// TestCommandsOf checks what each directive runs, without a cluster.
func TestCommandsOf(t *testing.T) {
	plugins := schedulerPluginsBuilt()
	tests := []struct {
		directive, body string
		want            string
		run             bool
	}{
		{"", "kubectl get pods\n", "kubectl get pods\n", true},
		{"before: hack/x.sh", "kubectl get pods\n", "hack/x.sh\nkubectl get pods\n", true},
		{"retry: a sample", "kubectl top pods\n", "for attempt in $(seq 120); do\n(\nkubectl top pods\n) && break\n[ \"$attempt\" -lt 120 ] || exit 1\nsleep 1\ndone\n", true},
		{"bare: NS=platform", "kubectl auth can-i get pods -n \"$NS\"\n", "NS=platform\nkubectl auth can-i get pods -n \"$NS\"\n", true},
		{"with: NAME=load-variation", "echo \"$NAME\"\n", "(\nNAME=load-variation\necho \"$NAME\"\n)\n", true},
		{"instead: NS=demo", "NS=platform\n", "NS=demo\n", true},
		{"skip: needs docker", "docker run x\n", "", false},
		{"make test runs it", "make test-integration\n", "", false},
		{"needs scheduler-plugins", "kubectl wait\n", "kubectl wait\n", plugins},
		{"needs scheduler-plugins; with: NAME=x", "echo\n", "(\nNAME=x\necho\n)\n", plugins},
	}
	for _, tt := range tests {
		t.Run(tt.directive, func(t *testing.T) {
			got, run := commandsOf(t, markdown.Block{File: "page.md", Line: 1, Directive: tt.directive, Body: tt.body})
			if !tt.run {
				tt.want = ""
			}
			if got != tt.want || run != tt.run {
				t.Errorf("runs %q (%v), want %q (%v)", got, run, tt.want, tt.run)
			}
		})
	}
	targets := makeTestTargets(t)
	for _, want := range []string{"manifests", "verify-clean", "test-integration", "lint"} {
		if !slices.Contains(targets, want) {
			t.Errorf("make test's targets are read as %q, want %s among them", targets, want)
		}
	}
	if slices.Contains(targets, "if") || slices.Contains(targets, "hack/make-parallel.sh") {
		t.Errorf("make test's targets are read as %q, with a make function or the script among them", targets)
	}
}
