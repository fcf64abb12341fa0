{{/* Names */}}
{{- define "kustodian.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kustodian.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "kustodian.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "kustodian.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "kustodian.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kustodian.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kustodian.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "kustodian.serviceAccountName" -}}
{{ include "kustodian.fullname" . }}
{{- end -}}

{{- define "kustodian.controllersServiceAccountName" -}}
{{ include "kustodian.fullname" . | trunc 51 | trimSuffix "-" }}-controllers
{{- end -}}

{{- define "kustodian.nodeAgentName" -}}
{{ include "kustodian.fullname" . | trunc 52 | trimSuffix "-" }}-node-agent
{{- end -}}

{{- define "kustodian.tlsSecretName" -}}
{{- if eq .Values.tls.mode "secret" -}}
{{ required "tls.secret.name is required when tls.mode=secret" .Values.tls.secret.name }}
{{- else -}}
{{ include "kustodian.fullname" . }}-tls
{{- end -}}
{{- end -}}

{{- define "kustodian.rulesConfigMapName" -}}
{{ include "kustodian.fullname" . }}-deletion-rules
{{- end -}}

{{/* Namespaces no webhook sees: system ones and Kustodian's own. */}}
{{- define "kustodian.namespaceSelector" -}}
namespaceSelector:
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values:
        {{- toYaml (concat (list "kube-system" "kube-node-lease" .Release.Namespace) .Values.webhook.excludeNamespaces | uniq) | nindent 8 }}
{{- end -}}

{{- define "kustodian.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "kustodian.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: [ALL]
{{- end -}}

{{/* Environment every component shares. */}}
{{- define "kustodian.commonEnv" -}}
- name: KUSTODIAN_KUBE__NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: KUSTODIAN_LOG__FORMAT
  value: {{ .Values.logFormat | quote }}
- name: KUSTODIAN_LOG__LEVEL
  value: {{ .Values.logLevel | quote }}
{{- end -}}

{{/*
"group|resource" for a deletion-rule kind key, called with (list $ KEY) ("StorageClass.storage.k8s.io"
-> "storage.k8s.io|storageclasses", "PersistentVolumeClaim" -> "|persistentvolumeclaims"): the
resource of a known kind (files/kinds.json), else the lower-cased English plural Kubernetes uses
for CRDs and Kustodian's messages use for kinds.
*/}}
{{- define "kustodian.kindResource" -}}
{{- $root := index . 0 -}}
{{- $key := index . 1 -}}
{{- $table := $root.Files.Get "files/kinds.json" | fromJson -}}
{{- $parts := splitn "." 2 $key -}}
{{- $kind := lower $parts._0 -}}
{{- $group := $parts._1 | default "" -}}
{{- $plural := printf "%ss" $kind -}}
{{- if hasKey $table.kinds $key -}}
{{- $plural = get $table.kinds $key -}}
{{- else if regexMatch "(s|x|z|ch|sh)$" $kind -}}
{{- $plural = printf "%ses" $kind -}}
{{- else if regexMatch "[^aeiou]y$" $kind -}}
{{- $plural = printf "%sies" (trimSuffix "y" $kind) -}}
{{- end -}}
{{- printf "%s|%s" $group $plural -}}
{{- end -}}

{{/*
Fails the render when a kind a deletion rule names does not exist (kustodian.policy.kinds, whose
table files/kinds.json is): "StorageClass" has no group, "PVC" is a short name, "Storageclass" a
wrong case; each would render an admission rule for a resource nobody serves and guard nothing.
Called with (list $ KEY PATH). A kind of a CRD group not in the table passes (guarded once served).
*/}}
{{- define "kustodian.checkKind" -}}
{{- $root := index . 0 -}}
{{- $key := index . 1 -}}
{{- $path := index . 2 -}}
{{- $table := $root.Files.Get "files/kinds.json" | fromJson -}}
{{- if not (hasKey $table.kinds $key) -}}
{{- $parts := splitn "." 2 $key -}}
{{- $group := $parts._1 | default "" -}}
{{- $mean := get $table.aliases (lower $key) | default (get $table.aliases (lower $parts._0)) | default "" -}}
{{- $hint := ternary (printf " (did you mean %q?)" $mean) "" (ne $mean "") -}}
{{- if and (eq $group "") (contains "." $mean) -}}
{{- fail (printf "%s: %q is not a core-group kind: write it with its group%s" $path $key $hint) -}}
{{- else if and (eq $group "") (ne $mean "") -}}
{{- fail (printf "%s: %q is not a kind%s" $path $key $hint) -}}
{{- else if eq $group "" -}}
{{- fail (printf "%s: %q is not a core-group kind (a kind of another group is written Kind.group)" $path $key) -}}
{{- else if has $group $table.builtinGroups -}}
{{- fail (printf "%s: %q is not a kind of the built-in group %s%s" $path $key $group $hint) -}}
{{- else if and (hasKey $table.aliases (lower $key)) (ne (get $table.aliases (lower $key)) $key) -}}
{{- fail (printf "%s: %q is not a kind%s" $path $key $hint) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Checks every kind deletionGuard.rules names (providers, dependents, skipIf) before anything renders them.
*/}}
{{- define "kustodian.checkRules" -}}
{{- range $i, $rule := .Values.deletionGuard.rules -}}
{{- $path := printf "deletionGuard.rules[%d]" $i -}}
{{- include "kustodian.checkKind" (list $ $rule.provider (printf "%s.provider" $path)) -}}
{{- include "kustodian.checkKind" (list $ $rule.dependent (printf "%s.dependent" $path)) -}}
{{- if $rule.skipIf }}{{ include "kustodian.checkKind" (list $ $rule.skipIf.kind (printf "%s.skipIf.kind" $path)) }}{{ end -}}
{{- end -}}
{{- end -}}

{{/*
Admission rules (DELETE) for the providers named by deletionGuard.rules, one per group.
*/}}
{{- define "kustodian.ruleAdmissionRules" -}}
{{- include "kustodian.checkRules" . -}}
{{- $root := . -}}
{{- $byGroup := dict -}}
{{- range .Values.deletionGuard.rules -}}
{{- $gr := splitList "|" (include "kustodian.kindResource" (list $root .provider)) -}}
{{- $g := index $gr 0 -}}
{{- $_ := set $byGroup $g (append (get $byGroup $g | default list) (index $gr 1) | uniq) -}}
{{- end -}}
{{- range $g := keys $byGroup | sortAlpha }}
- apiGroups: [{{ $g | quote }}]
  apiVersions: ["*"]
  operations: [DELETE]
  resources: {{ get $byGroup $g | sortAlpha | toJson }}
  scope: "*"
{{- end -}}
{{- end -}}

{{/*
Read access (list/watch) for every kind deletionGuard.rules names (providers, dependents, skipIf).
*/}}
{{- define "kustodian.ruleReadRules" -}}
{{- include "kustodian.checkRules" . -}}
{{- $root := . -}}
{{- $byGroup := dict -}}
{{- range .Values.deletionGuard.rules -}}
{{- $kinds := list .provider .dependent -}}
{{- if .skipIf }}{{ $kinds = append $kinds .skipIf.kind }}{{ end -}}
{{- range $kinds -}}
{{- $gr := splitList "|" (include "kustodian.kindResource" (list $root .)) -}}
{{- $g := index $gr 0 -}}
{{- $_ := set $byGroup $g (append (get $byGroup $g | default list) (index $gr 1) | uniq) -}}
{{- end -}}
{{- end -}}
{{- range $g := keys $byGroup | sortAlpha }}
- apiGroups: [{{ $g | quote }}]
  resources: {{ get $byGroup $g | sortAlpha | toJson }}
  verbs: [list, watch]
{{- end -}}
{{- end -}}
