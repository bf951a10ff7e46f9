{{/* ---- Names and labels ------------------------------------------------------------------------------ */}}

{{- define "gatehouse.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gatehouse.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The admin API's Service. A Service's name is a DNS-1035 label of 63 characters at most: the suffix is kept and
     the fullname shortened to fit. */}}
{{- define "gatehouse.adminServiceName" -}}
{{- printf "%s-admin" (include "gatehouse.fullname" . | trunc 57 | trimSuffix "-") }}
{{- end }}

{{- define "gatehouse.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gatehouse.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gatehouse.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gatehouse.labels" -}}
helm.sh/chart: {{ include "gatehouse.chart" . }}
{{ include "gatehouse.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: mcp-gateway
{{- end }}

{{- define "gatehouse.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gatehouse.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* repository@digest when image.digest pins one (a tag may be moved to other contents), else repository:tag. */}}
{{- define "gatehouse.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/* ---- Fixed paths in the pod ------------------------------------------------------------------------- */}}

{{/* The image's GATEHOUSE_CONFIG points here; the ConfigMap is mounted as a directory (no subPath) so the
     kubelet's updates reach the file and Gatehouse's hot reload sees them. */}}
{{- define "gatehouse.configDir" -}}/etc/gatehouse{{- end }}
{{- define "gatehouse.configFile" -}}/etc/gatehouse/gatehouse.yaml{{- end }}
{{/* Secrets referenced with secretFile are mounted read-only under here, one directory per Secret. */}}
{{- define "gatehouse.secretsDir" -}}/etc/gatehouse-secrets{{- end }}

{{/* ---- Validation of values that the schema cannot express well ------------------------------------- */}}

{{- define "gatehouse.validate" -}}
{{- $v := .Values }}
{{- if not $v.image.repository }}
{{- fail "image.repository is required: no Gatehouse image is published for the chart to pull. Build one from the repository's Dockerfile, push it to a registry your cluster pulls from and name it in full (--set image.repository=registry.example.com/platform/gatehouse); image.tag defaults to the chart's appVersion" }}
{{- end }}
{{- if eq $v.mode "sidecar" }}
{{- if and $v.server.nativeSidecar (not (semverCompare ">=1.29-0" .Capabilities.KubeVersion.Version)) }}
{{- fail (printf "server.nativeSidecar needs Kubernetes 1.29 or later (this is %s): an older API server drops an init container's restartPolicy, and the server would then run as an init container that never exits, so the pod would never start" .Capabilities.KubeVersion.Version) }}
{{- end }}
{{- /* Container names are unique across a pod's containers and init containers: the Deployment's has `gatehouse`,
       the helm test pod's `doctor`, and the server runs in both. */}}
{{- if has $v.server.name (list "gatehouse" "doctor") }}
{{- fail (printf "server.name %q is the name of the chart's own container (gatehouse in the Deployment, doctor in the helm test pod), and the API server refuses a pod with two containers of one name: choose another (mcp-server, say)" $v.server.name) }}
{{- end }}
{{- if not $v.server.image.repository }}
{{- fail "mode: sidecar needs server.image.repository (the MCP server container to put Gatehouse in front of); use mode: standalone for an existing server" }}
{{- end }}
{{- if or (eq (int $v.server.port) (int $v.listen.port)) (and $v.metrics.enabled (eq (int $v.server.port) (int $v.metrics.port))) }}
{{- fail (printf "server.port %d clashes with a Gatehouse port (listen.port %d, metrics.port %d): the containers share the pod's network" (int $v.server.port) (int $v.listen.port) (int $v.metrics.port)) }}
{{- end }}
{{- else if not $v.upstream.url }}
{{- fail "mode: standalone needs upstream.url, the MCP endpoint of an existing server (e.g. http://my-mcp.my-ns.svc.cluster.local:3000/mcp)" }}
{{- end }}
{{- /* Gatehouse matches the MCP endpoint before its own paths: there, the kubelet's probes (no credentials) would get
       401, and the pod would restart forever (liveness) or never be ready. */}}
{{- if has $v.listen.path (list "/healthz" "/readyz" "/health") }}
{{- fail (printf "listen.path %s is Gatehouse's own endpoint (/healthz, /readyz and /health; the chart's liveness and readiness probes go there): the MCP endpoint would take its requests and answer the probes 401, and the pods would restart forever. Use another path (/mcp)" $v.listen.path) }}
{{- end }}
{{- if and (not $v.auth.apiKeys) (not $v.auth.oauth) }}
{{- fail "Gatehouse listens on 0.0.0.0 in the pod and refuses to serve without authentication: set auth.apiKeys (with auth.apiKeysSecret) or auth.oauth" }}
{{- end }}
{{- if and $v.auth.oauth (not $v.listen.publicUrl) }}
{{- fail "auth.oauth needs listen.publicUrl: it is the OAuth resource and the expected token audience" }}
{{- end }}
{{- if and $v.metrics.enabled (eq (int $v.metrics.port) (int $v.listen.port)) }}
{{- fail (printf "metrics.port %d clashes with listen.port %d: Gatehouse binds both on 0.0.0.0 and would not start" (int $v.metrics.port) (int $v.listen.port)) }}
{{- end }}
{{- if and $v.metrics.enabled (eq (int $v.service.port) (int $v.service.metricsPort)) }}
{{- fail (printf "service.port %d is also service.metricsPort: a Service names each port once" (int $v.service.port)) }}
{{- end }}
{{- if and $v.metrics.serviceMonitor.enabled (not $v.metrics.enabled) }}
{{- fail "metrics.serviceMonitor.enabled needs metrics.enabled" }}
{{- end }}
{{- if $v.metrics.serviceMonitor.enabled }}
{{- /* Prometheus refuses a scrape whose timeout is longer than its interval (the operator drops the ServiceMonitor):
       Gatehouse would go unscraped. The schema allows one number and one unit each. */}}
{{- $unitMs := dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000 }}
{{- $sm := $v.metrics.serviceMonitor }}
{{- $intervalMs := mul (regexFind "^[0-9]+" $sm.interval | int64) (get $unitMs (regexFind "[a-z]+$" $sm.interval)) }}
{{- $timeoutMs := mul (regexFind "^[0-9]+" $sm.scrapeTimeout | int64) (get $unitMs (regexFind "[a-z]+$" $sm.scrapeTimeout)) }}
{{- if gt $timeoutMs $intervalMs }}
{{- fail (printf "metrics.serviceMonitor.scrapeTimeout %s is longer than metrics.serviceMonitor.interval %s: Prometheus refuses such a scrape (the operator drops the ServiceMonitor) and Gatehouse would go unscraped; lower scrapeTimeout or raise interval" $sm.scrapeTimeout $sm.interval) }}
{{- end }}
{{- end }}
{{- if and $v.egressProxy.enabled (ne $v.mode "sidecar") }}
{{- fail "egressProxy is for sidecar mode: it proxies the connections of the MCP server container in the same pod" }}
{{- end }}
{{- if and $v.egressProxy.enabled (has (int $v.egressProxy.port) (list (int $v.listen.port) (int $v.metrics.port) (int $v.server.port))) }}
{{- fail (printf "egressProxy.port %d clashes with another port of the pod" (int $v.egressProxy.port)) }}
{{- end }}
{{- if and $v.admin.enabled (not $v.admin.token) (not $v.admin.groups) }}
{{- fail "admin.enabled needs admin.token (secret-capable: { secretFile: { name, key } }) or admin.groups (with auth.oauth): nobody could use the admin API otherwise" }}
{{- end }}
{{- if and $v.admin.groups (not $v.auth.oauth) }}
{{- fail "admin.groups needs auth.oauth: the groups are read from verified access tokens" }}
{{- end }}
{{- if $v.admin.enabled }}
{{- $taken := list (int $v.listen.port) }}
{{- if $v.metrics.enabled }}{{ $taken = append $taken (int $v.metrics.port) }}{{ end }}
{{- if $v.egressProxy.enabled }}{{ $taken = append $taken (int $v.egressProxy.port) }}{{ end }}
{{- if eq $v.mode "sidecar" }}{{ $taken = append $taken (int $v.server.port) }}{{ end }}
{{- if has (int $v.admin.port) $taken }}
{{- fail (printf "admin.port %d clashes with another port of the pod" (int $v.admin.port)) }}
{{- end }}
{{- end }}
{{- /* Gatehouse runs as a non-root user with every capability dropped (securityContext), so it cannot bind a
     port below net.ipv4.ip_unprivileged_port_start (1024 unless the runtime lowers it: containerd 2 does, CRI-O
     and containerd 1 do not): the pod would crash-loop on one runtime and not another. Such a port needs the
     sysctl set in podSecurityContext.sysctls (a safe sysctl, allowed by default), which works on every runtime. */}}
{{- $unprivilegedStart := 1024 }}
{{- range $v.podSecurityContext.sysctls | default list }}{{ if eq .name "net.ipv4.ip_unprivileged_port_start" }}{{ $unprivilegedStart = int .value }}{{ end }}{{ end }}
{{- $ports := list (list "listen.port" $v.listen.port "service.port") }}
{{- if $v.metrics.enabled }}{{ $ports = append $ports (list "metrics.port" $v.metrics.port "service.metricsPort") }}{{ end }}
{{- if $v.admin.enabled }}{{ $ports = append $ports (list "admin.port" $v.admin.port "admin.service.port") }}{{ end }}
{{- if $v.egressProxy.enabled }}{{ $ports = append $ports (list "egressProxy.port" $v.egressProxy.port "") }}{{ end }}
{{- range $ports }}
{{- if lt (int (index . 1)) $unprivilegedStart }}
{{- $service := ternary (printf "; the Service's port (%s) may stay %d, it maps to the container port" (index . 2) (int (index . 1))) "" (ne (index . 2) "") }}
{{- fail (printf "%s %d is below %d: Gatehouse runs as a non-root user without capabilities and could not bind it (the pod would crash-loop). Use a port of 1024 or more (8080, say)%s; or lower the bound with podSecurityContext.sysctls: [{ name: net.ipv4.ip_unprivileged_port_start, value: \"%d\" }]" (index . 0) (int (index . 1)) $unprivilegedStart $service (int (index . 1))) }}
{{- end }}
{{- end }}
{{- if and $v.admin.service.enabled (not $v.admin.enabled) }}
{{- fail "admin.service.enabled needs admin.enabled" }}
{{- end }}
{{- if and $v.admin.service.enabled $v.networkPolicy.enabled (not $v.networkPolicy.admin.from) }}
{{- fail "admin.service.enabled with the NetworkPolicy on needs networkPolicy.admin.from: the peers that may reach the admin API (no one else can)" }}
{{- end }}
{{- if and (eq $v.store.kind "redis") (not $v.store.url) }}
{{- fail "store.kind: redis needs store.url (secret-capable: { secretKeyRef: { name, key } })" }}
{{- end }}
{{- if eq $v.store.kind "sqlite" }}
{{- /* The root filesystem is read-only and the working directory is /data, the one writable volume (and the
       claim, with persistence): the file, its -wal and -shm must be there. */}}
{{- $file := ternary (clean $v.store.path) (clean (printf "/data/%s" $v.store.path)) (isAbs $v.store.path) }}
{{- $writable := hasPrefix "/data/" $file }}
{{- range $v.extraVolumeMounts }}{{ if and (not .readOnly) (hasPrefix (printf "%s/" (clean .mountPath)) $file) }}{{ $writable = true }}{{ end }}{{ end }}
{{- if not $writable }}
{{- fail (printf "store.path %s is not a file under /data (or a writable extraVolumeMounts path): the root filesystem is read-only and /data is the store's volume (use e.g. /data/gatehouse.db)" $v.store.path) }}
{{- end }}
{{- end }}
{{- if $v.autoscaling.enabled }}
{{- /* An autoscaling/v2 HPA without metrics is defaulted by the API server to 80% average CPU utilization: a
       target the values turned off would come back, and unchecked against the requests below. */}}
{{- if not (or $v.autoscaling.targetCPUUtilizationPercentage $v.autoscaling.targetMemoryUtilizationPercentage) }}
{{- fail "autoscaling.enabled needs autoscaling.targetCPUUtilizationPercentage or autoscaling.targetMemoryUtilizationPercentage: an HPA with neither is scaled on CPU at 80% by the API server's default, not on nothing" }}
{{- end }}
{{- if gt (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas) }}
{{- fail (printf "autoscaling.minReplicas %d is above autoscaling.maxReplicas %d" (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas)) }}
{{- end }}
{{- /* Utilization is the pod's usage over the requests of all its containers: a container without a request
       leaves the HPA with <unknown> (FailedGetResourceMetric), and it never scales. */}}
{{- range $metric := list (list "cpu" "targetCPUUtilizationPercentage") (list "memory" "targetMemoryUtilizationPercentage") }}
{{- $resource := index $metric 0 }}
{{- if index $v.autoscaling (index $metric 1) }}
{{- $missing := list }}
{{- if not (get (($v.resources | default dict).requests | default dict) $resource) }}{{ $missing = append $missing (printf "resources.requests.%s" $resource) }}{{ end }}
{{- if and (eq $v.mode "sidecar") (not (get (($v.server.resources | default dict).requests | default dict) $resource)) }}{{ $missing = append $missing (printf "server.resources.requests.%s" $resource) }}{{ end }}
{{- if $missing }}
{{- fail (printf "autoscaling.%s needs %s: utilization is measured against the requests of every container in the pod, and the HPA cannot compute it otherwise" (index $metric 1) (join " and " $missing)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- /* Volume names are unique in a pod, mount paths in a container: an extra one that takes the chart's would have
       the API server refuse the Deployment (Duplicate value; must be unique) after the other objects were made. */}}
{{- $secretFiles := include "gatehouse.secretFileNames" . | fromJsonArray }}
{{- $volumes := list "config" "data" "tmp" "server-tmp" }}
{{- $mounts := list (include "gatehouse.configDir" .) "/data" "/tmp" }}
{{- with include "gatehouse.stdioHome" . }}{{ $volumes = append $volumes "home" }}{{ $mounts = append $mounts . }}{{ end }}
{{- range $secretFiles }}
{{- $volumes = append $volumes (include "gatehouse.secretVolumeName" .) }}
{{- $mounts = append $mounts (printf "%s/%s" (include "gatehouse.secretsDir" $) .) }}
{{- end }}
{{- range $i, $vol := $v.extraVolumes }}
{{- if has $vol.name $volumes }}
{{- fail (printf "extraVolumes[%d].name %q is a volume of the chart's own (%s), and a pod names each volume once: choose another name" $i $vol.name (join ", " $volumes)) }}
{{- end }}
{{- end }}
{{- range $list := list (list "extraVolumeMounts" $v.extraVolumeMounts $mounts "dataVolume, tmpVolume, homeVolume and the Secret references size or fill them") (list "server.volumeMounts" (ternary $v.server.volumeMounts list (eq $v.mode "sidecar")) (list "/tmp") "server.tmpVolume.sizeLimit sizes it") }}
{{- range $i, $m := index $list 1 }}
{{- if has (clean $m.mountPath) (index $list 2) }}
{{- fail (printf "%s[%d].mountPath %s is a mount of the chart's own (%s; %s), and a container mounts each path once: mount below it or elsewhere" (index $list 0) $i $m.mountPath (join ", " (index $list 2)) (index $list 3)) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $k, $_ := include "gatehouse.selectorLabels" . | fromYaml }}
{{- if hasKey ($v.podLabels | default dict) $k }}
{{- fail (printf "podLabels.%s is a label of the Deployment's selector: another value would leave the pods unselected (the API server refuses the Deployment); use a label of your own" $k) }}
{{- end }}
{{- end }}
{{- if hasKey ($v.podAnnotations | default dict) "checksum/config" }}
{{- fail "podAnnotations.checksum/config is the chart's hash of the config, which rolls the pods when it changes: to keep pods from rolling on a config change set rollOnConfigChange: false instead" }}
{{- end }}
{{- if and (eq $v.store.kind "redis") $v.store.persistence.enabled }}
{{- fail "store.persistence is for the sqlite store; with store.kind: redis the state lives in Redis" }}
{{- end }}
{{- if and $v.store.sentinel $v.store.cluster }}
{{- fail "store.sentinel and store.cluster exclude each other: name one way to reach Redis" }}
{{- end }}
{{- /* The kubelet kills the container terminationGracePeriodSeconds after SIGTERM. Gatehouse serves on for
       shutdown.delayMs (/readyz failing), drains for up to shutdown.graceMs, then stops its stdio upstreams (up to
       4 s: stdin closed, then SIGTERM, 2 s each) and closes the store: a kill before that cuts calls the drain would
       have finished and leaves the store unclosed. */}}
{{- $delayMs := int $v.shutdown.delayMs }}
{{- $graceMs := int (dig "shutdown" "graceMs" 10000 $v.extraConfig) }}
{{- $needMs := add $delayMs $graceMs 5000 }}
{{- if lt (mul (int $v.terminationGracePeriodSeconds) 1000) $needMs }}
{{- fail (printf "terminationGracePeriodSeconds %d is too short for Gatehouse's shutdown.delayMs %d (serving on with /readyz failing after SIGTERM), shutdown.graceMs %d (extraConfig.shutdown.graceMs; the drain after it) and the 5 s its stop takes after them: set terminationGracePeriodSeconds to at least %d, or lower shutdown.delayMs or shutdown.graceMs" (int $v.terminationGracePeriodSeconds) $delayMs $graceMs (div (add $needMs 999) 1000)) }}
{{- end }}
{{- if and (eq $v.store.kind "sqlite") $v.store.persistence.enabled (or $v.autoscaling.enabled (gt (int $v.replicaCount) 1)) }}
{{- fail "store.persistence (SQLite on a ReadWriteOnce claim) serves one pod: set replicaCount: 1 and autoscaling.enabled: false, or use store.kind: redis for more replicas" }}
{{- end }}
{{- end }}

{{/* ---- Secret references ------------------------------------------------------------------------------
     gatehouse.secretValue renders one secret-capable value for the config and records what must be mounted.
     Input: dict "ctx" <accumulator> "value" <string or {secretKeyRef|secretFile, prefix}> "env" <VAR NAME>
            "field" <key path, for messages>.
     The accumulator (see gatehouse.renderConfig) collects env entries in .env and Secret names in .files. */}}

{{- define "gatehouse.envName" -}}
{{- regexReplaceAll "[^A-Z0-9_]" (upper .) "_" }}
{{- end }}

{{- define "gatehouse.secretValue" -}}
{{- $v := .value }}
{{- if kindIs "map" $v }}
{{- $prefix := $v.prefix | default "" }}
{{- if $v.secretKeyRef }}
{{- $ref := $v.secretKeyRef }}
{{- if not (and $ref.name $ref.key) }}
{{- fail (printf "%s.secretKeyRef needs a name and a key" .field) }}
{{- end }}
{{- if hasKey .ctx.envNames .env }}
{{- fail (printf "%s: the env var %s is already used by %s; rename one of them" .field .env (get .ctx.envNames .env)) }}
{{- end }}
{{- $_ := set .ctx.envNames .env .field }}
{{- $_ := set .ctx "env" (append .ctx.env (dict "name" .env "valueFrom" (dict "secretKeyRef" (dict "name" $ref.name "key" $ref.key)))) }}
{{- printf "%s${env:%s}" $prefix .env }}
{{- else if $v.secretFile }}
{{- $ref := $v.secretFile }}
{{- if not (and $ref.name $ref.key) }}
{{- fail (printf "%s.secretFile needs a name and a key" .field) }}
{{- end }}
{{- $_ := set .ctx.files $ref.name true }}
{{- printf "%s${file:%s/%s/%s}" $prefix (include "gatehouse.secretsDir" .) $ref.name $ref.key }}
{{- else }}
{{- fail (printf "%s: expected a string, { secretKeyRef: { name, key } } or { secretFile: { name, key } }" .field) }}
{{- end }}
{{- else }}
{{- if include "gatehouse.clearSecret" (dict "field" .field "value" $v) }}
{{- fail (printf "%s holds a secret in clear, which would land in the ConfigMap (readable by whoever may view the namespace, unlike a Secret): give it as { secretKeyRef: { name, key } } or { secretFile: { name, key } } of an existing Secret" .field) }}
{{- end }}
{{- $v }}
{{- end }}
{{- end }}

{{/* Non-empty when a plain string given for .field is a secret written out: a field that is always a secret (a
     token, a client secret, the requestState key, a credential header) or a URL with a password. A string that is
     only a ${env:...} or ${file:...} reference, with at most a scheme word before it ("Bearer "), writes none. */}}
{{- define "gatehouse.clearSecret" -}}
{{- if kindIs "string" .value }}
{{- $always := list "admin.token" "requestStateKey" "upstream.clientCredentials.clientSecret" "auth.oauth.introspection.clientSecret" "store.sentinel.password" "store.tlsKey" "store.tlsPassphrase" }}
{{- $header := regexMatch "^(upstream|tracing|extraUpstreams\\[[0-9]+\\])\\.headers\\.(?i:(proxy-)?authorization|cookie|.*(api[-_]?key|token|secret|password).*)$" .field }}
{{- $childEnv := regexMatch "^extraUpstreams\\[[0-9]+\\]\\.env\\.(?i:.*(api[-_]?key|token|secret|password).*)$" .field }}
{{- $extraSecret := regexMatch "^extraUpstreams\\[[0-9]+\\]\\.clientCredentials\\.clientSecret$" .field }}
{{- $reference := regexMatch "^([A-Za-z]+ )?\\$\\{(env|file):[^}]+\\}$" .value }}
{{- if and (not $reference) (or (has .field $always) $header $childEnv $extraSecret (regexMatch "^[A-Za-z][A-Za-z0-9+.-]*://[^/@]*:[^/@]+@" .value)) }}true{{ end }}
{{- end }}
{{- end }}

{{/* extraUpstreams entries are written into the config as given, so each string in them (headers, env, client
     credentials, url, command) gets the check of gatehouse.clearSecret: a credential header or env var, a client
     secret, or a URL with a password, written in clear, fails the render. They take no secretKeyRef: the way in is
     a ${env:NAME} reference, NAME set from a Secret in extraEnv. */}}
{{- define "gatehouse.extraUpstreamSecrets" -}}
{{- $field := .field }}
{{- if kindIs "map" .value }}
{{- range $k, $val := .value }}
{{- include "gatehouse.extraUpstreamSecrets" (dict "value" $val "field" (printf "%s.%s" $field $k)) }}
{{- end }}
{{- else if kindIs "slice" .value }}
{{- range $i, $val := .value }}
{{- include "gatehouse.extraUpstreamSecrets" (dict "value" $val "field" (printf "%s[%d]" $field $i)) }}
{{- end }}
{{- else if include "gatehouse.clearSecret" (dict "field" .field "value" .value) }}
{{- fail (printf "%s holds a secret in clear, which would land in the ConfigMap (readable by whoever may view the namespace, unlike a Secret): write a reference such as \"Bearer ${env:NAME}\" and set NAME from a Secret in extraEnv (valueFrom.secretKeyRef), or ${file:PATH} of a Secret mounted with extraVolumes" .field) }}
{{- end }}
{{- end }}

{{/* Every string field of a map goes through gatehouse.secretValue; other values are copied. */}}
{{- define "gatehouse.secretMap" -}}
{{- $out := dict }}
{{- range $k, $val := .value }}
{{- if or (kindIs "string" $val) (and (kindIs "map" $val) (or (hasKey $val "secretKeyRef") (hasKey $val "secretFile"))) }}
{{- $_ := set $out $k (include "gatehouse.secretValue" (dict "ctx" $.ctx "value" $val "env" (printf "%s_%s" $.env (include "gatehouse.envName" (snakecase $k))) "field" (printf "%s.%s" $.field $k))) }}
{{- else }}
{{- $_ := set $out $k $val }}
{{- end }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/* ---- The Gatehouse config ---------------------------------------------------------------------------- */}}

{{- define "gatehouse.upstreamUrl" -}}
{{- if eq .Values.mode "sidecar" }}
{{- printf "http://127.0.0.1:%d%s" (int .Values.server.port) .Values.server.path }}
{{- else }}
{{- .Values.upstream.url }}
{{- end }}
{{- end }}

{{/* Builds the config as a dict, filling the accumulator .ctx; renders it as JSON (the caller re-encodes). */}}
{{- define "gatehouse.renderConfig" -}}
{{- $ctx := . }}
{{- $v := $ctx.root.Values }}

{{- $listen := dict "host" "0.0.0.0" "port" (int $v.listen.port) "path" $v.listen.path }}
{{- with $v.listen.publicUrl }}{{ $_ := set $listen "publicUrl" . }}{{ end }}
{{- with $v.listen.allowedHosts }}{{ $_ := set $listen "allowedHosts" . }}{{ end }}
{{- with $v.listen.allowedOrigins }}{{ $_ := set $listen "allowedOrigins" . }}{{ end }}
{{- with $v.listen.trustedProxies }}{{ $_ := set $listen "trustedProxies" . }}{{ end }}
{{- range $k := list "headersTimeoutMs" "keepAliveTimeoutMs" "maxConnectionsPerIp" }}{{ if hasKey $v.listen $k }}{{ $_ := set $listen $k (int (get $v.listen $k)) }}{{ end }}{{ end }}

{{- $up := dict "name" $v.upstream.name "url" (include "gatehouse.upstreamUrl" $ctx.root) }}
{{- with $v.upstream.era }}{{ $_ := set $up "era" . }}{{ end }}
{{- if $v.upstream.headers }}
{{- $headers := dict }}
{{- range $h, $val := $v.upstream.headers }}
{{- $_ := set $headers $h (include "gatehouse.secretValue" (dict "ctx" $ctx "value" $val "env" (printf "GATEHOUSE_UPSTREAM_HEADER_%s" (include "gatehouse.envName" $h)) "field" (printf "upstream.headers.%s" $h))) }}
{{- end }}
{{- $_ := set $up "headers" $headers }}
{{- end }}
{{- with $v.upstream.clientCredentials }}
{{- $_ := set $up "clientCredentials" (include "gatehouse.secretMap" (dict "ctx" $ctx "value" . "env" "GATEHOUSE_UPSTREAM_CC" "field" "upstream.clientCredentials") | fromJson) }}
{{- end }}
{{- with $v.upstream.timeouts }}{{ $_ := set $up "timeouts" . }}{{ end }}
{{- with $v.upstream.transport }}{{ $_ := set $up "transport" . }}{{ end }}
{{- with $v.upstream.pool }}{{ $_ := set $up "pool" . }}{{ end }}
{{- with $v.upstream.maxMessageBytes }}{{ $_ := set $up "maxMessageBytes" (int .) }}{{ end }}
{{- with $v.upstream.maxSessions }}{{ $_ := set $up "maxSessions" (int .) }}{{ end }}
{{- with $v.upstream.uriPrefixes }}{{ $_ := set $up "uriPrefixes" . }}{{ end }}
{{- if and $v.egressProxy.enabled (eq $v.mode "sidecar") }}
{{- /* The server container sends this as its proxy password (gatehouse.serverContainer): beside a stdio
       extraUpstreams entry a request without credentials belongs to no upstream, and its connections would
       be judged by the defaults instead of its own egress rules. */}}
{{- $tokenRef := dict "secretKeyRef" (include "gatehouse.egressProxyTokenRef" $ctx.root | fromJson) }}
{{- $_ := set $up "egressProxyToken" (include "gatehouse.secretValue" (dict "ctx" $ctx "value" $tokenRef "env" "GATEHOUSE_EGRESS_PROXY_TOKEN" "field" "egressProxy.token")) }}
{{- end }}

{{- $auth := dict }}
{{- if $v.auth.apiKeys }}
{{- $keys := list }}
{{- range $i, $key := $v.auth.apiKeys }}
{{- $field := printf "auth.apiKeys[%d]" $i }}
{{- $k := pick $key "id" "tenant" "scopes" "tools" "expires" "disabled" }}
{{- $hash := $key.hash }}
{{- if not $hash }}
{{- if not $v.auth.apiKeysSecret }}
{{- fail (printf "%s (%s) has no hash: give it one ({ secretKeyRef: { name, key } }) or set auth.apiKeysSecret" $field $key.id) }}
{{- end }}
{{- if and (not $key.secretKey) (not (regexMatch "^[-._a-zA-Z0-9]+$" $key.id)) }}
{{- fail (printf "%s (%s): a Secret's keys are letters, digits, '-', '_' and '.', so the id cannot name its key in auth.apiKeysSecret: set secretKey" $field $key.id) }}
{{- end }}
{{- $hash = dict "secretKeyRef" (dict "name" $v.auth.apiKeysSecret "key" ($key.secretKey | default $key.id)) }}
{{- end }}
{{- $_ := set $k "hash" (include "gatehouse.secretValue" (dict "ctx" $ctx "value" $hash "env" (printf "GATEHOUSE_API_KEY_%s_HASH" (include "gatehouse.envName" $key.id)) "field" (printf "%s.hash" $field))) }}
{{- $keys = append $keys $k }}
{{- end }}
{{- $_ := set $auth "apiKeys" $keys }}
{{- end }}
{{- with $v.auth.oauth }}
{{- $oauth := include "gatehouse.secretMap" (dict "ctx" $ctx "value" (omit . "introspection") "env" "GATEHOUSE_OAUTH" "field" "auth.oauth") | fromJson }}
{{- with .introspection }}
{{- $_ := set $oauth "introspection" (include "gatehouse.secretMap" (dict "ctx" $ctx "value" . "env" "GATEHOUSE_OAUTH_INTROSPECTION" "field" "auth.oauth.introspection") | fromJson) }}
{{- end }}
{{- if not (hasKey $oauth "audience") }}{{ $_ := set $oauth "audience" $v.listen.publicUrl }}{{ end }}
{{- $_ := set $auth "oauth" $oauth }}
{{- end }}
{{- with $v.auth.requiredScopes }}{{ $_ := set $auth "requiredScopes" . }}{{ end }}
{{- with $v.auth.failureLimit }}{{ $limit := dict }}{{ range $k := list "attempts" "windowSeconds" }}{{ if hasKey $v.auth.failureLimit $k }}{{ $_ := set $limit $k (int (get $v.auth.failureLimit $k)) }}{{ end }}{{ end }}{{ $_ := set $auth "failureLimit" $limit }}{{ end }}

{{- $store := dict "kind" $v.store.kind }}
{{- if eq $v.store.kind "redis" }}
{{- $_ := set $store "url" (include "gatehouse.secretValue" (dict "ctx" $ctx "value" $v.store.url "env" "GATEHOUSE_STORE_URL" "field" "store.url")) }}
{{- $_ := set $store "keyPrefix" $v.store.keyPrefix }}
{{- with $v.store.sentinel }}
{{- $sentinel := omit . "password" }}
{{- with .password }}
{{- $_ := set $sentinel "password" (include "gatehouse.secretValue" (dict "ctx" $ctx "value" . "env" "GATEHOUSE_STORE_SENTINEL_PASSWORD" "field" "store.sentinel.password")) }}
{{- end }}
{{- $_ := set $store "sentinel" $sentinel }}
{{- end }}
{{- with $v.store.cluster }}{{ $_ := set $store "cluster" . }}{{ end }}
{{- $tls := dict }}
{{- with $v.store.tlsCa }}
{{- $_ := set $tls "ca" (include "gatehouse.secretValue" (dict "ctx" $ctx "value" . "env" "GATEHOUSE_STORE_TLS_CA" "field" "store.tlsCa")) }}
{{- end }}
{{- if and (not $v.store.tlsCert) (not $v.store.tlsKey) }}
{{- else if not (and $v.store.tlsCert $v.store.tlsKey) }}
{{- fail "store.tlsCert and store.tlsKey go together: a client certificate needs its private key (give both, or neither)" }}
{{- else }}
{{- $_ := set $tls "cert" (include "gatehouse.secretValue" (dict "ctx" $ctx "value" $v.store.tlsCert "env" "GATEHOUSE_STORE_TLS_CERT" "field" "store.tlsCert")) }}
{{- $_ := set $tls "key" (include "gatehouse.secretValue" (dict "ctx" $ctx "value" $v.store.tlsKey "env" "GATEHOUSE_STORE_TLS_KEY" "field" "store.tlsKey")) }}
{{- end }}
{{- with $v.store.tlsPassphrase }}
{{- if not $v.store.tlsKey }}{{ fail "store.tlsPassphrase is given without store.tlsKey: it decrypts the client certificate's key (give the key, or leave the passphrase out)" }}{{ end }}
{{- $_ := set $tls "passphrase" (include "gatehouse.secretValue" (dict "ctx" $ctx "value" . "env" "GATEHOUSE_STORE_TLS_PASSPHRASE" "field" "store.tlsPassphrase")) }}
{{- end }}
{{- with $v.store.tlsServername }}{{ $_ := set $tls "servername" . }}{{ end }}
{{- if $tls }}{{ $_ := set $store "tls" $tls }}{{ end }}
{{- else }}
{{- $_ := set $store "path" $v.store.path }}
{{- end }}

{{- $metrics := dict "enabled" false }}
{{- if $v.metrics.enabled }}
{{- $metrics = dict "enabled" true "host" "0.0.0.0" "port" (int $v.metrics.port) "path" $v.metrics.path }}
{{- end }}

{{- range $i, $extra := $v.extraUpstreams }}{{ include "gatehouse.extraUpstreamSecrets" (dict "value" $extra "field" (printf "extraUpstreams[%d]" $i)) }}{{ end }}
{{- $config := dict "listen" $listen "upstreams" (concat (list $up) $v.extraUpstreams) "auth" $auth "store" $store "metrics" $metrics "log" (dict "level" $v.log.level) "shutdown" (dict "delayMs" (int $v.shutdown.delayMs)) }}
{{- if $v.admin.enabled }}
{{- $admin := dict "enabled" true "host" "0.0.0.0" "port" (int $v.admin.port) }}
{{- with $v.admin.token }}
{{- $_ := set $admin "token" (include "gatehouse.secretValue" (dict "ctx" $ctx "value" . "env" "GATEHOUSE_ADMIN_TOKEN" "field" "admin.token")) }}
{{- end }}
{{- with $v.admin.groups }}{{ $_ := set $admin "groups" . }}{{ end }}
{{- $_ := set $config "admin" $admin }}
{{- end }}
{{- $stateKey := $v.requestStateKey | default (dict "secretFile" (dict "name" (include "gatehouse.requestStateSecret" $ctx.root) "key" "request-state-key")) }}
{{- $_ := set $config "sessions" (dict "requestStateKey" (include "gatehouse.secretValue" (dict "ctx" $ctx "value" $stateKey "env" "GATEHOUSE_REQUEST_STATE_KEY" "field" "requestStateKey"))) }}
{{- if $v.egressProxy.enabled }}
{{- $_ := set $config "policy" (dict "egressProxy" (dict "enabled" true "host" "127.0.0.1" "port" (int $v.egressProxy.port))) }}
{{- end }}
{{- if $v.tracing.enabled }}
{{- $tracing := dict "enabled" true "sampleRatio" $v.tracing.sampleRatio }}
{{- with $v.tracing.endpoint }}{{ $_ := set $tracing "endpoint" . }}{{ end }}
{{- with $v.tracing.headers }}
{{- $_ := set $tracing "headers" (include "gatehouse.secretMap" (dict "ctx" $ctx "value" . "env" "GATEHOUSE_TRACING_HEADER" "field" "tracing.headers") | fromJson) }}
{{- end }}
{{- with $v.tracing.resourceAttributes }}{{ $_ := set $tracing "resourceAttributes" . }}{{ end }}
{{- $_ := set $config "tracing" $tracing }}
{{- end }}
{{- $keys := $ctx.root.Files.Get "files/config-keys.json" | fromJson }}
{{- include "gatehouse.knownKeys" (dict "value" $v.extraConfig "node" $keys "path" "extraConfig") }}
{{- include "gatehouse.knownKeys" (dict "value" $v.extraUpstreams "node" $keys.upstreams "path" "extraUpstreams") }}
{{- include "gatehouse.extraConflicts" (dict "extra" $v.extraConfig "chart" $config "path" "extraConfig") }}
{{- toJson (mustMergeOverwrite (deepCopy $v.extraConfig) $config) }}
{{- end }}

{{/* extraConfig (and each extraUpstreams entry) is copied into the config file, so a key Gatehouse does not know (a typo: polcy, tools.nameing)
     would render, install and then fail Gatehouse at every start: the pods crash-loop and the rollout hangs. Each
     key is looked up in files/config-keys.json, the tree of the config's key names (scripts/gen-chart-config-keys.mjs
     writes it from config/gatehouse.schema.json); `true` there is a free-form map or a value, not checked below. */}}
{{- define "gatehouse.knownKeys" -}}
{{- $node := .node }}
{{- $path := .path }}
{{- if kindIs "map" $node }}
{{- if kindIs "map" .value }}
{{- range $k, $val := .value }}
{{- if not (hasKey $node $k) }}
{{- fail (printf "%s.%s is not a Gatehouse config key, and Gatehouse would refuse the config at every start: the keys here are %s (docs/configuration.md)" $path $k (keys $node | sortAlpha | join ", ")) }}
{{- end }}
{{- include "gatehouse.knownKeys" (dict "value" $val "node" (get $node $k) "path" (printf "%s.%s" $path $k)) }}
{{- end }}
{{- else if kindIs "slice" .value }}
{{- range $i, $item := .value }}
{{- include "gatehouse.knownKeys" (dict "value" $item "node" $node "path" (printf "%s[%d]" $path $i)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* extraConfig merges under the config the chart renders, whose keys win: a key of extraConfig the chart also
     sets, to another value, would be dropped without a word (or, for a false or 0 of the chart's, win after all:
     the merge keeps a non-empty value over an empty one). Maps present in both are compared key by key. */}}
{{- define "gatehouse.extraConflicts" -}}
{{- $path := .path }}
{{- $chart := .chart }}
{{- range $k, $extra := .extra }}
{{- if hasKey $chart $k }}
{{- $own := get $chart $k }}
{{- if and (kindIs "map" $extra) (kindIs "map" $own) }}
{{- include "gatehouse.extraConflicts" (dict "extra" $extra "chart" $own "path" (printf "%s.%s" $path $k)) }}
{{- else if ne (toJson $extra) (toJson $own) }}
{{- $key := printf "%s.%s" $path $k | trimPrefix "extraConfig." }}
{{- $values := dict "upstreams" "upstream.* (the chart's upstream) or extraUpstreams (more upstreams)" "sessions.requestStateKey" "requestStateKey" "listen.host" "nothing: the chart binds 0.0.0.0 in the pod" "metrics.host" "nothing: the chart binds 0.0.0.0 in the pod" "admin.host" "nothing: the chart binds 0.0.0.0 in the pod" "policy.egressProxy" "egressProxy.*" }}
{{- fail (printf "extraConfig.%s is rendered by the chart from its values and would be ignored: set %s instead" $key (get $values $key | default $key)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* A fresh accumulator: env entries, Secret names mounted as files, env names in use. */}}
{{- define "gatehouse.configContext" -}}
{{- $ctx := dict "root" . "env" (list) "files" (dict) "envNames" (dict) }}
{{- $_ := set $ctx "config" (include "gatehouse.renderConfig" $ctx | fromJson) }}
{{- toJson (omit $ctx "root") }}
{{- end }}

{{/* The config file's text, as it lands in the ConfigMap (and in the checksum annotation). */}}
{{- define "gatehouse.configYaml" -}}
# Rendered by the Gatehouse Helm chart ({{ include "gatehouse.chart" . }}) from its values; edit the values, not this file.
# Secrets appear only as env: and file: references (mounted from existing Secrets), resolved when Gatehouse loads this file.
{{ (include "gatehouse.configContext" . | fromJson).config | toYaml }}
{{- end }}

{{/* Env entries for the Gatehouse container that the config's ${env:...} references need. */}}
{{- define "gatehouse.secretEnv" -}}
{{- with (include "gatehouse.configContext" . | fromJson).env }}
{{- toYaml . }}
{{- end }}
{{- end }}

{{/* Names of the Secrets mounted as files, as a JSON list. */}}
{{- define "gatehouse.secretFileNames" -}}
{{- (include "gatehouse.configContext" . | fromJson).files | keys | sortAlpha | toJson }}
{{- end }}

{{/* A volume's name is a DNS-1123 label (no dots, 63 at most, unique in the pod) while a Secret's may have dots
     and 253 characters: such a name gets a cleaned, shortened form and a hash of the whole, so two Secrets that
     differ only past the cut, or by a dot, still get volumes of their own. */}}
{{- define "gatehouse.secretVolumeName" -}}
{{- $plain := printf "secret-%s" . }}
{{- if and (le (len $plain) 63) (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $plain) }}
{{- $plain }}
{{- else }}
{{- printf "secret-%s-%s" (regexReplaceAll "[^a-z0-9-]" (lower .) "-" | trunc 45 | trimSuffix "-") (sha256sum . | trunc 8) }}
{{- end }}
{{- end }}

{{/* The Secret the chart keeps for sessions.requestStateKey when the values name none. */}}
{{- define "gatehouse.requestStateSecret" -}}
{{- printf "%s-request-state" (include "gatehouse.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Secret the chart keeps for egressProxy.token when the values name none. */}}
{{- define "gatehouse.egressProxySecret" -}}
{{- printf "%s-egress-proxy" (include "gatehouse.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The secretKeyRef of the egress proxy's token, as JSON: the operator's (egressProxy.token) or the chart's Secret. */}}
{{- define "gatehouse.egressProxyTokenRef" -}}
{{- with .Values.egressProxy.token }}{{ toJson .secretKeyRef }}{{ else }}{{ toJson (dict "name" (include "gatehouse.egressProxySecret" $) "key" "token") }}{{ end }}
{{- end }}

{{/* The Host header of the readiness probe. /readyz checks Host like the MCP endpoint (DNS-rebinding guard),
     and the kubelet sends the pod's IP, which an allowedHosts list (from listen or extraConfig) does not name:
     the probe then names the first allowed host instead. Empty: any Host passes, the kubelet's default does. */}}
{{- define "gatehouse.probeHost" -}}
{{- $hosts := (include "gatehouse.configContext" . | fromJson).config.listen.allowedHosts | default list }}
{{- if and $hosts (not (has "*" $hosts)) }}{{ first $hosts }}{{ end }}
{{- end }}

{{/* The writable HOME of the Gatehouse container when an extraUpstream is a stdio one (has command), else empty.
     Stdio upstreams inherit HOME, which the image's user has at /home/node on the read-only root filesystem: npx
     and npm write their cache there (~/.npm) and the child fails at start. */}}
{{- define "gatehouse.stdioHome" -}}
{{- range .Values.extraUpstreams }}{{ if hasKey . "command" }}/home/gatehouse{{ break }}{{ end }}{{ end }}
{{- end }}

{{/* The HOME env entry for gatehouse.stdioHome, left out when extraEnv sets HOME itself. */}}
{{- define "gatehouse.homeEnv" -}}
{{- $own := false }}
{{- range .Values.extraEnv }}{{ if eq .name "HOME" }}{{ $own = true }}{{ end }}{{ end }}
{{- with include "gatehouse.stdioHome" . }}{{ if not $own }}- name: HOME
  value: {{ . | quote }}{{ end }}{{ end }}
{{- end }}

{{/* The claim that holds /data when the SQLite store is persistent: the existing one, or the chart's. */}}
{{- define "gatehouse.dataClaim" -}}
{{- .Values.store.persistence.existingClaim | default (printf "%s-data" (include "gatehouse.fullname" .)) }}
{{- end }}

{{/* True (non-empty) when /data is a PersistentVolumeClaim. */}}
{{- define "gatehouse.persistentData" -}}
{{- if and (eq .Values.store.kind "sqlite") .Values.store.persistence.enabled }}true{{ end }}
{{- end }}

{{/*
The MCP server's container (mode: sidecar), for containers or, with server.nativeSidecar, initContainers.
Takes the root context.
*/}}
{{- define "gatehouse.serverContainer" -}}
{{- $s := .Values.server -}}
- name: {{ $s.name }}
  image: {{ ternary (printf "%s:%s" $s.image.repository $s.image.tag) $s.image.repository (ne $s.image.tag "") | quote }}
  imagePullPolicy: {{ $s.image.pullPolicy }}
  {{- if $s.nativeSidecar }}
  # A native sidecar: started before Gatehouse and stopped after it, so the calls Gatehouse drains still reach it.
  restartPolicy: Always
  {{- end }}
  {{- with $s.command }}
  command:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $s.args }}
  args:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  ports:
    - name: mcp-server
      containerPort: {{ $s.port }}
      protocol: TCP
  {{- if or $s.env $.Values.egressProxy.enabled }}
  env:
    {{- if $.Values.egressProxy.enabled }}
    # The server's own outbound connections go through Gatehouse's egress proxy (policy.egress), with the
    # upstream's name and egressProxyToken as credentials, so the proxy judges them by this upstream's rules.
    # The kubelet expands $(GATEHOUSE_EGRESS_PROXY_TOKEN) from the entry before it.
    - name: GATEHOUSE_EGRESS_PROXY_TOKEN
      valueFrom:
        secretKeyRef:
          {{- include "gatehouse.egressProxyTokenRef" $ | fromJson | toYaml | nindent 10 }}
    {{- $proxy := printf "http://%s:$(GATEHOUSE_EGRESS_PROXY_TOKEN)@127.0.0.1:%d" $.Values.upstream.name (int $.Values.egressProxy.port) }}
    - { name: HTTP_PROXY, value: {{ $proxy | quote }} }
    - { name: HTTPS_PROXY, value: {{ $proxy | quote }} }
    - { name: http_proxy, value: {{ $proxy | quote }} }
    - { name: https_proxy, value: {{ $proxy | quote }} }
    - { name: NO_PROXY, value: "" }
    - { name: no_proxy, value: "" }
    {{- end }}
    {{- with $s.env }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- end }}
  {{- with $s.envFrom }}
  envFrom:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $s.startupProbe }}
  startupProbe:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $s.livenessProbe }}
  livenessProbe:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $s.readinessProbe }}
  readinessProbe:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $s.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $s.securityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  volumeMounts:
    - name: server-tmp
      mountPath: /tmp
    {{- with $s.volumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}
