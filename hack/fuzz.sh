#!/usr/bin/env bash
# Runs each fuzz target over user input (scheduler configurations, SecondarySchedulers to
# render, Prometheus answers, image references) for FUZZTIME (default 10m), one after
# another, and keeps the inputs the fuzzer found interesting as seed corpus in
# testdata/fuzz/<Target> of the target's package, which every `go test` then replays.
# Not part of `make test`: an hour of fuzzing does not fit in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10m}
targets=(
	./internal/schedconfig:FuzzParse
	./internal/schedconfig:FuzzMetricSources
	./internal/render:FuzzRender
	./internal/render:FuzzNodePoolInCustomConfig
	./internal/metricsprobe:FuzzSampleValue
	./internal/imageref:FuzzValidate
)
only=${FUZZ:-}
cache="$(go env GOCACHE)/fuzz/$(go list -m)"
for target in "${targets[@]}"; do
	package=${target%%:*} name=${target##*:}
	if [ -n "$only" ] && [ "$only" != "$name" ]; then
		continue
	fi
	echo "== $name ($package) for $fuzztime"
	go test "$package" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -parallel "${FUZZ_PARALLEL:-2}"
	found="$cache/${package#./}/$name"
	if [ -d "$found" ]; then
		mkdir -p "$package/testdata/fuzz/$name"
		cp -n "$found"/* "$package/testdata/fuzz/$name/"
		echo "$(ls "$package/testdata/fuzz/$name" | wc -l) inputs kept in $package/testdata/fuzz/$name"
	fi
done
