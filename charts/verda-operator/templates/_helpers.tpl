{{/*
The labels every rendered object carries: dict "ctx" $ "component" crd|rbac|controller|monitoring.
The standard ones win over extraLabels of the same name.
*/}}
{{- define "verda-operator.labels" -}}
{{- $ctx := .ctx -}}
{{- $standard := dict
  "app.kubernetes.io/name" "verda-operator"
  "app.kubernetes.io/instance" $ctx.Release.Name
  "app.kubernetes.io/version" $ctx.Chart.AppVersion
  "app.kubernetes.io/component" .component
  "app.kubernetes.io/part-of" "verda-operator"
  "app.kubernetes.io/managed-by" $ctx.Release.Service
  "helm.sh/chart" (printf "%s-%s" $ctx.Chart.Name $ctx.Chart.Version | replace "+" "_")
-}}
{{- range $k, $v := (default dict $ctx.Values.extraLabels) -}}
{{- if not (hasKey $standard $k) -}}{{- $_ := set $standard $k (toString $v) -}}{{- end -}}
{{- end -}}
{{- toYaml $standard -}}
{{- end -}}

{{/*
What selects the operator's pods (Deployment, Service, PodDisruptionBudget): the name
only, as in dist/install.yaml, since a Deployment's selector cannot change in place.
*/}}
{{- define "verda-operator.selectorLabels" -}}
app.kubernetes.io/name: verda-operator
{{- end -}}

{{/*
The documents of a file copied from config/ (files/...), parsed: a list of maps.
*/}}
{{- define "verda-operator.documents" -}}
{{- $docs := list -}}
{{- range regexSplit "(?m)^---[ \t]*$" (.ctx.Files.Get .file) -1 -}}
{{- $doc := fromYaml . -}}
{{- if $doc -}}{{- $docs = append $docs $doc -}}{{- end -}}
{{- end -}}
{{- toYaml (dict "documents" $docs) -}}
{{- end -}}

{{/*
The ClusterRole's rules of config/rbac/role.yaml, split: "cluster" keeps them all with
secretAccess.clusterWide; otherwise "namespaced" takes their ConfigMaps and Secrets,
granted by a Role in each namespace of secretAccess.namespaces.
*/}}
{{- define "verda-operator.rules" -}}
{{- $role := fromYaml (.Files.Get "files/rbac/role.yaml") -}}
{{- $cluster := list -}}
{{- $namespaced := list -}}
{{- range $role.rules -}}
{{- if $.Values.secretAccess.clusterWide -}}
{{- $cluster = append $cluster . -}}
{{- else -}}
{{- $read := list -}}
{{- range .resources -}}{{- if has . (list "configmaps" "secrets") -}}{{- $read = append $read . -}}{{- end -}}{{- end -}}
{{- $rest := without .resources "configmaps" "secrets" -}}
{{- if $rest -}}{{- $cluster = append $cluster (merge (dict "resources" $rest) .) -}}{{- end -}}
{{- if $read -}}{{- $namespaced = append $namespaced (merge (dict "resources" $read) .) -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml (dict "cluster" $cluster "namespaced" $namespaced) -}}
{{- end -}}

{{/*
The namespaces whose Secrets and ConfigMaps the operator reads through a Role: the
release's (its own Lease and Secret live there) and secretAccess.namespaces.
*/}}
{{- define "verda-operator.secretNamespaces" -}}
{{- toYaml (dict "namespaces" (prepend (default list .Values.secretAccess.namespaces) .Release.Namespace | uniq)) -}}
{{- end -}}

{{/*
The controller's arguments for values.mode.
*/}}
{{- define "verda-operator.args" -}}
{{- $args := list "run" -}}
{{- if eq .Values.mode "leaderElected" -}}
{{- $args = concat $args (list "--leader-elect") -}}
{{- else if eq .Values.mode "shards" -}}
{{- $args = concat $args (list "--shards" "--lease-name" .Values.shards.leaseName) -}}
{{- with .Values.shards.namespaceSelector -}}{{- $args = concat $args (list "--shard-namespace-selector" .) -}}{{- end -}}
{{- else -}}
{{- fail (printf "mode must be leaderElected or shards, not %q" .Values.mode) -}}
{{- end -}}
{{- $args = concat $args (list "--config" "/etc/verda/config.yaml" "--log-format" .Values.logFormat) -}}
{{- with .Values.watchNamespace -}}{{- $args = concat $args (list "--namespace" .) -}}{{- end -}}
{{- toYaml $args -}}
{{- end -}}

{{/*
The configuration file: values.config with the credentials policy written in.
*/}}
{{- define "verda-operator.config" -}}
{{- $config := deepCopy (default dict .Values.config) -}}
{{- $credentials := deepCopy (default dict $config.credentials) -}}
{{- $_ := set $credentials "allowOperatorCredentials" .Values.allowOperatorCredentials -}}
{{- $_ := set $config "credentials" $credentials -}}
{{- toYaml $config -}}
{{- end -}}
