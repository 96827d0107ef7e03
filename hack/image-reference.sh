#!/usr/bin/env bash
# Splits a container image reference for the Makefile, which cannot: a registry may have a
# port (registry.example.com:5000/team/operator:v1), so only a colon in the last path
# segment starts a tag, and a digest follows an @.
#
#   hack/image-reference.sh repository IMAGE   the image without tag and digest
#   hack/image-reference.sh kustomize IMAGE    the tag and digest as fields of an entry of a
#                                              kustomization's images (newTag: latest when
#                                              the image has neither)
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 repository|kustomize IMAGE" >&2; exit 2; }
image=$2
digest=""
case "${image}" in *@*) digest=${image#*@}; image=${image%%@*} ;; esac
tag=""
last_segment=${image##*/}
case "${last_segment}" in *:*) tag=${last_segment##*:}; image=${image%:*} ;; esac
case "$1" in
  repository) echo "${image}" ;;
  kustomize)
    if [ -n "${tag}" ] || [ -z "${digest}" ]; then echo "  newTag: ${tag:-latest}"; fi
    if [ -n "${digest}" ]; then echo "  digest: ${digest}"; fi
    ;;
  *) echo "usage: $0 repository|kustomize IMAGE" >&2; exit 2 ;;
esac
