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
