{{/* The release's name prefix: <release>-ddrun, or the release name when
it already contains "ddrun". At most 40 characters, so that StatefulSet pod
names and their DNS names stay within Kubernetes' limits. */}}
{{- define "ddrun.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Selector labels of component .component. */}}
{{- define "ddrun.selectorLabels" -}}
app.kubernetes.io/name: {{ .ctx.Chart.Name }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Standard labels of component .component. */}}
{{- define "ddrun.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" }}
{{ include "ddrun.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: ddrun
{{- end -}}

{{- define "ddrun.natsURL" -}}
{{- if .Values.natsURL -}}
{{ .Values.natsURL }}
{{- else if .Values.nats.enabled -}}
nats://{{ include "ddrun.fullname" . }}-nats:4222
{{- else -}}
{{ fail "natsURL is empty and nats.enabled is false: give natsURL, or enable the chart's NATS server" }}
{{- end -}}
{{- end -}}

{{- define "ddrun.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}

{{/* The Secret holding the job key: the one named in auth, else the
generated one (auth.generate), else, unless auth.insecure, the chart's
default <fullname>-job-key; and the one holding the NATS passwords: the
one named in auth, else the generated one, else none. */}}
{{- define "ddrun.jobKeySecret" -}}
{{- if .Values.auth.jobKeySecret -}}
{{- .Values.auth.jobKeySecret -}}
{{- else if .Values.auth.generate -}}
{{- printf "%s-auth" (include "ddrun.fullname" .) -}}
{{- else if not .Values.auth.insecure -}}
{{- printf "%s-job-key" (include "ddrun.fullname" .) -}}
{{- end -}}
{{- end -}}
{{- define "ddrun.natsSecret" -}}
{{- .Values.auth.natsSecret | default (ternary (printf "%s-auth" (include "ddrun.fullname" .)) "" .Values.auth.generate) -}}
{{- end -}}

{{/* The environment that gives a ddrun process its secrets: the job key
(DDRUN_JOB_KEY) and the NATS password of role (coordinator or worker) as
DDRUN_NATS_PASSWORD, with the user as DDRUN_NATS_USER: never on a command
line. */}}
{{- define "ddrun.secretEnv" -}}
{{- with include "ddrun.jobKeySecret" .ctx }}
- name: DDRUN_JOB_KEY
  valueFrom: {secretKeyRef: {name: {{ . }}, key: job-key}}
{{- end }}
{{- with include "ddrun.natsSecret" .ctx }}
- name: DDRUN_NATS_USER
  value: ddrun-{{ $.role }}
- name: DDRUN_NATS_PASSWORD
  valueFrom: {secretKeyRef: {name: {{ . }}, key: {{ $.role }}-password}}
{{- end }}
{{- end -}}

{{/* The job id: job.id, else <fullname>-<8 hex digits of the hash of the
model and its arguments>. */}}
{{- define "ddrun.jobID" -}}
{{- $c := .Values.coordinator.job -}}
{{- $c.id | default (printf "%s-%s" (include "ddrun.fullname" .) (printf "%s %s %v" $c.model (join " " $c.args) .Values.workers.replicas | sha256sum | trunc 8)) -}}
{{- end -}}

{{/* Probes on the --metrics endpoint's path .path. */}}
{{- define "ddrun.httpProbe" -}}
httpGet: {path: {{ .path }}, port: metrics}
periodSeconds: {{ .period | default 10 }}
failureThreshold: {{ .failures | default 3 }}
{{- end -}}
