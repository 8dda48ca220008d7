{{/* Cluster-scoped objects carry the release namespace in their names: two releases of this chart in two
namespaces of one cluster do not collide. */}}
{{- define "hook-parity.wide" -}}
{{ .Release.Name }}-{{ .Release.Namespace }}
{{- end -}}

{{- define "hook-parity.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
