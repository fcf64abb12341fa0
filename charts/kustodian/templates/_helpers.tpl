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
{{- with (.Values.webhook.serviceAccount | default dict).name }}{{ . }}{{ else }}{{ include "kustodian.fullname" . }}{{ end -}}
{{- end -}}

{{- define "kustodian.controllersServiceAccountName" -}}
{{- with (.Values.controllers.serviceAccount | default dict).name }}{{ . }}{{ else }}{{ include "kustodian.fullname" . | trunc 51 | trimSuffix "-" }}-controllers{{ end -}}
{{- end -}}

{{- define "kustodian.nodeAgentServiceAccountName" -}}
{{- with ((.Values.nodeAgent | default dict).serviceAccount | default dict).name }}{{ . }}{{ else }}{{ include "kustodian.nodeAgentName" $ }}{{ end -}}
{{- end -}}

{{/* Set every key of .over on .base (a key's value replaced whole; false and 0 kept, unlike merge). */}}
{{- define "kustodian.overlay" -}}
{{- range $k, $v := .over }}{{ $_ := set $.base $k $v }}{{ end -}}
{{- end -}}

{{/*
Today's names of values renamed in this release, moved to their new places (idempotent: every
template that reads a renamed value includes it first). Removed in the next release; NOTES.txt
warns while they are set.
*/}}
{{- define "kustodian.normalize" -}}
{{- $v := .Values -}}
{{- if ne $v.replicaCount nil }}{{ $_ := set $v.webhook "replicas" $v.replicaCount }}{{ end -}}
{{- with $v.controllersDeployment }}{{ if ne .replicas nil }}{{ $_ := set $v.controllers "replicas" .replicas }}{{ end }}{{ end -}}
{{- with $v.podDisruptionBudget }}{{ $_ := include "kustodian.overlay" (dict "base" $v.webhook.podDisruptionBudget "over" (deepCopy .)) }}{{ end -}}
{{- with $v.orphans -}}
{{- $legacy := deepCopy . -}}
{{- if hasKey $legacy "runAsUser" -}}
{{- $uid := $legacy.runAsUser -}}
{{- $_ := include "kustodian.overlay" (dict "base" $v.nodeAgent.podSecurityContext "over" (dict "runAsUser" $uid "runAsNonRoot" (ne (int $uid) 0))) -}}
{{- $_ := unset $legacy "runAsUser" -}}
{{- end -}}
{{- $_ := include "kustodian.overlay" (dict "base" $v.nodeAgent "over" $legacy) -}}
{{- end -}}
{{- include "kustodian.checkComponents" . -}}
{{- include "kustodian.checkValues" . -}}
{{- end -}}

{{/*
Fails the render on values that cannot work, naming what to set instead. The webhook's two ports
must differ, and with webhook.hostNetwork neither may be a port the node itself serves.
serviceAccount.name, which a Helm user may expect from other charts: each component runs under
its own ServiceAccount, bound to its own rights; one name for all three would hand every pod the
union of them (the node agent's and the controllers' deletes in the webhook's pods), so the names
are per component. The schema lets that key through so that this message, not a bare
"additional properties" error, is what the user reads.
*/}}
{{- define "kustodian.checkValues" -}}
{{- $w := .Values.webhook -}}
{{- if not (include "kustodian.webhookEnabled" .) -}}
{{- else if eq (int $w.port) (int .Values.metrics.port) -}}
{{- fail (printf "webhook.port and metrics.port are both %v: the admission port and the plain-HTTP metrics port must differ; change one" $w.port) -}}
{{- else if $w.hostNetwork -}}
{{- /* the node's own listeners: kubelet (10250, read-only 10255, healthz 10248), kube-proxy
       (metrics 10249, healthz 10256), controller-manager 10257, scheduler 10259, etcd, API server */ -}}
{{- $taken := dict "10248" "the kubelet's healthz" "10249" "kube-proxy's metrics" "10250" "the kubelet's" "10255" "the kubelet's read-only" "10256" "kube-proxy's healthz" "10257" "kube-controller-manager's" "10259" "kube-scheduler's" "2379" "etcd's" "2380" "etcd's peer" "6443" "the API server's" -}}
{{- range $key, $port := dict "webhook.port" $w.port "metrics.port" $.Values.metrics.port -}}
{{- with get $taken (toString (int $port)) -}}
{{- fail (printf "webhook.hostNetwork is true and %s is %v, %s port on the nodes: with host networking the webhook listens on the node itself; set %s to a free port (e.g. %s)" $key $port . $key (ternary "9443" "9080" (eq $key "webhook.port"))) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if hasKey (.Values.serviceAccount | default dict) "name" -}}
{{- fail "serviceAccount.name is not a value of this chart: each component runs under its own ServiceAccount, with its own rights; name the ones you want: webhook.serviceAccount.name, controllers.serviceAccount.name, nodeAgent.serviceAccount.name (with serviceAccount.create=false to use existing ones; serviceAccount.annotations applies to all three)" -}}
{{- end -}}
{{- end -}}

{{/*
Fails the render when a component is on with nothing to do: it would look installed and protect
nothing (the processes refuse the same settings at start, exit 2). Each message names the value
to set. Reads the values as normalized (orphans.* already moved to nodeAgent.*); a value given
under its deprecated name is named so.
*/}}
{{- define "kustodian.checkComponents" -}}
{{- $v := .Values -}}
{{- if and $v.nodeAgent.enabled (empty $v.nodeAgent.disks) -}}
{{- $at := ternary "orphans" "nodeAgent" (and (kindIs "map" $v.orphans) (hasKey ($v.orphans | default dict) "enabled")) -}}
{{- fail (printf "%s.enabled is true but %s.disks is empty: the node agent would scan nothing; set %s.disks to the Longhorn disk paths of your nodes (e.g. [/var/lib/longhorn]), or %s.enabled=false" $at $at $at $at) -}}
{{- end -}}
{{- if and $v.nodeCleanup.enabled (empty $v.nodeCleanup.storageClasses) -}}
{{- fail "nodeCleanup.enabled is true but nodeCleanup.storageClasses is empty: node cleanup would clean nothing; set nodeCleanup.storageClasses to the StorageClasses of your local PVs, or nodeCleanup.enabled=false" -}}
{{- end -}}
{{- if and $v.nodeCleanup.enabled (not $v.controllers.enabled) -}}
{{- fail "nodeCleanup.enabled is true but controllers.enabled is false: node cleanup runs in the controllers Deployment; set controllers.enabled=true, or nodeCleanup.enabled=false" -}}
{{- end -}}
{{- if and $v.capacity.enabled (not $v.controllers.enabled) -}}
{{- fail "capacity.enabled is true but controllers.enabled is false: the reservation controller runs in the controllers Deployment, so no AvailableCapacityReservation would be planned; set controllers.enabled=true, or capacity.enabled=false" -}}
{{- end -}}
{{- if and $v.controllers.enabled (not (or $v.reclaimSpace.enabled $v.nodeCleanup.enabled $v.capacity.enabled)) -}}
{{- fail "controllers.enabled is true but every controller is off (reclaimSpace.enabled, nodeCleanup.enabled, capacity.enabled): the controllers Deployment would run nothing; turn one on, or set controllers.enabled=false" -}}
{{- end -}}
{{- if not (or (include "kustodian.webhookEnabled" .) $v.controllers.enabled $v.nodeAgent.enabled) -}}
{{- fail "nothing is enabled: every admission feature (deletionGuard.enabled, reclaimSpace.enabled, capacity.enabled), the controllers (controllers.enabled) and the node agent (nodeAgent.enabled) are off, so the release would run nothing; turn one on" -}}
{{- end -}}
{{- $served := or (include "kustodian.webhookEnabled" .) $v.controllers.enabled -}}
{{- if and $v.metrics.prometheusRule.enabled (not $served) -}}
{{- fail "metrics.prometheusRule.enabled is true but neither the webhook (no admission feature is on) nor the controllers run: every alert watches one of them, none the node agent; set metrics.prometheusRule.enabled=false" -}}
{{- end -}}
{{- if and $v.metrics.serviceMonitor.enabled (not $served) (or (not $v.nodeAgent.enabled) $v.metrics.podMonitor.enabled) -}}
{{- fail "metrics.serviceMonitor.enabled is true but it would scrape nothing: no webhook (no admission feature is on), no controllers, and the node agent is scraped by the PodMonitor (metrics.podMonitor.enabled); set metrics.serviceMonitor.enabled=false" -}}
{{- end -}}
{{- end -}}

{{/*
"true" when the webhook component (its Deployment, Service, PodDisruptionBudget, webhook
configurations, TLS objects, ServiceAccount, RBAC and NetworkPolicy) is rendered: at least one
admission feature is on. With all three off it would answer no review; a node-agent-only or
controllers-only install renders none of it. The controllers and the node agent use none of
its objects. "" otherwise (an include is a string: test it with `if`).
*/}}
{{- define "kustodian.webhookEnabled" -}}
{{- if or .Values.deletionGuard.enabled .Values.reclaimSpace.enabled .Values.capacity.enabled }}true{{ end -}}
{{- end -}}

{{/* The deprecated value names set in this release's values (NOTES.txt lists them). */}}
{{- define "kustodian.deprecatedValues" -}}
{{- $renames := dict "replicaCount" "webhook.replicas" "controllersDeployment" "controllers.replicas" "orphans" "nodeAgent" "podDisruptionBudget" "webhook.podDisruptionBudget" "podAntiAffinity" "webhook.affinity" "podAntiAffinityTopologyKey" "webhook.affinity" "nodeAffinity" "affinity.nodeAffinity" "webhookTopologySpread" "webhook.topologySpreadConstraints" -}}
{{- range $old := keys $renames | sortAlpha }}
{{- if ne (index $.Values $old) nil }}
  {{ $old }} -> {{ index $renames $old }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
A component's pod settings: (dict "root" $ "c" <component values>) -> merged YAML.
Objects are merged (the component's keys win), scalars and lists replaced when the component sets them.
*/}}
{{- define "kustodian.podSecurityContext" -}}
{{- $c := .c | default dict -}}
{{- $root := .root | default . -}}{{/* the root context alone: the shared value */}}
{{- $out := deepCopy ($root.Values.podSecurityContext | default dict) -}}
{{- $_ := include "kustodian.overlay" (dict "base" $out "over" ($c.podSecurityContext | default dict)) -}}
{{- if include "kustodian.openshift" $root -}}
{{- /* restricted-v2 assigns the UID and fsGroup from the namespace's range: the image's fixed 65532 would be refused */ -}}
{{- range $key := list "runAsUser" "runAsGroup" "fsGroup" -}}
{{- if eq (toString (get $out $key)) "65532" }}{{ $_ := unset $out $key }}{{ end -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{- define "kustodian.containerSecurityContext" -}}
{{- $c := .c | default dict -}}
{{- $root := .root | default . -}}
{{- $out := deepCopy ($root.Values.securityContext | default dict) -}}
{{- $_ := include "kustodian.overlay" (dict "base" $out "over" ($c.securityContext | default dict)) -}}
{{- toYaml $out -}}
{{- end -}}

{{/* The webhook's / controllers' affinity: top-level merged with the component's (tpl-rendered), and the deprecated podAntiAffinity / nodeAffinity. */}}
{{- define "kustodian.affinity" -}}
{{- $root := .root -}}
{{- $aff := deepCopy ($root.Values.affinity | default dict) -}}
{{- $_ := include "kustodian.overlay" (dict "base" $aff "over" (deepCopy (.c.affinity | default dict))) -}}
{{- with $root.Values.nodeAffinity }}{{ $_ := set $aff "nodeAffinity" (deepCopy .) }}{{ end -}}
{{- if and (eq .component "webhook") (ne $root.Values.podAntiAffinity nil) -}}
{{- $term := dict "topologyKey" ($root.Values.podAntiAffinityTopologyKey | default "kubernetes.io/hostname") "labelSelector" (dict "matchLabels" (dict "app.kubernetes.io/name" (include "kustodian.name" $root) "app.kubernetes.io/instance" $root.Release.Name "app.kubernetes.io/component" "webhook")) -}}
{{- if eq $root.Values.podAntiAffinity "hard" -}}
{{- $_ := set $aff "podAntiAffinity" (dict "requiredDuringSchedulingIgnoredDuringExecution" (list $term)) -}}
{{- else if eq $root.Values.podAntiAffinity "soft" -}}
{{- $_ := set $aff "podAntiAffinity" (dict "preferredDuringSchedulingIgnoredDuringExecution" (list (dict "weight" 100 "podAffinityTerm" $term))) -}}
{{- else -}}
{{- $_ := unset $aff "podAntiAffinity" -}}
{{- end -}}
{{- end -}}
{{- if $aff }}{{ tpl (toYaml $aff) $root }}{{ end -}}
{{- end -}}

{{/* The webhook's topologySpreadConstraints: webhook.topologySpreadConstraints, or the deprecated webhookTopologySpread. */}}
{{- define "kustodian.topologySpread" -}}
{{- $root := .root -}}
{{- $tsc := .c.topologySpreadConstraints | default list -}}
{{- if and (eq .component "webhook") (ne $root.Values.webhookTopologySpread nil) -}}
{{- $old := dict "enabled" true "maxSkew" 1 "whenUnsatisfiable" "ScheduleAnyway" "topologyKeys" (list "topology.kubernetes.io/zone" "kubernetes.io/hostname") -}}
{{- $_ := include "kustodian.overlay" (dict "base" $old "over" (deepCopy $root.Values.webhookTopologySpread)) -}}
{{- $tsc = list -}}
{{- if $old.enabled -}}
{{- range $old.topologyKeys -}}
{{- $tsc = append $tsc (dict "maxSkew" $old.maxSkew "topologyKey" . "whenUnsatisfiable" $old.whenUnsatisfiable "labelSelector" (dict "matchLabels" (dict "app.kubernetes.io/name" (include "kustodian.name" $root) "app.kubernetes.io/instance" $root.Release.Name "app.kubernetes.io/component" "webhook"))) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $tsc }}{{ tpl (toYaml $tsc) $root }}{{ end -}}
{{- end -}}

{{/* Scheduling, pull secrets and security of a pod: (dict "root" $ "c" <component or nil> "component" <name>). */}}
{{- define "kustodian.podScheduling" -}}
{{- $root := .root -}}
{{- $c := .c | default dict -}}
{{- $agent := eq (.component | default "") "node-agent" -}}
{{- $pc := $c.priorityClassName | default (ternary "" $root.Values.priorityClassName $agent) -}}
{{- with $pc }}
priorityClassName: {{ . }}
{{- end }}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- include "kustodian.podSecurityContext" . | nindent 2 }}
{{- $ns := $c.nodeSelector | default (ternary dict $root.Values.nodeSelector $agent) -}}
{{- with $ns }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- $tol := $c.tolerations | default (ternary list $root.Values.tolerations $agent) -}}
{{- with $tol }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if or (eq (.component | default "") "webhook") (eq (.component | default "") "controllers") }}
{{- with include "kustodian.affinity" . }}
affinity:
  {{- . | nindent 2 }}
{{- end }}
{{- with include "kustodian.topologySpread" . }}
topologySpreadConstraints:
  {{- . | nindent 2 }}
{{- end }}
{{- else }}
{{- $aff := $c.affinity | default (ternary dict $root.Values.affinity $agent) -}}
{{- with $aff }}
affinity:
  {{- tpl (toYaml .) $root | nindent 2 }}
{{- end }}
{{- with $c.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- tpl (toYaml .) $root | nindent 2 }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
A workload's update strategy from <component>.updateStrategy (its `strategy` for a Deployment,
`updateStrategy` for the DaemonSet): rollingUpdate only with type RollingUpdate (or none given),
as the API server refuses it with Recreate or OnDelete, and Helm's merge of a user's
`type: Recreate` with the default keeps the default's rollingUpdate. Nothing for {}.
*/}}
{{- define "kustodian.updateStrategy" -}}
{{- $s := . | default dict -}}
{{- with $s.type }}
type: {{ . }}
{{- end }}
{{- $ru := $s.rollingUpdate | default dict -}}
{{- if and $ru (or (not $s.type) (eq $s.type "RollingUpdate")) }}
rollingUpdate:
  {{- if hasKey $ru "maxUnavailable" }}
  maxUnavailable: {{ $ru.maxUnavailable }}
  {{- end }}
  {{- if hasKey $ru "maxSurge" }}
  maxSurge: {{ $ru.maxSurge }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* A container's resources: the component's, else the top-level ones, else the given default. */}}
{{- define "kustodian.resources" -}}
{{- $r := (.c | default dict).resources | default .root.Values.resources | default .default -}}
{{- toYaml ($r | default dict) -}}
{{- end -}}

{{/* extraEnv / extraVolumes / extraVolumeMounts: top-level then the component's. */}}
{{- define "kustodian.extra" -}}
{{- $c := .c | default dict -}}
{{- $all := concat (index .root.Values .key | default list) (index $c .key | default list) -}}
{{- with $all }}{{ toYaml . }}{{ end -}}
{{- end -}}

{{- define "kustodian.podLabels" -}}
{{- $c := .c | default dict -}}
{{- $out := deepCopy (.root.Values.podLabels | default dict) -}}
{{- $_ := include "kustodian.overlay" (dict "base" $out "over" ($c.podLabels | default dict)) -}}
{{- with $out }}{{ toYaml . }}{{ end -}}
{{- end -}}

{{- define "kustodian.podAnnotations" -}}
{{- $c := .c | default dict -}}
{{- $out := deepCopy (.root.Values.podAnnotations | default dict) -}}
{{- $_ := include "kustodian.overlay" (dict "base" $out "over" ($c.podAnnotations | default dict)) -}}
{{- with $out }}{{ toYaml . }}{{ end -}}
{{- end -}}

{{/* Does this component get a ServiceAccount from the chart? */}}
{{- define "kustodian.createServiceAccount" -}}
{{- $sa := .serviceAccount | default dict -}}
{{- if ne $sa.create nil }}{{ ternary "true" "" $sa.create }}{{ else }}{{ ternary "true" "" $.rootCreate }}{{ end -}}
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

{{/*
Namespaces no webhook sees: system ones and Kustodian's own, ANDed with webhook.namespaceSelector
(its matchLabels and matchExpressions added to the exclusion, never replacing it).
*/}}
{{- define "kustodian.namespaceSelector" -}}
{{- $sel := .Values.webhook.namespaceSelector | default dict -}}
namespaceSelector:
  {{- with $sel.matchLabels }}
  matchLabels:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values:
        {{- toYaml (concat (list "kube-system" "kube-node-lease" .Release.Namespace) .Values.webhook.excludeNamespaces | uniq) | nindent 8 }}
    {{- with $sel.matchExpressions }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/* webhook.objectSelector, for the webhooks that take the namespaceSelector above; nothing when empty. */}}
{{- define "kustodian.objectSelector" -}}
{{- with .Values.webhook.objectSelector -}}
objectSelector:
  {{- toYaml . | nindent 2 }}
{{- end -}}
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
Checks every kind deletionGuard.rules names (providers, dependents, skipIf, a via-ref's via) before anything
renders them.
*/}}
{{- define "kustodian.checkRules" -}}
{{- range $i, $rule := .Values.deletionGuard.rules -}}
{{- $path := printf "deletionGuard.rules[%d]" $i -}}
{{- include "kustodian.checkKind" (list $ $rule.provider (printf "%s.provider" $path)) -}}
{{- include "kustodian.checkKind" (list $ $rule.dependent (printf "%s.dependent" $path)) -}}
{{- if $rule.skipIf }}{{ include "kustodian.checkKind" (list $ $rule.skipIf.kind (printf "%s.skipIf.kind" $path)) }}{{ end -}}
{{- if and $rule.match $rule.match.via }}{{ include "kustodian.checkKind" (list $ $rule.match.via.kind (printf "%s.match.via.kind" $path)) }}{{ end -}}
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
Read access (list/watch) for every kind deletionGuard.rules names (providers, dependents, skipIf, via).
*/}}
{{- define "kustodian.ruleReadRules" -}}
{{- include "kustodian.checkRules" . -}}
{{- $root := . -}}
{{- $byGroup := dict -}}
{{- range .Values.deletionGuard.rules -}}
{{- $kinds := list .provider .dependent -}}
{{- if .skipIf }}{{ $kinds = append $kinds .skipIf.kind }}{{ end -}}
{{- if and .match .match.via }}{{ $kinds = append $kinds .match.via.kind }}{{ end -}}
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

{{/*
The DELETE admission rules of every guarded provider: the built-in Rook and ceph-csi-operator
providers (kept equal to rook_rules() by tests/chart), those deletionGuard.rules name, and deletionGuard.extraAdmissionRules.
Shared by the deletion guard's webhooks and the deletion backstop's policy, which must match the same.
*/}}
{{- define "kustodian.guardedResourceRules" -}}
- apiGroups: [ceph.rook.io]
  apiVersions: ["*"]
  operations: [DELETE]
  resources:
    - cephblockpoolradosnamespaces
    - cephblockpools
    - cephbuckettopics
    - cephclusters
    - cephfilesystemmirrors
    - cephfilesystems
    - cephfilesystemsubvolumegroups
    - cephnfses
    - cephobjectrealms
    - cephobjectstoreaccounts
    - cephobjectstores
    - cephobjectzonegroups
    - cephobjectzones
    - cephrbdmirrors
  scope: "*"
- apiGroups: [csi.ceph.io]
  apiVersions: ["*"]
  operations: [DELETE]
  # ceph-csi-operator's objects Rook's CSI drivers run under (tests/chart: kept equal too)
  resources:
    - cephconnections
    - clientprofilemappings
    - clientprofiles
    - drivers
  scope: "*"
{{- with include "kustodian.ruleAdmissionRules" . | trim }}
{{ . }}
{{- end }}
{{- with .Values.deletionGuard.extraAdmissionRules }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
The CEL condition under which a Namespace's DELETE is judged: it is named in
admission.deletionGuard.providerNamespaces ("*" = every namespace: "" here) or carries
admission.deletionGuard.providerNamespaceLabel. Other DELETEs pass it.
*/}}
{{- define "kustodian.providerNamespaceCondition" -}}
{{- $adm := .Values.admission -}}
{{- $nsNames := $adm.deletionGuard.providerNamespaces | default list -}}
{{- if not (has "*" $nsNames) }}
{{- $quoted := list -}}
{{- range $nsNames }}{{- $quoted = append $quoted (squote .) -}}{{- end }}
{{- printf "request.resource.resource != 'namespaces' || oldObject.metadata.name in [%s] || (has(oldObject.metadata.labels) && %s in oldObject.metadata.labels)" (join ", " $quoted) (squote $adm.deletionGuard.providerNamespaceLabel) -}}
{{- end }}
{{- end -}}

{{/* "true" when the deletion backstop is asked for (deletionGuard.enabled and deletionGuard.backstop.enabled). */}}
{{- define "kustodian.backstopWanted" -}}
{{- if and .Values.deletionGuard.enabled (.Values.deletionGuard.backstop | default dict).enabled }}true{{ end -}}
{{- end -}}

{{/*
"true" when the cluster has the BackstopRecord CRD (crds/): served, or given to helm template with
--api-versions kustodian.io/v1alpha1/BackstopRecord, or found by a lookup (Helm installs crds/
before it renders, but Helm 4 renders a first install with the served versions it read before
that: as kustodian.reclaimMutation does for ReclaimSpaceParams). Helm installs crds/ only with a
new release: an upgrade from a release without it renders no backstop, and the NOTES say how to
get it.
*/}}
{{- define "kustodian.backstopCRD" -}}
{{- if or (.Capabilities.APIVersions.Has "kustodian.io/v1alpha1/BackstopRecord") (lookup "apiextensions.k8s.io/v1" "CustomResourceDefinition" "" "backstoprecords.kustodian.io") }}true{{ end -}}
{{- end -}}

{{/* "true" when the deletion backstop is rendered: asked for, and its record's CRD in the cluster. */}}
{{- define "kustodian.backstopEnabled" -}}
{{- if and (include "kustodian.backstopWanted" .) (include "kustodian.backstopCRD" .) }}true{{ end -}}
{{- end -}}

{{/* The deletion backstop's record: BackstopRecords <name>-0..7 and the writers' Lease <name>. */}}
{{- define "kustodian.backstopRecord" -}}
{{ include "kustodian.fullname" . | trunc 52 | trimSuffix "-" }}-backstop
{{- end -}}

{{/*
The CEL expression of a DELETE's key in the deletion backstop's record (policy.deletion.backstop.record_key):
<group>_<resource>_<namespace>_<name>, a Namespace's _namespaces__<name> (its request names the
namespace itself as its namespace); a cluster-scoped object's request has no namespace at all.
*/}}
{{- define "kustodian.backstopKey" -}}
(request.resource.group == '' && request.resource.resource == 'namespaces' ? '_namespaces__' + request.name : request.resource.group + '_' + request.resource.resource + '_' + (has(request.namespace) ? request.namespace : '') + '_' + request.name)
{{- end -}}

{{/* How many BackstopRecords (shards) the record has: policy.deletion.backstop.RECORD_SHARDS (tests/chart keep them equal). */}}
{{- define "kustodian.backstopShards" -}}8{{- end -}}

{{/* The record's BackstopRecord names, as a list. */}}
{{- define "kustodian.backstopShardNames" -}}
{{- $record := include "kustodian.backstopRecord" . -}}
{{- range $i := until (int (include "kustodian.backstopShards" .)) }}
- {{ printf "%s-%d" $record $i }}
{{- end }}
{{- end -}}

{{/*
The DELETEs the backstop's policy cannot judge, so the deletion-guard-strict webhook does, failing
closed: an object carrying kustodian.io/allow-delete-until (CEL has no clock to compare it with),
and one whose record key (group_resource_namespace_name) would be longer than 253 (policy.deletion.backstop.KEY_LIMIT).
Never a Namespace (its DELETE is judged from the record). A cluster-scoped object's request has
no namespace at all (has() guards it: reading it would fail the request).
*/}}
{{- define "kustodian.backstopStrictCondition" -}}
!(request.resource.group == '' && request.resource.resource == 'namespaces') && (size(request.resource.group) + size(request.resource.resource) + size(has(request.namespace) ? request.namespace : '') + size(request.name) + 3 > 253 || (oldObject != null && has(oldObject.metadata.annotations) && 'kustodian.io/allow-delete-until' in oldObject.metadata.annotations))
{{- end -}}

{{/*
Failure policies, in one place (docs/design.md, "Failure policies"). (list $ KEY), KEY an
admission.* key (deletionGuard, reclaimValidation, reclaimConfigValidation, capacityValidation,
reclaimMutation) -> the policy the admin intends for that webhook: admission.KEY.failurePolicy
when set, else derived from its mode: Fail in enforce (it refuses, so it must not be bypassed
while Kustodian is down), Ignore in warn and audit (they never refuse, so they must never block)
and for a webhook without a mode.
*/}}
{{- define "kustodian.failurePolicy" -}}
{{- $root := index . 0 -}}
{{- $adm := index $root.Values.admission (index . 1) | default dict -}}
{{- if $adm.failurePolicy }}{{ $adm.failurePolicy }}
{{- else if eq ($adm.mode | default "") "enforce" }}Fail
{{- else }}Ignore{{ end -}}
{{- end -}}

{{/*
(list $ KEY) -> the failurePolicy a webhook configuration is installed with: always Ignore. A
webhook whose intended policy is Fail is armed by a replica that serves with this very
configuration (kustodian.webhookChecksum, kustodian.failurePolicies): an install or upgrade
whose pods never become ready leaves nothing that refuses.
*/}}
{{- define "kustodian.installedFailurePolicy" -}}
Ignore
{{- end -}}

{{/*
Every rendered webhook's intended failure policy, "name=Policy,..." in a fixed order: the
annotation kustodian.io/failure-policies of both configurations and the webhook's
--webhook-failure-policies carry the same text, and a replica arms only when they are equal.
*/}}
{{- define "kustodian.failurePolicies" -}}
{{- $out := list -}}
{{- if .Values.deletionGuard.enabled -}}
{{- $out = append $out (printf "deletion-guard.kustodian.io=%s" (include "kustodian.failurePolicy" (list . "deletionGuard"))) -}}
{{- end -}}
{{- if .Values.reclaimSpace.enabled -}}
{{- $out = append $out (printf "reclaim-space-validation.kustodian.io=%s" (include "kustodian.failurePolicy" (list . "reclaimValidation"))) -}}
{{- $out = append $out (printf "reclaim-config-validation.kustodian.io=%s" (include "kustodian.failurePolicy" (list . "reclaimConfigValidation"))) -}}
{{- end -}}
{{- if .Values.capacity.enabled -}}
{{- $out = append $out (printf "capacity-validation.kustodian.io=%s" (include "kustodian.failurePolicy" (list . "capacityValidation"))) -}}
{{- end -}}
{{- if include "kustodian.backstopEnabled" . -}}
{{- /* what the deletion backstop cannot judge: Fail in enforce whatever deletionGuard.failurePolicy says */ -}}
{{- $out = append $out (printf "deletion-guard-strict.kustodian.io=%s" (ternary "Fail" "Ignore" (eq .Values.admission.deletionGuard.mode "enforce"))) -}}
{{- end -}}
{{- if and .Values.reclaimSpace.enabled (ne (include "kustodian.reclaimMutation" .) "policy") -}}
{{- $out = append $out (printf "reclaim-space.kustodian.io=%s" (include "kustodian.failurePolicy" (list . "reclaimMutation"))) -}}
{{- end -}}
{{- join "," $out -}}
{{- end -}}

{{/*
A checksum of what shapes the webhook configurations and the webhook process's behaviour (not
its scheduling or replicas), but the modes and failure policies (compared as text, kustodian.failurePolicies): the annotation
kustodian.io/configuration-checksum and the webhook's --webhook-configuration-checksum. A
replica of another configuration (the pods of an upgrade, or those it replaces) never arms.
*/}}
{{- define "kustodian.webhookChecksum" -}}
{{- $adm := deepCopy .Values.admission -}}
{{- range $k, $v := $adm }}{{ if kindIs "map" $v }}{{ $_ := unset $v "mode" }}{{ $_ := unset $v "failurePolicy" }}{{ end }}{{ end -}}
{{- $web := pick .Values.webhook "port" "syncTimeout" "excludeNamespaces" "extraArgs" "extraEnv" -}}
{{- $in := dict "chart" .Chart.Version "release" .Release.Name "namespace" .Release.Namespace "image" (include "kustodian.image" .) "webhook" $web "admission" $adm "deletionGuard" .Values.deletionGuard "reclaimSpace" .Values.reclaimSpace "capacity" .Values.capacity "tls" .Values.tls "service" .Values.service "providerMetrics" .Values.providerMetrics "csiAddonsConfigRole" (include "kustodian.csiAddonsConfigRole" .) -}}
{{- toJson $in | sha256sum | trunc 16 -}}
{{- end -}}

{{/*
"true" when the chart is rendered against a cluster it can read (helm install, upgrade,
--dry-run=server): lookup answers. "" under helm template or --dry-run=client, where every
lookup returns nothing, so no check below can tell a missing object from an unseen one.
*/}}
{{- define "kustodian.clusterVisible" -}}
{{- if lookup "v1" "Namespace" "" "kube-system" }}true{{ end -}}
{{- end -}}

{{/*
"true" when the chart renders the Role (and RoleBinding) that lets the webhook and the
controllers read csi-addons' own ConfigMap, in csi-addons' namespace: reclaimSpace.csiAddonsConfigRole
true (the namespace must exist: with the cluster in sight a missing one fails the render naming
the value), or null (the default) and that namespace exists now. Nothing is ever rendered into a
namespace that may not exist unless the admin asked for it. Without the Role the components do
not read the ConfigMap and run with csi-addons' own defaults (schedule-precedence pvc), as
csi-addons itself does without it.
*/}}
{{- define "kustodian.csiAddonsConfigRole" -}}
{{- $want := .Values.reclaimSpace.csiAddonsConfigRole -}}
{{- $explicit := kindIs "bool" $want -}}
{{- $ns := index (splitList "/" .Values.reclaimSpace.csiAddonsConfig) 0 -}}
{{- if and .Values.reclaimSpace.enabled (or (not $explicit) $want) -}}
{{- $exists := lookup "v1" "Namespace" "" $ns -}}
{{- if $explicit -}}
{{- if and (not $exists) (include "kustodian.clusterVisible" .) -}}
{{- fail (printf "reclaimSpace.csiAddonsConfigRole is true but namespace %q (from reclaimSpace.csiAddonsConfig) does not exist, so its Role cannot be created: install csi-addons first, set reclaimSpace.csiAddonsConfig to the namespace/name csi-addons runs with, or unset reclaimSpace.csiAddonsConfigRole (null: the Role only where that namespace exists; csi-addons' defaults otherwise)" $ns) -}}
{{- end -}}
true
{{- else if $exists -}}
true
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
What the chart needs from the cluster, checked when it can see the cluster (install, upgrade):
a value that cannot work there fails the render naming it, instead of an API error half-way
through the install (or, for a Role, an object in a namespace that does not exist).
*/}}
{{- define "kustodian.checkCluster" -}}
{{- if include "kustodian.clusterVisible" . -}}
{{- $v := .Values -}}
{{- if and $v.nodeAgent.enabled (not (lookup "v1" "Namespace" "" $v.nodeAgent.longhornNamespace)) -}}
{{- fail (printf "nodeAgent.longhornNamespace: namespace %q does not exist, so the node agent could read no Longhorn Node, Replica or Setting (and its Role there cannot be created): set nodeAgent.longhornNamespace to the namespace Longhorn runs in, or install Longhorn first" $v.nodeAgent.longhornNamespace) -}}
{{- end -}}
{{- $monitoring := dict "metrics.serviceMonitor.enabled" (list $v.metrics.serviceMonitor.enabled "ServiceMonitor") "metrics.podMonitor.enabled" (list (and $v.metrics.podMonitor.enabled $v.nodeAgent.enabled) "PodMonitor") "metrics.prometheusRule.enabled" (list $v.metrics.prometheusRule.enabled "PrometheusRule") -}}
{{- range $value := keys $monitoring | sortAlpha -}}
{{- $on := index (get $monitoring $value) 0 -}}
{{- $kind := index (get $monitoring $value) 1 -}}
{{- if and $on (not ($.Capabilities.APIVersions.Has (printf "monitoring.coreos.com/v1/%s" $kind))) -}}
{{- fail (printf "%s is true but the cluster does not serve monitoring.coreos.com/v1 %s (the Prometheus Operator's CRDs): install the Prometheus Operator, or set %s=false" $value $kind $value) -}}
{{- end -}}
{{- end -}}
{{- range $value, $ns := dict "metrics.serviceMonitor.namespace" (ternary $v.metrics.serviceMonitor.namespace "" (and $v.metrics.serviceMonitor.enabled true)) "metrics.podMonitor.namespace" (ternary $v.metrics.podMonitor.namespace "" (and $v.metrics.podMonitor.enabled $v.nodeAgent.enabled)) -}}
{{- if and $ns (ne $ns $.Release.Namespace) (not (lookup "v1" "Namespace" "" $ns)) -}}
{{- fail (printf "%s: namespace %q does not exist, so the monitor cannot be created there: create it, or leave %s empty (the release namespace)" $value $ns $value) -}}
{{- end -}}
{{- end -}}
{{- if and (include "kustodian.webhookEnabled" .) (eq $v.tls.mode "cert-manager") (not (.Capabilities.APIVersions.Has "cert-manager.io/v1/Certificate")) -}}
{{- fail "tls.mode is cert-manager but the cluster does not serve cert-manager.io/v1 Certificate: install cert-manager, or set tls.mode=builtin (the default: the webhook issues and renews its own certificate)" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
"true" on OpenShift (security.openshift.io/v1 served, or given to helm template with
--api-versions security.openshift.io/v1): its restricted-v2 SCC assigns every pod a UID and
fsGroup from its namespace's range and refuses a fixed one outside it, so the chart's fixed
65532 (the image's user) is left out there (kustodian.podSecurityContext).
*/}}
{{- define "kustodian.openshift" -}}
{{- if .Capabilities.APIVersions.Has "security.openshift.io/v1" }}true{{ end -}}
{{- end -}}

{{/*
How a new PVC gets its reclaim-space schedule (reclaimSpace.mutation): "policy" (the
MutatingAdmissionPolicy of reclaim-mutation-policy.yaml alone: no webhook in the PVC CREATE path),
"webhook" (the mutating webhook alone) or "both" (the policy, then the webhook: the API server runs
MutatingAdmissionPolicies before mutating webhooks, the webhook finds the policy's work done and adds
what CEL cannot compute, a staggered schedule). auto: where the API server serves
MutatingAdmissionPolicy v1 (Kubernetes >= 1.36) and the ReclaimSpaceParams CRD (crds/) and the
controllers run (they write its params), "both" when reclaimSpace.config sets a stagger-window and
"policy" otherwise; else "webhook". policy or both without what they need fails the render naming it.
*/}}
{{- define "kustodian.reclaimMutation" -}}
{{- $want := .Values.reclaimSpace.mutation -}}
{{- $served := .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy" -}}
{{- /* Helm installs crds/ before it renders, but Helm 4 renders with the served versions it read
before that: the CRD is also looked up live, so a first install and the upgrade after it choose the same path */ -}}
{{- $params := or (.Capabilities.APIVersions.Has "kustodian.io/v1alpha1/ReclaimSpaceParams") (lookup "apiextensions.k8s.io/v1" "CustomResourceDefinition" "" "reclaimspaceparams.kustodian.io") -}}
{{- if or (eq $want "policy") (eq $want "both") -}}
{{- if not $served -}}
{{- fail (printf "reclaimSpace.mutation=%s but the API server does not serve admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (Kubernetes >= 1.36): set reclaimSpace.mutation=auto or webhook (helm template: add --api-versions admissionregistration.k8s.io/v1/MutatingAdmissionPolicy if your cluster serves it)" $want) -}}
{{- end -}}
{{- if not $params -}}
{{- fail (printf "reclaimSpace.mutation=%s but the ReclaimSpaceParams CRD (kustodian.io/v1alpha1) is not installed (Helm installs crds/ only with a new release): apply it first with kubectl apply -f charts/kustodian/crds/ (helm template: add --api-versions kustodian.io/v1alpha1/ReclaimSpaceParams)" $want) -}}
{{- end -}}
{{- if not .Values.controllers.enabled -}}
{{- fail (printf "reclaimSpace.mutation=%s but controllers.enabled is false: the controllers write the policy's params, without them it would change no PVC; set controllers.enabled=true, or reclaimSpace.mutation=webhook" $want) -}}
{{- end -}}
{{- $want -}}
{{- else if and (eq $want "auto") $served $params .Values.controllers.enabled -}}
{{- if hasKey (.Values.reclaimSpace.config | default dict) "stagger-window" }}both{{ else }}policy{{ end -}}
{{- else -}}
webhook
{{- end -}}
{{- end -}}

{{/* The ReclaimSpaceParams object (release namespace) the controllers write the reclaim-space policy's params into. */}}
{{- define "kustodian.reclaimParamsName" -}}
{{- printf "%s-reclaim-space" (include "kustodian.fullname" .) | trunc 253 -}}
{{- end -}}
