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

{{/* The environment that gives a ddrun process its secrets: the job key,
and the NATS password of role (coordinator or worker) as NATS_PASSWORD. */}}
{{- define "ddrun.secretEnv" -}}
{{- $v := .ctx.Values.auth -}}
{{- if $v.jobKeySecret }}
- name: DDRUN_JOB_KEY
  valueFrom: {secretKeyRef: {name: {{ $v.jobKeySecret }}, key: job-key}}
{{- end }}
{{- if $v.natsSecret }}
- name: NATS_PASSWORD
  valueFrom: {secretKeyRef: {name: {{ $v.natsSecret }}, key: {{ .role }}-password}}
{{- end }}
{{- end -}}

{{/* The NATS login flags of role; the password comes from NATS_PASSWORD
(Kubernetes expands $(NATS_PASSWORD) in args). */}}
{{- define "ddrun.natsLogin" -}}
{{- if .ctx.Values.auth.natsSecret -}}
"--nats-user", "ddrun-{{ .role }}", "--nats-password", "$(NATS_PASSWORD)",
{{- end -}}
{{- end -}}
