package helm_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/queenmq/queen/internal/k8sdecode"
)

const (
	chartDir = "queen"
	release  = "queen"
	// namespace is the release's namespace in every render.
	namespace = "queen"
	// monitoringAPI is the API group version of the Prometheus Operator's objects.
	monitoringAPI = "monitoring.coreos.com/v1"
)

// Placeholder secrets that satisfy both daemons' checks (lengths, hex).
const (
	testPGPassword    = "pg-password-for-the-test"
	testJWTSecret     = "jwt-secret-for-the-test-0123456789abcdef"
	testEncryptionKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	testAdminToken    = "admin-token-for-the-test-0123456789abcdef"
	testSessionKey    = "session-key-for-the-test-0123456789abcdef"
	testOTLPHeaders   = "authorization=Bearer%20otlp-token-for-the-test"
)

// testClientCert is a client certificate and its unencrypted key, PEM, made once per
// run: the broker checks that PG_SSL_CERT and PG_SSL_KEY are a key pair, so the
// SecretEnv case needs a real one.
var testClientCert = sync.OnceValues(func() (certPEM, keyPEM string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "queen"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		panic(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
})

// valueCase is one row of the render matrix: values as a user would write them in a
// values file, and whether the cluster serves the Prometheus Operator's API.
type valueCase struct {
	name       string
	values     string
	monitoring bool
}

// matrix is what every render test runs over.
func matrix() []valueCase {
	certPEM, _ := testClientCert()
	return []valueCase{
		{name: "Defaults", values: ""},
		{name: "ThreeReplicas", values: "replicaCount: 3\npostgresql: {password: " + testPGPassword + "}\n"},
		{name: "Proxy", values: `
postgresql: {password: ` + testPGPassword + `}
proxy:
  enabled: true
  postgresql: {password: ` + testPGPassword + `}
  sessionKey: ` + testSessionKey + `
`},
		{name: "ProxyMonitoring", monitoring: true, values: `
postgresql: {password: ` + testPGPassword + `}
auth: {enabled: true, secret: ` + testJWTSecret + `}
encryption: {key: "` + testEncryptionKey + `"}
proxy:
  enabled: true
  brokerAuth: jwt
  postgresql: {password: ` + testPGPassword + `}
  adminToken: ` + testAdminToken + `
  sessionKey: ` + testSessionKey + `
  metrics: {enabled: true}
monitoring:
  serviceMonitor: {enabled: true, labels: {release: prometheus}}
  prometheusRule: {enabled: true}
  grafanaDashboard: {enabled: true}
`},
		{name: "ExistingSecrets", values: `
postgresql: {existingSecret: queen-db, existingSecretKey: password}
auth: {enabled: true, existingSecret: queen-jwt, existingSecretKey: hs256}
encryption: {existingSecret: queen-encryption}
proxy:
  enabled: true
  brokerAuth: jwt
  postgresql: {existingSecret: queen-proxy-db, existingSecretKey: password}
  adminTokenExistingSecret: queen-proxy-admin
  sessionKeyExistingSecret: queen-proxy-session
  metrics: {enabled: true}
`},
		{name: "PVCSpool", values: `
replicaCount: 1
postgresql: {password: ` + testPGPassword + `}
spool:
  type: persistentVolumeClaim
  persistentVolumeClaim: {storageClassName: fast, size: 4Gi}
resources:
  requests: {cpu: 250m, memory: 128Mi, ephemeral-storage: 256Mi}
  limits: {memory: 512Mi, ephemeral-storage: 1Gi}
`},
		// Two secrets the chart has no value of its own for, from the user's Secrets;
		// the certificate of the key is not a secret and goes under config.
		{name: "SecretEnv", values: `
postgresql: {useSSL: true}
config:
  PG_SSL_CERT: ` + strconv.Quote(certPEM) + `
  OTEL_TRACES_EXPORTER: otlp
  OTEL_EXPORTER_OTLP_ENDPOINT: http://otel-collector.monitoring.svc:4318
secretEnv:
  PG_SSL_KEY: {name: pg-client-cert, key: tls.key}
  OTEL_EXPORTER_OTLP_HEADERS: {name: otel-collector, key: headers}
`},
	}
}

// existingSecrets are the Secrets the ExistingSecrets and SecretEnv cases name, as the
// operator would have created them, for building the pods' environment.
func existingSecrets() map[string]map[string]string {
	_, keyPEM := testClientCert()
	return map[string]map[string]string{
		"pg-client-cert":      {"tls.key": keyPEM},
		"otel-collector":      {"headers": testOTLPHeaders},
		"queen-db":            {"password": testPGPassword},
		"queen-jwt":           {"hs256": testJWTSecret},
		"queen-encryption":    {"QUEEN_ENCRYPTION_KEY": testEncryptionKey},
		"queen-proxy-db":      {"password": testPGPassword},
		"queen-proxy-admin":   {"QUEEN_PROXY_ADMIN_TOKEN": testAdminToken},
		"queen-proxy-session": {"QUEEN_PROXY_SESSION_KEY": testSessionKey},
	}
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	require.NoError(t, err)
	return c
}

// capabilities are Helm's defaults, plus the Prometheus Operator's API when asked.
func capabilities(monitoring bool) *chartutil.Capabilities {
	caps := chartutil.DefaultCapabilities.Copy()
	if monitoring {
		caps.APIVersions = append(slices.Clone(caps.APIVersions), monitoringAPI)
	}
	return caps
}

// renderValues coalesces the user values with the chart's and validates them against
// values.schema.json, as helm install does.
func renderValues(t *testing.T, c *chart.Chart, values string, monitoring bool) (chartutil.Values, error) {
	t.Helper()
	vals, err := chartutil.ReadValues([]byte(values))
	require.NoError(t, err)
	opts := chartutil.ReleaseOptions{Name: release, Namespace: namespace, Revision: 1, IsInstall: true}
	return chartutil.ToRenderValuesWithSchemaValidation(c, vals, opts, capabilities(monitoring), false)
}

// renderFiles renders the chart: template path → output. Errors are returned, for
// tests of what the chart refuses.
func renderFiles(t *testing.T, values string, monitoring bool) (map[string]string, error) {
	t.Helper()
	c := loadChart(t)
	vals, err := renderValues(t, c, values, monitoring)
	if err != nil {
		return nil, err
	}
	return engine.Render(c, vals)
}

// rendered is one object of a render, decoded.
type rendered struct {
	file string
	obj  runtime.Object
}

// decoder decodes strictly into the types the chart may render: unknown or duplicate
// fields, wrong case and wrong value types are errors.
func decoder(t *testing.T) runtime.Decoder {
	t.Helper()
	dec, err := k8sdecode.NewDecoder(corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme,
		networkingv1.AddToScheme, monitoringv1.AddToScheme)
	require.NoError(t, err)
	return dec
}

// decodeAll decodes every YAML document of data.
func decodeAll(dec runtime.Decoder, data string) ([]runtime.Object, error) {
	return k8sdecode.All(dec, []byte(data))
}

// render renders a case and decodes every object strictly; it fails the test on any
// error.
func render(t *testing.T, vc valueCase) []rendered {
	t.Helper()
	files, err := renderFiles(t, vc.values, vc.monitoring)
	require.NoError(t, err, "render %s", vc.name)
	dec := decoder(t)
	var out []rendered
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		objs, err := decodeAll(dec, files[name])
		require.NoError(t, err, "%s: %s", vc.name, name)
		for _, o := range objs {
			out = append(out, rendered{file: name, obj: o})
		}
	}
	return out
}

// releaseObjects is a render sorted by kind, with the lookups the tests need.
type releaseObjects struct {
	all         []rendered
	deployments map[string]*appsv1.Deployment
	configMaps  map[string]*corev1.ConfigMap
	secrets     map[string]*corev1.Secret
	services    map[string]*corev1.Service
	budgets     map[string]*policyv1.PodDisruptionBudget
	claims      map[string]*corev1.PersistentVolumeClaim
	policies    map[string]*networkingv1.NetworkPolicy
	monitors    map[string]*monitoringv1.ServiceMonitor
	rules       map[string]*monitoringv1.PrometheusRule
}

func objects(t *testing.T, vc valueCase) *releaseObjects {
	t.Helper()
	r := &releaseObjects{
		deployments: map[string]*appsv1.Deployment{}, configMaps: map[string]*corev1.ConfigMap{},
		secrets: map[string]*corev1.Secret{}, services: map[string]*corev1.Service{},
		budgets: map[string]*policyv1.PodDisruptionBudget{}, claims: map[string]*corev1.PersistentVolumeClaim{},
		policies: map[string]*networkingv1.NetworkPolicy{}, monitors: map[string]*monitoringv1.ServiceMonitor{},
		rules: map[string]*monitoringv1.PrometheusRule{},
	}
	r.all = render(t, vc)
	for _, o := range r.all {
		var name string
		switch v := o.obj.(type) {
		case *appsv1.Deployment:
			name, r.deployments[v.Name] = v.Name, v
		case *corev1.ConfigMap:
			name, r.configMaps[v.Name] = v.Name, v
		case *corev1.Secret:
			name, r.secrets[v.Name] = v.Name, v
		case *corev1.Service:
			name, r.services[v.Name] = v.Name, v
		case *policyv1.PodDisruptionBudget:
			name, r.budgets[v.Name] = v.Name, v
		case *corev1.PersistentVolumeClaim:
			name, r.claims[v.Name] = v.Name, v
		case *networkingv1.NetworkPolicy:
			name, r.policies[v.Name] = v.Name, v
		case *monitoringv1.ServiceMonitor:
			name, r.monitors[v.Name] = v.Name, v
		case *monitoringv1.PrometheusRule:
			name, r.rules[v.Name] = v.Name, v
		default:
			t.Fatalf("%s: %s renders an unexpected %T", vc.name, o.file, v)
		}
		require.NotEmpty(t, name, "%s: %s: an object without a name", vc.name, o.file)
	}
	return r
}

// broker and proxy are the two Deployments; proxy is nil when it is off.
func (r *releaseObjects) broker(t *testing.T) *appsv1.Deployment {
	t.Helper()
	d, ok := r.deployments["queen"]
	require.True(t, ok, "no Deployment queen")
	return d
}

func (r *releaseObjects) proxy() *appsv1.Deployment { return r.deployments["queen-proxy"] }

// container is a Deployment's one container.
func container(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	require.Len(t, d.Spec.Template.Spec.Containers, 1, "%s: one container", d.Name)
	require.Empty(t, d.Spec.Template.Spec.InitContainers, "%s: no init containers", d.Name)
	return d.Spec.Template.Spec.Containers[0]
}

// environ builds a container's environment as the kubelet does (envFrom in order,
// then env), reading Secrets from the render or, for existing ones, from
// existingSecrets. fieldRef values get a pod-like name.
func (r *releaseObjects) environ(t *testing.T, d *appsv1.Deployment) map[string]string {
	t.Helper()
	c := container(t, d)
	env := map[string]string{}
	secretValue := func(name, key string) (string, bool) {
		if s, ok := r.secrets[name]; ok {
			v, ok := s.StringData[key]
			if !ok {
				var b []byte
				b, ok = s.Data[key]
				v = string(b)
			}
			return v, ok
		}
		v, ok := existingSecrets()[name][key]
		return v, ok
	}
	for _, from := range c.EnvFrom {
		require.Empty(t, from.Prefix)
		require.NotNil(t, from.ConfigMapRef, "%s: envFrom reads only the chart's ConfigMap", d.Name)
		cm, ok := r.configMaps[from.ConfigMapRef.Name]
		require.True(t, ok, "%s: envFrom names ConfigMap %q, which the chart does not render", d.Name, from.ConfigMapRef.Name)
		maps.Copy(env, cm.Data)
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			env[e.Name] = d.Name + "-0"
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			v, ok := secretValue(ref.Name, ref.Key)
			require.True(t, ok, "%s: env %s: Secret %s has no key %s", d.Name, e.Name, ref.Name, ref.Key)
			env[e.Name] = v
		default:
			t.Fatalf("%s: env %s: unsupported valueFrom", d.Name, e.Name)
		}
	}
	return env
}

// environList is env as KEY=value entries, sorted.
func environList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}
