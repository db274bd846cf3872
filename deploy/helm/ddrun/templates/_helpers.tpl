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

{{/* The environment that gives a ddrun process its secrets: the job key
(DDRUN_JOB_KEY) and the NATS password of role (coordinator or worker) as
DDRUN_NATS_PASSWORD, which the binaries read: never on a command line. */}}
{{- define "ddrun.secretEnv" -}}
{{- $v := .ctx.Values.auth -}}
{{- if $v.jobKeySecret }}
- name: DDRUN_JOB_KEY
  valueFrom: {secretKeyRef: {name: {{ $v.jobKeySecret }}, key: job-key}}
{{- end }}
{{- if $v.natsSecret }}
- name: DDRUN_NATS_PASSWORD
  valueFrom: {secretKeyRef: {name: {{ $v.natsSecret }}, key: {{ .role }}-password}}
{{- end }}
{{- end -}}

{{/* The NATS login flags of role; the password comes from
DDRUN_NATS_PASSWORD (ddrun.secretEnv). */}}
{{- define "ddrun.natsLogin" -}}
{{- if .ctx.Values.auth.natsSecret -}}
"--nats-user", "ddrun-{{ .role }}",
{{- end -}}
{{- end -}}
