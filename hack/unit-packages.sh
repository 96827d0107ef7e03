#!/usr/bin/env bash
# Prints the packages `make test-unit` runs, one a line: every package of the module with
# tests, but those whose tests start a real kube-apiserver (they import controller-runtime's
# envtest, need KUBEBUILDER_ASSETS, and `make test-integration` runs them). Derived from
# `go list`, so that a new package with tests runs without anyone listing it. Tests behind
# a build tag (e2e, docs) are invisible without the tag: a package whose tests are all
# tagged (test/e2e) is not printed, one with untagged tests too (test/docs) is, for those.
# test/testtargets checks that test-integration runs exactly the packages left out here.
set -euo pipefail
cd "$(dirname "$0")/.."
envtest=sigs.k8s.io/controller-runtime/pkg/envtest
go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{$envtest := false}}{{range .TestImports}}{{if eq . "'"$envtest"'"}}{{$envtest = true}}{{end}}{{end}}{{range .XTestImports}}{{if eq . "'"$envtest"'"}}{{$envtest = true}}{{end}}{{end}}{{if not $envtest}}{{.ImportPath}}{{end}}{{end}}' ./... | sed '/^$/d'
