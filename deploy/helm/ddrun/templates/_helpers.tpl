{{- define "ddrun.natsURL" -}}
{{- if .Values.nats.enabled -}}
nats://{{ .Release.Name }}-nats:4222
{{- else -}}
{{ required "nats.url is required when nats.enabled is false" .Values.nats.url }}
{{- end -}}
{{- end -}}

{{- define "ddrun.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}
