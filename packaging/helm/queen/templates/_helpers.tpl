{{/*
queen.fullname: the release name, or release-chart when the release name does not
contain the chart's name; at most 63 characters (a DNS label).
*/}}
{{- define "queen.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "queen.proxyName" -}}
{{- printf "%s-proxy" (include "queen.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "queen.secretName" -}}
{{- printf "%s-secrets" (include "queen.fullname" .) -}}
{{- end -}}

{{- define "queen.proxySecretName" -}}
{{- printf "%s-secrets" (include "queen.proxyName" .) -}}
{{- end -}}

{{/* Labels on every object of the chart. */}}
{{- define "queen.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "queen.brokerSelector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: broker
{{- end -}}

{{- define "queen.proxySelector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: proxy
{{- end -}}

{{- define "queen.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{- define "queen.proxyImage" -}}
{{- if .Values.proxy.image.repository -}}
{{- printf "%s:%s" .Values.proxy.image.repository (.Values.proxy.image.tag | default .Chart.AppVersion) -}}
{{- else -}}
{{- include "queen.image" . -}}
{{- end -}}
{{- end -}}

{{/* The brokers' URL inside the cluster: the Service, which balances over the ready pods. */}}
{{- define "queen.brokerURL" -}}
{{- printf "http://%s.%s.svc:%d" (include "queen.fullname" .) .Release.Namespace (int .Values.service.port) -}}
{{- end -}}

{{/*
queen.secretEnv renders one env entry read from a Secret: the existing Secret when
one is named, else the chart's Secret when the value is set, else nothing.
Arguments: name (the variable), value, existing, key, own (the chart's Secret) and
ownKey (its key there; default: name).
*/}}
{{- define "queen.secretEnv" -}}
{{- if .existing }}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .existing }}
      key: {{ .key }}
{{- else if .value }}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .own }}
      key: {{ .ownKey | default .name }}
{{- end }}
{{- end -}}

{{/* The chart's broker Secret is needed when any broker secret is given inline. */}}
{{- define "queen.hasOwnSecret" -}}
{{- $v := .Values -}}
{{- if or (and $v.postgresql.password (not $v.postgresql.existingSecret)) (and $v.auth.secret (not $v.auth.existingSecret)) (and $v.encryption.key (not $v.encryption.existingSecret)) -}}
true
{{- end -}}
{{- end -}}

{{- define "queen.proxyHasOwnSecret" -}}
{{- $p := .Values.proxy -}}
{{- if or (and $p.postgresql.password (not $p.postgresql.existingSecret)) (and $p.adminToken (not $p.adminTokenExistingSecret)) (and $p.sessionKey (not $p.sessionKeyExistingSecret)) -}}
true
{{- end -}}
{{- end -}}

{{/* Whether the proxy has an admin token, which its metrics need. */}}
{{- define "queen.proxyHasAdminToken" -}}
{{- if or .Values.proxy.adminToken .Values.proxy.adminTokenExistingSecret -}}
true
{{- end -}}
{{- end -}}

{{/* The Secret and key holding the proxy's admin token. */}}
{{- define "queen.proxyAdminTokenRef" -}}
{{- if .Values.proxy.adminTokenExistingSecret -}}
name: {{ .Values.proxy.adminTokenExistingSecret }}
key: {{ .Values.proxy.adminTokenExistingSecretKey }}
{{- else -}}
name: {{ include "queen.proxySecretName" . }}
key: QUEEN_PROXY_ADMIN_TOKEN
{{- end -}}
{{- end -}}

{{/* The drain timings must fit: the delay below the timeout. */}}
{{- define "queen.checkDrain" -}}
{{- if and (gt (int .shutdownDelaySeconds) 0) (ge (int .shutdownDelaySeconds) (int .shutdownTimeoutSeconds)) -}}
{{- fail (printf "%s: shutdownDelaySeconds (%v) must be less than shutdownTimeoutSeconds (%v)" .where .shutdownDelaySeconds .shutdownTimeoutSeconds) -}}
{{- end -}}
{{- end -}}

{{/* Whether the cluster serves the Prometheus Operator's API. */}}
{{- define "queen.hasMonitoringAPI" -}}
{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" -}}
true
{{- end -}}
{{- end -}}

{{/*
queen.quantityBytes: a size written as <n>Mi, <n>Gi or <n>Ti (the forms the schema
allows) in bytes.
*/}}
{{- define "queen.quantityBytes" -}}
{{- $q := toString . -}}
{{- $units := dict "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 -}}
{{- $unit := substr (int (sub (len $q) 2)) (len $q) $q -}}
{{- mul (atoi (trimSuffix $unit $q)) (get $units $unit) -}}
{{- end -}}

{{/* The size of the spool's volume in bytes. */}}
{{- define "queen.spoolBytes" -}}
{{- if eq .Values.spool.type "persistentVolumeClaim" -}}
{{- include "queen.quantityBytes" .Values.spool.persistentVolumeClaim.size -}}
{{- else -}}
{{- include "queen.quantityBytes" .Values.spool.emptyDir.sizeLimit -}}
{{- end -}}
{{- end -}}

{{/*
queen.checkConfig fails when the config map of extra settings names a variable the
chart sets itself (a duplicate key would make the object invalid) or a secret.
Arguments: config, managed (the chart's names), secrets (names that belong in a Secret),
where (the values path, for the message) and secretHint (where a secret goes instead;
default: the chart's own values). Secrets are checked first: the chart sets some too,
and for those the message is about the secret.
*/}}
{{- define "queen.checkConfig" -}}
{{- range $name, $_ := .config -}}
{{- if has $name $.secrets -}}
{{- fail (printf "%s.%s: a secret, kept out of the ConfigMap; %s" $.where $name ($.secretHint | default "the secrets the chart takes are in its own values, each with an existingSecret (docs/kubernetes.md, Helm)")) -}}
{{- end -}}
{{- if has $name $.managed -}}
{{- fail (printf "%s.%s: set by the chart itself; use its own value instead" $.where $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
queen.brokerChartValues: every variable the chart sets for the broker, in its ConfigMap
or its env, with what to do instead of setting it again (YAML, read with fromYaml). The
one list behind both config's and secretEnv's refusals: a variable the chart comes to
set goes here.
*/}}
{{- define "queen.brokerChartValues" -}}
PG_HOST: use postgresql.host
PG_PORT: use postgresql.port
PG_DB: use postgresql.database
PG_USER: use postgresql.user
PG_USE_SSL: use postgresql.useSSL
PG_PASSWORD: use postgresql.existingSecret (or postgresql.password)
DB_POOL_SIZE: use postgresql.poolSize
LOG_LEVEL: use logLevel
QUEEN_LOG_FORMAT: it is always json, the cluster's log collector's format
QUEEN_SHUTDOWN_DELAY: use drain.shutdownDelaySeconds
QUEEN_SHUTDOWN_TIMEOUT: use drain.shutdownTimeoutSeconds
QUEEN_SPOOL_MAX_BYTES: use spool.maxBytes
JWT_ENABLED: use auth.enabled
JWT_ALGORITHM: use auth.algorithm
JWT_SECRET: use auth.existingSecret (or auth.secret)
QUEEN_ENCRYPTION_KEY: use encryption.existingSecret (or encryption.key)
QUEEN_TENANCY_HEADER: use proxy.tenancyHeader
QUEEN_INSTANCE: it is always the pod's name
FILE_BUFFER_DIR: it is always the spool volume's mount
GOMEMLIMIT: use goMemLimit
PORT: it is always 6632, the container's port the probes and the Service use
{{- end -}}

{{/*
queen.checkSecretEnv fails on a secretEnv entry the broker would not read as meant: a
variable the chart sets itself (the pod would get it twice, and which one wins is not
what the values say), a name that is not one of the broker's settings (a typo would
otherwise reach the pod and set nothing), or a name also under config (the ConfigMap's
value would be silently overridden). files/broker-settings.txt lists the broker's settings,
those of docs/configuration.md, one a line.
*/}}
{{- define "queen.checkSecretEnv" -}}
{{- $chartValues := include "queen.brokerChartValues" . | fromYaml -}}
{{- $known := .Files.Lines "files/broker-settings.txt" -}}
{{- range $name, $_ := .Values.secretEnv -}}
{{- if hasKey $chartValues $name -}}
{{- fail (printf "secretEnv.%s: set by the chart itself; %s" $name (get $chartValues $name)) -}}
{{- end -}}
{{- if not (has $name $known) -}}
{{- fail (printf "secretEnv.%s: not a setting the broker reads; use a name docs/configuration.md lists" $name) -}}
{{- end -}}
{{- if hasKey $.Values.config $name -}}
{{- fail (printf "secretEnv.%s: also under config; give it in one place, secretEnv for a secret" $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
