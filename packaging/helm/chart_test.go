package helm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/queenmq/queen/internal/config"
	proxyconfig "github.com/queenmq/queen/internal/proxy/config"
)

// runtimeVariables are read by the Go runtime, not by either daemon's settings.
var runtimeVariables = []string{"GOMEMLIMIT"}

// TestLint runs Helm's linter (helm lint) over the chart with its default values and
// with each case of the matrix: no errors, and no warnings. Informational messages
// (the chart has no icon) are allowed and logged.
func TestLint(t *testing.T) {
	t.Parallel()
	for _, vc := range matrix() {
		t.Run(vc.name, func(t *testing.T) {
			t.Parallel()
			vals, err := chartutil.ReadValues([]byte(vc.values))
			require.NoError(t, err)
			linter := lint.AllWithKubeVersionAndSchemaValidation(chartDir, vals, namespace, nil, false)
			for _, m := range linter.Messages {
				t.Logf("%s", m)
				require.Less(t, m.Severity, support.WarningSev, "helm lint: %s", m)
			}
		})
	}
}

// TestLintFindsErrors is the linter's control: a value the schema refuses is an error.
func TestLintFindsErrors(t *testing.T) {
	t.Parallel()
	linter := lint.AllWithKubeVersionAndSchemaValidation(chartDir, map[string]any{"replicaCount": 4}, namespace, nil, false)
	require.Equal(t, support.ErrorSev, linter.HighestSeverity, "%v", linter.Messages)
}

// TestRenderDecodesStrictly: every case renders, every object decodes strictly, and
// each case renders exactly the objects its values ask for.
func TestRenderDecodesStrictly(t *testing.T) {
	t.Parallel()
	want := map[string][]string{
		"Defaults":      {"ConfigMap queen", "Deployment queen", "PodDisruptionBudget queen", "Service queen"},
		"ThreeReplicas": {"ConfigMap queen", "Deployment queen", "PodDisruptionBudget queen", "Secret queen-secrets", "Service queen"},
		"Proxy": {"ConfigMap queen", "ConfigMap queen-proxy", "Deployment queen", "Deployment queen-proxy",
			"NetworkPolicy queen", "PodDisruptionBudget queen", "PodDisruptionBudget queen-proxy",
			"Secret queen-proxy-secrets", "Secret queen-secrets", "Service queen", "Service queen-proxy"},
		"ProxyMonitoring": {"ConfigMap queen", "ConfigMap queen-dashboard", "ConfigMap queen-proxy", "Deployment queen",
			"Deployment queen-proxy", "NetworkPolicy queen", "NetworkPolicy queen-proxy", "PodDisruptionBudget queen",
			"PodDisruptionBudget queen-proxy", "PrometheusRule queen", "Secret queen-proxy-secrets", "Secret queen-secrets", "Service queen",
			"Service queen-proxy", "Service queen-proxy-admin", "ServiceMonitor queen", "ServiceMonitor queen-proxy"},
		"ExistingSecrets": {"ConfigMap queen", "ConfigMap queen-proxy", "Deployment queen", "Deployment queen-proxy",
			"NetworkPolicy queen", "NetworkPolicy queen-proxy", "PodDisruptionBudget queen", "PodDisruptionBudget queen-proxy",
			"Service queen", "Service queen-proxy", "Service queen-proxy-admin"},
		"PVCSpool": {"ConfigMap queen", "Deployment queen", "PersistentVolumeClaim queen-spool",
			"PodDisruptionBudget queen", "Secret queen-secrets", "Service queen"},
		"SecretEnv": {"ConfigMap queen", "Deployment queen", "PodDisruptionBudget queen", "Service queen"},
	}
	for _, vc := range matrix() {
		t.Run(vc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, o := range render(t, vc) {
				kind := o.obj.GetObjectKind().GroupVersionKind().Kind
				if kind == "" {
					kind = strings.TrimPrefix(fmt.Sprintf("%T", o.obj), "*v1.")
				}
				name := o.obj.(interface{ GetName() string }).GetName()
				got = append(got, kind+" "+name)
			}
			slices.Sort(got)
			require.Equal(t, want[vc.name], got)
		})
	}
}

// TestDecoderIsStrict proves the decoder refuses what the API server would, for a
// built-in and a Prometheus Operator type; without it the test above would pass on
// typos.
func TestDecoderIsStrict(t *testing.T) {
	t.Parallel()
	dec := decoder(t)
	for name, doc := range map[string]string{
		"UnknownField":        "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {prots: []}\n",
		"DuplicateField":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {A: \"1\", A: \"2\"}\n",
		"UnquotedBoolean":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {PG_USE_SSL: false}\n",
		"MonitorUnknownField": "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\nspec: {selector: {}, endpoint: []}\n",
		"RuleWrongType":       "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: x}\nspec: {groups: {a: 1}}\n",
	} {
		_, err := decodeAll(dec, doc)
		require.Error(t, err, name)
	}
}

// TestSchemaRefuses: values.schema.json refuses replicas outside 1–3, a persistent
// spool with several replicas, unknown keys and a secretEnv entry without a name and a
// key; the templates refuse a drain delay not below its timeout, a spool cap not below
// the volume, and a secretEnv name that is not a broker setting, is set by the chart or
// is under config too.
func TestSchemaRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, values string
		// refusal is a part of the error; "" for values the chart accepts.
		refusal string
	}{
		{"ZeroReplicas", "replicaCount: 0", "at '/replicaCount': minimum"},
		{"OneReplica", "replicaCount: 1", ""},
		{"ThreeReplicas", "replicaCount: 3", ""},
		{"FourReplicas", "replicaCount: 4", "at '/replicaCount': maximum"},
		{"StringReplicas", `replicaCount: "2"`, "at '/replicaCount': got string"},
		{"PVCWithTwoReplicas", "replicaCount: 2\nspool: {type: persistentVolumeClaim}", "at '/replicaCount': value must be 1"},
		{"PVCWithOneReplica", "replicaCount: 1\nspool: {type: persistentVolumeClaim}", ""},
		{"UnknownKey", "replicas: 2", "additional properties 'replicas' not allowed"},
		{"UnknownSpoolType", "spool: {type: hostPath}", "at '/spool/type'"},
		{"ShortAdminToken", "proxy: {adminToken: short}", "at '/proxy/adminToken'"},
		{"DelayNotBelowTimeout", "drain: {shutdownDelaySeconds: 20, shutdownTimeoutSeconds: 20}", "must be less than shutdownTimeoutSeconds"},
		{"SpoolCapAboveVolume", "spool: {maxBytes: 3221225472}", "spool.maxBytes (3221225472) must be below"},
		{"ConfigSetsManagedName", "config: {PG_HOST: elsewhere}", "config.PG_HOST: set by the chart"},
		{"ConfigSetsSecret", "config: {PG_PASSWORD: x}", "config.PG_PASSWORD: a secret"},
		{"ConfigSetsClientKey", "config: {PG_SSL_KEY: x}", "config.PG_SSL_KEY: a secret, kept out of the ConfigMap; " +
			"give it with the chart's own value where it has one (postgresql, auth, encryption: each takes an " +
			"existingSecret), else with secretEnv"},
		{"SecretEnv", "secretEnv: {PG_SSL_KEY: {name: s, key: k}}", ""},
		{"SecretEnvUnknownName", "secretEnv: {PG_SSL_KEYS: {name: s, key: k}}", "secretEnv.PG_SSL_KEYS: not a setting the broker reads"},
		{"SecretEnvRuntimeName", "secretEnv: {GOMAXPROCS: {name: s, key: k}}", "secretEnv.GOMAXPROCS: not a setting the broker reads"},
		{"SecretEnvChartSecret", "secretEnv: {PG_PASSWORD: {name: s, key: k}}", "secretEnv.PG_PASSWORD: set by the chart itself; use postgresql.existingSecret"},
		{"SecretEnvChartSetting", "secretEnv: {PG_HOST: {name: s, key: k}}", "secretEnv.PG_HOST: set by the chart itself; use postgresql.host"},
		{"SecretEnvFixedByChart", "secretEnv: {QUEEN_INSTANCE: {name: s, key: k}}", "secretEnv.QUEEN_INSTANCE: set by the chart itself; it is always the pod's name"},
		{"SecretEnvAlsoInConfig", "config: {OTEL_EXPORTER_OTLP_HEADERS: x}\nsecretEnv: {OTEL_EXPORTER_OTLP_HEADERS: {name: s, key: k}}",
			"secretEnv.OTEL_EXPORTER_OTLP_HEADERS: also under config"},
		{"SecretEnvWithoutKey", "secretEnv: {PG_SSL_KEY: {name: s}}", "at '/secretEnv/PG_SSL_KEY': missing property 'key'"},
		{"SecretEnvEmptyName", "secretEnv: {PG_SSL_KEY: {name: \"\", key: k}}", "at '/secretEnv/PG_SSL_KEY/name': minLength"},
		{"SecretEnvOtherField", "secretEnv: {PG_SSL_KEY: {name: s, key: k, optional: true}}", "at '/secretEnv/PG_SSL_KEY': additional properties 'optional' not allowed"},
		{"ProxyLoginWithoutKey", "proxy: {enabled: true}", "proxy.login: set proxy.sessionKey"},
		{"ProxyJWTWithoutSecret", "proxy: {enabled: true, login: false, brokerAuth: jwt}", "proxy.brokerAuth jwt"},
		{"ProxyMetricsWithoutToken", "proxy: {enabled: true, login: false, metrics: {enabled: true}}", "proxy.metrics: the metrics need the admin token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := renderFiles(t, tc.values, false)
			if tc.refusal == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.refusal)
		})
	}
}

// TestEnvironmentIsWhatTheBinariesRead: every variable a container gets is a setting
// of that binary's settings table (or one the Go runtime reads), and the binary loads
// the whole environment, Secrets included, without an error (or, for the broker, a
// warning).
func TestEnvironmentIsWhatTheBinariesRead(t *testing.T) {
	t.Parallel()
	brokerNames := map[string]bool{}
	for _, r := range config.References() {
		brokerNames[r.Name] = true
	}
	proxyNames := map[string]bool{}
	for _, r := range proxyconfig.References() {
		proxyNames[r.Name] = true
	}
	for _, vc := range matrix() {
		t.Run(vc.name, func(t *testing.T) {
			t.Parallel()
			r := objects(t, vc)
			env := r.environ(t, r.broker(t))
			for name := range env {
				require.True(t, brokerNames[name] || slices.Contains(runtimeVariables, name), "the broker does not read %s", name)
			}
			cfg, err := config.Load(environList(env))
			require.NoError(t, err, "the broker refuses the chart's environment")
			require.Empty(t, cfg.Warnings(), "the broker warns about the chart's environment")
			require.Equal(t, "/var/lib/queen/spool", cfg.FileBufferDir)
			require.Equal(t, config.SourceEnv, cfg.Source("PG_PORT"), "PG_PORT must be set: a Service named pg would inject PG_PORT=tcp://…")

			p := r.proxy()
			if p == nil {
				require.Empty(t, cfg.TenancyHeader, "tenancy on without the proxy")
				return
			}
			penv := r.environ(t, p)
			for name := range penv {
				require.True(t, proxyNames[name] || slices.Contains(runtimeVariables, name), "queen-proxy does not read %s", name)
			}
			pcfg, err := proxyconfig.Load(environList(penv))
			require.NoError(t, err, "queen-proxy refuses the chart's environment")
			require.Equal(t, cfg.TenancyHeader, pcfg.TenancyHeader, "the brokers and the proxy must scope by the same header")
			require.Len(t, pcfg.Backends, 1)
			svc := r.services["queen"]
			require.NotNil(t, svc)
			require.Equal(t, fmt.Sprintf("http://%s.%s.svc:%d", svc.Name, namespace, svc.Spec.Ports[0].Port), pcfg.Backends[0].String(),
				"the proxy's upstream is the brokers' Service")
			require.NotEqual(t, pcfg.PGDB, cfg.PGDB, "the proxy has a database of its own")
			if pcfg.BrokerAuth == "jwt" {
				require.True(t, cfg.JWTEnabled, "brokerAuth jwt with the brokers' authentication off")
				require.Equal(t, []byte(env["JWT_SECRET"]), pcfg.BrokerJWTKey, "the proxy signs with the brokers' secret")
			}
		})
	}
}

// TestSecretsStayInSecrets: no secret is in a ConfigMap, and with existing Secrets (or
// secretEnv alone) the chart renders none of its own and refers to the named ones.
func TestSecretsStayInSecrets(t *testing.T) {
	t.Parallel()
	secretNames := []string{"PG_PASSWORD", "JWT_SECRET", "QUEEN_ENCRYPTION_KEY", "QUEEN_PROXY_ADMIN_TOKEN",
		"QUEEN_PROXY_SESSION_KEY", "QUEEN_PROXY_BROKER_JWT_KEY", "PG_SSL_KEY", "OTEL_EXPORTER_OTLP_HEADERS"}
	for _, vc := range matrix() {
		t.Run(vc.name, func(t *testing.T) {
			t.Parallel()
			r := objects(t, vc)
			for _, cm := range r.configMaps {
				for _, k := range secretNames {
					require.NotContains(t, cm.Data, k, "ConfigMap %s holds the secret %s", cm.Name, k)
				}
			}
			for _, d := range r.deployments {
				for _, e := range container(t, d).Env {
					if slices.Contains(secretNames, e.Name) {
						require.NotNil(t, e.ValueFrom, "%s: %s given as a literal", d.Name, e.Name)
						require.NotNil(t, e.ValueFrom.SecretKeyRef, "%s: %s not from a Secret", d.Name, e.Name)
						if vc.name == "ExistingSecrets" || vc.name == "SecretEnv" {
							require.Contains(t, existingSecrets(), e.ValueFrom.SecretKeyRef.Name, "%s: %s", d.Name, e.Name)
						}
					}
				}
			}
			if vc.name == "ExistingSecrets" || vc.name == "SecretEnv" {
				require.Empty(t, r.secrets)
			}
		})
	}
}

// TestMonitoringNeedsTheOperatorAPI: the ServiceMonitor and PrometheusRule are
// rendered only where the cluster serves monitoring.coreos.com/v1, and then scrape
// the routes that serve metrics; the rules are the alert file's groups.
func TestMonitoringNeedsTheOperatorAPI(t *testing.T) {
	t.Parallel()
	vc := matrix()[3]
	require.Equal(t, "ProxyMonitoring", vc.name)
	without := objects(t, valueCase{name: vc.name + "WithoutAPI", values: vc.values})
	require.Empty(t, without.monitors, "ServiceMonitor without monitoring.coreos.com/v1")
	require.Empty(t, without.rules, "PrometheusRule without monitoring.coreos.com/v1")
	require.Contains(t, without.configMaps, "queen-dashboard", "the dashboard ConfigMap needs no CRD")

	r := objects(t, vc)
	require.Len(t, r.monitors, 2)
	brokerSM := r.monitors["queen"]
	require.NotNil(t, brokerSM)
	require.Equal(t, "prometheus", brokerSM.Labels["release"])
	sel, err := metav1LabelSelector(brokerSM.Spec.Selector.MatchLabels)
	require.NoError(t, err)
	require.True(t, sel.Matches(labels.Set(r.services["queen"].Labels)), "the broker ServiceMonitor selects no broker Service")
	require.Len(t, brokerSM.Spec.Endpoints, 1)
	require.Equal(t, "http", brokerSM.Spec.Endpoints[0].Port)
	require.Equal(t, "/metrics/prometheus", brokerSM.Spec.Endpoints[0].Path)

	proxySM := r.monitors["queen-proxy"]
	require.NotNil(t, proxySM)
	admin := r.services["queen-proxy-admin"]
	require.NotNil(t, admin)
	sel, err = metav1LabelSelector(proxySM.Spec.Selector.MatchLabels)
	require.NoError(t, err)
	require.True(t, sel.Matches(labels.Set(admin.Labels)), "the proxy ServiceMonitor selects no admin Service")
	require.False(t, sel.Matches(labels.Set(r.services["queen-proxy"].Labels)), "the proxy ServiceMonitor selects the public Service")
	ep := proxySM.Spec.Endpoints[0]
	require.Equal(t, "admin", ep.Port)
	require.Equal(t, "/metrics/prometheus", ep.Path)
	require.NotNil(t, ep.Authorization, "the proxy's metrics need the admin token")
	require.NotNil(t, ep.Authorization.Credentials)
	require.Equal(t, "QUEEN_PROXY_ADMIN_TOKEN", ep.Authorization.Credentials.Key)
	require.Contains(t, r.secrets, ep.Authorization.Credentials.Name)
	penv := r.environ(t, r.proxy())
	require.Equal(t, "0.0.0.0:6641", penv["QUEEN_PROXY_ADMIN_LISTEN"], "the admin listener must be reachable for the scrape")
	require.Equal(t, int32(6641), portNumber(t, container(t, r.proxy()), intstr.FromString("admin")))

	rule := r.rules["queen"]
	require.NotNil(t, rule)
	var file struct {
		Groups []monitoringv1.RuleGroup `json:"groups"`
	}
	data, err := os.ReadFile(filepath.Join(chartDir, "files", "queen-alerts.yml"))
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(data, &file), "files/queen-alerts.yml is not a rule file of the operator's shape")
	require.NotEmpty(t, file.Groups)
	// The one difference: the expected number of brokers, which the file asks to edit,
	// is the release's replica count.
	replicas := r.broker(t).Spec.Replicas
	for gi, g := range file.Groups {
		for ri, rr := range g.Rules {
			if rr.Record == "queen:expected_brokers" {
				require.Equal(t, fmt.Sprintf("vector(%d)", *replicas), rule.Spec.Groups[gi].Rules[ri].Expr.String())
				file.Groups[gi].Rules[ri].Expr = intstr.FromString(fmt.Sprintf("vector(%d)", *replicas))
			}
		}
	}
	require.Equal(t, file.Groups, rule.Spec.Groups, "the PrometheusRule's groups are not the alert file's")

	dash := r.configMaps["queen-dashboard"]
	require.Equal(t, "1", dash.Labels["grafana_dashboard"])
	var board map[string]any
	require.NoError(t, json.Unmarshal([]byte(dash.Data["queen-dashboard.json"]), &board), "the dashboard ConfigMap holds no JSON")
	want, err := os.ReadFile(filepath.Join(chartDir, "files", "queen-dashboard.json"))
	require.NoError(t, err)
	require.Equal(t, strings.TrimRight(string(want), "\n"), dash.Data["queen-dashboard.json"])
}

// TestChartFilesMatchPackagingMonitoring: Helm reads no file outside the chart, so the
// chart keeps copies of packaging/monitoring's alert rules and dashboard; they must be
// byte-identical to the originals.
func TestChartFilesMatchPackagingMonitoring(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"queen-alerts.yml", "queen-dashboard.json"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			copied, err := os.ReadFile(filepath.Join(chartDir, "files", name))
			require.NoError(t, err)
			original, err := os.ReadFile(filepath.Join("..", "monitoring", name))
			if errors.Is(err, os.ErrNotExist) {
				t.Skipf("packaging/monitoring/%s does not exist yet: nothing to compare the chart's copy with", name)
			}
			require.NoError(t, err)
			require.True(t, bytes.Equal(original, copied),
				"packaging/helm/queen/files/%s differs from packaging/monitoring/%s: copy it over", name, name)
		})
	}
}

// TestNetworkPolicy: with the proxy on, the brokers' only ingress is the proxy's pods
// and the monitoring namespace, on the brokers' port; without the proxy there is no
// policy (clients reach the brokers directly).
func TestNetworkPolicy(t *testing.T) {
	t.Parallel()
	for _, vc := range matrix() {
		t.Run(vc.name, func(t *testing.T) {
			t.Parallel()
			r := objects(t, vc)
			p := r.proxy()
			if p == nil {
				require.Empty(t, r.policies)
				return
			}
			np := r.policies["queen"]
			require.NotNil(t, np)
			broker := r.broker(t)
			sel, err := metav1LabelSelector(np.Spec.PodSelector.MatchLabels)
			require.NoError(t, err)
			require.True(t, sel.Matches(labels.Set(broker.Spec.Template.Labels)), "the policy does not select the brokers")
			require.False(t, sel.Matches(labels.Set(p.Spec.Template.Labels)), "the policy selects the proxy")
			require.Len(t, np.Spec.Ingress, 2)
			fromProxy, fromMonitoring := np.Spec.Ingress[0], np.Spec.Ingress[1]
			require.Len(t, fromProxy.From, 1)
			require.Nil(t, fromProxy.From[0].NamespaceSelector, "the proxy is in the release's namespace")
			proxySel, err := metav1LabelSelector(fromProxy.From[0].PodSelector.MatchLabels)
			require.NoError(t, err)
			require.True(t, proxySel.Matches(labels.Set(p.Spec.Template.Labels)), "the policy does not admit the proxy's pods")
			require.False(t, proxySel.Matches(labels.Set(broker.Spec.Template.Labels)), "the policy admits every pod of the release")
			require.Len(t, fromMonitoring.From, 1)
			require.Equal(t, map[string]string{"kubernetes.io/metadata.name": "monitoring"},
				fromMonitoring.From[0].NamespaceSelector.MatchLabels)
			c := container(t, broker)
			for _, rule := range np.Spec.Ingress {
				require.Len(t, rule.Ports, 1)
				require.Equal(t, int32(6632), portNumber(t, c, *rule.Ports[0].Port), "the policy opens another port than the brokers'")
			}
			// With its admin listener on the pod's address, the proxy's admin port is
			// open to the monitoring namespace only; its public port to everyone.
			pnp, ok := r.policies["queen-proxy"]
			env := r.environ(t, p)
			if env["QUEEN_PROXY_ADMIN_LISTEN"] != "0.0.0.0:6641" {
				require.False(t, ok, "a proxy policy without an exposed admin listener")
				return
			}
			require.True(t, ok, "the proxy's admin port is open to every pod")
			pc := container(t, p)
			require.Len(t, pnp.Spec.Ingress, 2)
			require.Empty(t, pnp.Spec.Ingress[0].From, "the public port is for every client")
			require.Equal(t, int32(6640), portNumber(t, pc, *pnp.Spec.Ingress[0].Ports[0].Port))
			require.Equal(t, int32(6641), portNumber(t, pc, *pnp.Spec.Ingress[1].Ports[0].Port))
			require.Equal(t, fromMonitoring.From, pnp.Spec.Ingress[1].From, "the admin port is for the monitoring namespace")
		})
	}
}

// TestDeploymentShape: replicas as asked, a rollout that keeps capacity (or, with one
// claim, Recreate), the grace period covering the drain, a budget that fits, and the
// spool volume of the chosen type with the cap below its size.
func TestDeploymentShape(t *testing.T) {
	t.Parallel()
	for _, vc := range matrix() {
		t.Run(vc.name, func(t *testing.T) {
			t.Parallel()
			r := objects(t, vc)
			d := r.broker(t)
			require.NotNil(t, d.Spec.Replicas)
			require.True(t, *d.Spec.Replicas >= 1 && *d.Spec.Replicas <= 3)
			require.Equal(t, d.Spec.Selector.MatchLabels["app.kubernetes.io/component"], "broker")
			sel, err := metav1LabelSelector(d.Spec.Selector.MatchLabels)
			require.NoError(t, err)
			require.True(t, sel.Matches(labels.Set(d.Spec.Template.Labels)))
			cfg, err := config.Load(environList(r.environ(t, d)))
			require.NoError(t, err)
			grace := *d.Spec.Template.Spec.TerminationGracePeriodSeconds
			require.Greater(t, float64(grace), (cfg.ShutdownDelay + cfg.ShutdownTimeout).Seconds(), "grace period below the drain")
			rp := container(t, d).ReadinessProbe
			require.Less(t, float64(rp.PeriodSeconds*rp.FailureThreshold), cfg.ShutdownDelay.Seconds(),
				"readiness notices the drain only after the listener has closed")
			var vol *corev1.Volume
			for i := range d.Spec.Template.Spec.Volumes {
				if d.Spec.Template.Spec.Volumes[i].Name == "spool" {
					vol = &d.Spec.Template.Spec.Volumes[i]
				}
			}
			require.NotNil(t, vol)
			if vc.name == "PVCSpool" {
				require.Equal(t, appsv1.RecreateDeploymentStrategyType, d.Spec.Strategy.Type, "one claim: Recreate")
				require.Equal(t, int32(1), *d.Spec.Replicas)
				require.NotNil(t, vol.PersistentVolumeClaim)
				claim := r.claims[vol.PersistentVolumeClaim.ClaimName]
				require.NotNil(t, claim, "the spool's claim is not rendered")
				size := claim.Spec.Resources.Requests[corev1.ResourceStorage]
				require.Less(t, cfg.SpoolMaxBytes, size.Value())
				require.Equal(t, "keep", claim.Annotations["helm.sh/resource-policy"])
			} else {
				require.Equal(t, appsv1.RollingUpdateDeploymentStrategyType, d.Spec.Strategy.Type)
				require.Equal(t, 0, d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue())
				require.NotNil(t, vol.EmptyDir)
				require.Less(t, cfg.SpoolMaxBytes, vol.EmptyDir.SizeLimit.Value())
			}
			pdb := r.budgets["queen"]
			require.NotNil(t, pdb)
			require.Equal(t, 1, pdb.Spec.MaxUnavailable.IntValue())
			pdbSel, err := metav1LabelSelector(pdb.Spec.Selector.MatchLabels)
			require.NoError(t, err)
			require.True(t, pdbSel.Matches(labels.Set(d.Spec.Template.Labels)))
			require.Equal(t, "registry.example.com/queen:"+loadChart(t).Metadata.AppVersion, container(t, d).Image,
				"the image tag defaults to the chart's appVersion")
		})
	}
}

func metav1LabelSelector(m map[string]string) (labels.Selector, error) {
	if len(m) == 0 {
		return nil, errors.New("empty selector")
	}
	return labels.SelectorFromSet(m), nil
}

// portNumber resolves a port (number or name) to one of the container's ports.
func portNumber(t *testing.T, c corev1.Container, port intstr.IntOrString) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
			return p.ContainerPort
		}
	}
	t.Fatalf("port %s is not a port of container %s", port.String(), c.Name)
	return 0
}
