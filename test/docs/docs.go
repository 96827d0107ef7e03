// Package docs runs the documentation against the demo's local cluster, so that a page
// that stops working fails the tests: the commands of docs/demo.md in page order, exactly
// as written; then, on the cluster as demo.md leaves it, the commands of every other page
// of README.md and docs/ that says so; then every whole Kubernetes object of those pages
// through the API server (server-side dry run).
//
// A page with commands says where they run, in an HTML comment of its own:
//
//	<!-- test-page: demo -->      on the demo, after demo.md's steps and before its cleanup
//	<!-- test-page: bare -->      after the demo, on a cluster as a reader's is before the
//	                              operator is installed (hack/demo.sh bare: no CRD, no
//	                              operator; podrunner runs the operator's pods as the
//	                              manager built from the checkout), with kube-prometheus
//	                              (hack/demo.sh kube-prometheus: test/kubeprometheus says
//	                              what of it is real); these pages share it, in path
//	                              order, so a page may build on what an earlier one did
//	<!-- test-page: checkout -->  a developer's commands, in a copy of the checkout of the
//	                              page's own, which they must leave unchanged
//	<!-- test-page: skip: WHY --> nowhere; WHY says why they cannot run here
//
// A fenced block's directive is an HTML comment on the line before it:
//
//	<!-- test: setup -->          demo.md: run first (the page's start)
//	<!-- test: cleanup -->        demo.md: run after the other pages
//	<!-- test: teardown -->       demo.md: run last, also after a failure
//	<!-- test: needs scheduler-plugins -->
//	                              run only when the scheduler-plugins kube-scheduler is built;
//	                              "needs scheduler-plugins; OTHER" adds one other directive
//	<!-- test: before: CMD -->    run CMD first: what a reader's cluster has and the demo's
//	                              lacks, such as a namespace, or what standins/ plays:
//	                              what OpenShift's operator left (migration.md), a crash
//	                              (for kubectl logs --previous), or a wait for what a reader
//	                              waits for unprompted
//	<!-- test: retry: WHY -->     run the block again, once a second for up to 2 minutes,
//	                              until it succeeds: a command whose answer is a sample the
//	                              cluster takes now and then (kubectl top, until
//	                              metrics-server's scrapes have the pods); WHY says which
//	<!-- test: with: VALUES -->   run the block in a subshell that sets VALUES first, such as
//	                              NAME=load-variation for a command that needs what only that
//	                              resource has: the values hold for this block only
//	<!-- test: bare: CMD -->      on a demo page, a block that needs what only an installed
//	                              operator has (its ServiceAccount, its pod's log): it runs
//	                              after the bare pages, on their cluster, CMD first (the
//	                              page's values as a reader there sets them)
//	<!-- test: instead: CMD -->   run CMD in the block's place: the documented substitution
//	                              of a value the reader chooses, such as node names
//	<!-- test: make test runs it -->
//	                              a block that is make T, with T a prerequisite of make test
//	                              (checked): not run twice
//	<!-- test: skip: WHY -->      never run; WHY says why it cannot be here
package docs

import (
	"path/filepath"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/markdown"
)

// demoPage is the page run first, whose cluster the other pages' commands run on.
const demoPage = "docs/demo.md"

// repoRoot is the checkout the pages' commands run in, as a reader runs them.
var repoRoot = func() string {
	root, err := filepath.Abs("../..")
	if err != nil {
		panic(err)
	}
	return root
}()

// markdownFiles are README.md and every page under docs/, relative to the checkout.
func markdownFiles() ([]string, error) { return markdown.Pages(repoRoot) }
