{{/* The traffic slot, empty without one. (.Values.manent).slot does not fail when manent is absent. */}}
{{- define "strict-schema-slot.slot" -}}
{{- (.Values.manent).slot | default "" }}
{{- end }}

{{/* Release-chart, plus -<slot> in a traffic rollout: the chart names its objects per slot itself. */}}
{{- define "strict-schema-slot.fullname" -}}
{{- $slot := include "strict-schema-slot.slot" . }}
{{- $base := printf "%s-%s" .Release.Name .Chart.Name | trunc 61 | trimSuffix "-" }}
{{- if $slot }}{{ printf "%s-%s" $base $slot }}{{ else }}{{ $base }}{{ end }}
{{- end }}

{{- define "strict-schema-slot.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- with include "strict-schema-slot.slot" . }}
manent.io/track: {{ . }}
{{- end }}
{{- end }}
