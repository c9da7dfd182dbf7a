#!/usr/bin/env bash
# Writes a kubeconfig that acts as the operator's ServiceAccount (a fresh token): the
# operator's identity, nothing more, for a binary run outside the cluster.
# Usage: hack/sa-kubeconfig.sh ADMIN_KUBECONFIG NAMESPACE OUT [DURATION]
set -euo pipefail
admin=$1 namespace=$2 out=$3 duration=${4:-2h}
token=$(KUBECONFIG=$admin kubectl -n "$namespace" create token verda-operator --duration="$duration")
cp "$admin" "$out"
chmod 600 "$out"
KUBECONFIG=$out kubectl config set-credentials operator --token="$token" >/dev/null
KUBECONFIG=$out kubectl config set-context --current --user=operator >/dev/null
