// Package kubernetes_test checks the reference manifests of packaging/kubernetes (and the
// image definition they run, packaging/container/Containerfile) against the Kubernetes
// API types and against the broker itself: its routes, its default port, the settings
// it reads and how it parses them, and its drain on SIGTERM.
package kubernetes_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/httpapi"
	"github.com/queenmq/queen/internal/k8sdecode"
)

const (
	containerfile = "../container/Containerfile"
	// The image's user (Containerfile USER) and the pods' runAsUser/runAsGroup.
	queenUID = 65532
	// PostgreSQL's default max_connections, less its reserved superuser slots and some
	// room for other clients: the budget of replicas × DB_POOL_SIZE.
	pgConnectionBudget = 90
	maxReplicas        = 3
	// What terminationGracePeriodSeconds keeps beyond the drain for the process to exit.
	drainMargin = 5 * time.Second
	// The least time between SIGTERM and the listener closing, for the endpoints and
	// load balancers to stop sending new connections.
	minEndpointDelay = 3 * time.Second
)

// runtimeVariables are read by the Go runtime, not by internal/config; the pods may set
// them. (GOGC is also a broker setting.)
var runtimeVariables = []string{"GOMEMLIMIT"}

// imageOnlyVariables may be set by the image although the broker does not read them:
// the executable search path and queenctl's broker address.
var imageOnlyVariables = []string{"PATH", "QUEEN_SERVER"}

// object is one resource decoded from a manifest file.
type object struct {
	file string
	obj  runtime.Object
}

// decoder is a strict universal deserializer for the resource types the manifests use:
// unknown or duplicate fields, wrong case and wrong value types are errors, as with
// kubectl apply --validate=strict.
func decoder(t *testing.T) runtime.Decoder {
	t.Helper()
	dec, err := k8sdecode.NewDecoder(corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme)
	require.NoError(t, err)
	return dec
}

// decodeAll decodes every document of a YAML stream strictly (k8sdecode.All).
func decodeAll(dec runtime.Decoder, data []byte) ([]runtime.Object, error) {
	return k8sdecode.All(dec, data)
}

// loadObjects decodes every *.yaml file under this directory.
func loadObjects(t *testing.T) []object {
	t.Helper()
	dec := decoder(t)
	var objs []object
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		decoded, err := decodeAll(dec, data)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(decoded) == 0 {
			return fmt.Errorf("%s: no resource", path)
		}
		for _, o := range decoded {
			objs = append(objs, object{path, o})
		}
		return nil
	})
	require.NoError(t, err)
	return objs
}

// bundle is what one `kubectl apply` of the reference set creates: the shared resources
// and one workload, the Deployment (default) or the StatefulSet (alternative).
type bundle struct {
	name        string // file of the workload
	kind        string // Deployment or StatefulSet
	replicas    int32
	template    corev1.PodTemplateSpec
	selector    map[string]string
	claims      []corev1.PersistentVolumeClaim // StatefulSet volumeClaimTemplates
	configMaps  map[string]*corev1.ConfigMap
	secrets     map[string]*corev1.Secret
	services    []*corev1.Service
	budgets     []*policyv1.PodDisruptionBudget
	deployment  *appsv1.Deployment
	statefulSet *appsv1.StatefulSet
}

// bundles returns the two ways to apply the manifests, each with the shared resources
// of the top directory.
func bundles(t *testing.T) []*bundle {
	t.Helper()
	shared := &bundle{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	var out []*bundle
	for _, o := range loadObjects(t) {
		switch v := o.obj.(type) {
		case *corev1.ConfigMap:
			shared.configMaps[v.Name] = v
		case *corev1.Secret:
			shared.secrets[v.Name] = v
		case *corev1.Service:
			shared.services = append(shared.services, v)
		case *policyv1.PodDisruptionBudget:
			shared.budgets = append(shared.budgets, v)
		case *appsv1.Deployment:
			require.NotNil(t, v.Spec.Replicas, "%s: replicas", o.file)
			require.NotNil(t, v.Spec.Selector, "%s: selector", o.file)
			out = append(out, &bundle{name: o.file, kind: "Deployment", replicas: *v.Spec.Replicas,
				template: v.Spec.Template, selector: v.Spec.Selector.MatchLabels, deployment: v})
		case *appsv1.StatefulSet:
			require.NotNil(t, v.Spec.Replicas, "%s: replicas", o.file)
			require.NotNil(t, v.Spec.Selector, "%s: selector", o.file)
			out = append(out, &bundle{name: o.file, kind: "StatefulSet", replicas: *v.Spec.Replicas,
				template: v.Spec.Template, selector: v.Spec.Selector.MatchLabels,
				claims: v.Spec.VolumeClaimTemplates, statefulSet: v})
		default:
			t.Fatalf("%s: unexpected %T", o.file, v)
		}
	}
	for _, b := range out {
		b.configMaps, b.secrets, b.services, b.budgets = shared.configMaps, shared.secrets, shared.services, shared.budgets
	}
	return out
}

// container is the broker's container of the pod template (the only one).
func (b *bundle) container(t *testing.T) corev1.Container {
	t.Helper()
	require.Len(t, b.template.Spec.Containers, 1, "%s: one container", b.name)
	require.Empty(t, b.template.Spec.InitContainers, "%s: no init containers", b.name)
	return b.template.Spec.Containers[0]
}

// environ is the broker's environment as the kubelet builds it: the image's ENV, then
// envFrom in order, then env, each overriding what came before. fieldRef values get a
// pod-like placeholder.
func (b *bundle) environ(t *testing.T) map[string]string {
	t.Helper()
	c := b.container(t)
	env := maps.Clone(readContainerfile(t).env)
	for _, from := range c.EnvFrom {
		require.Empty(t, from.Prefix, "%s: envFrom prefix", b.name)
		switch {
		case from.ConfigMapRef != nil:
			cm, ok := b.configMaps[from.ConfigMapRef.Name]
			require.True(t, ok, "%s: envFrom names ConfigMap %q, which no manifest defines", b.name, from.ConfigMapRef.Name)
			maps.Copy(env, cm.Data)
		case from.SecretRef != nil:
			s, ok := b.secrets[from.SecretRef.Name]
			require.True(t, ok, "%s: envFrom names Secret %q, which no manifest defines", b.name, from.SecretRef.Name)
			maps.Copy(env, secretValues(s))
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			env[e.Name] = "queen-0"
		case e.ValueFrom.SecretKeyRef != nil:
			v, ok := secretValues(b.secrets[e.ValueFrom.SecretKeyRef.Name])[e.ValueFrom.SecretKeyRef.Key]
			require.True(t, ok, "%s: env %s: no such Secret key", b.name, e.Name)
			env[e.Name] = v
		case e.ValueFrom.ConfigMapKeyRef != nil:
			cm := b.configMaps[e.ValueFrom.ConfigMapKeyRef.Name]
			require.NotNil(t, cm, "%s: env %s: no such ConfigMap", b.name, e.Name)
			v, ok := cm.Data[e.ValueFrom.ConfigMapKeyRef.Key]
			require.True(t, ok, "%s: env %s: no such ConfigMap key", b.name, e.Name)
			env[e.Name] = v
		default:
			t.Fatalf("%s: env %s: unsupported valueFrom", b.name, e.Name)
		}
	}
	return env
}

func secretValues(s *corev1.Secret) map[string]string {
	out := map[string]string{}
	if s == nil {
		return out
	}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	maps.Copy(out, s.StringData) // the API server merges stringData over data
	return out
}

// loadConfig parses the broker's environment exactly as the broker does at start.
func (b *bundle) loadConfig(t *testing.T) *config.Config {
	t.Helper()
	env := b.environ(t)
	environ := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		environ = append(environ, k+"="+env[k])
	}
	cfg, err := config.Load(environ)
	require.NoError(t, err, "%s: the broker would refuse this environment (exit 78)", b.name)
	require.Empty(t, cfg.Warnings(), "%s: the broker would warn at start", b.name)
	return cfg
}

// configMap is the ConfigMap the pods read.
func (b *bundle) configMap(t *testing.T) *corev1.ConfigMap {
	t.Helper()
	for _, from := range b.container(t).EnvFrom {
		if from.ConfigMapRef != nil {
			return b.configMaps[from.ConfigMapRef.Name]
		}
	}
	t.Fatalf("%s: reads no ConfigMap", b.name)
	return nil
}

func forEachBundle(t *testing.T, f func(t *testing.T, b *bundle)) {
	t.Helper()
	bs := bundles(t)
	require.NotEmpty(t, bs)
	for _, b := range bs {
		t.Run(b.kind, func(t *testing.T) { f(t, b) })
	}
}

func TestManifestsDecodeStrictly(t *testing.T) {
	t.Parallel()
	var got []string
	for _, o := range loadObjects(t) {
		kind := strings.TrimPrefix(fmt.Sprintf("%T", o.obj), "*")
		name := ""
		if m, ok := o.obj.(interface{ GetName() string }); ok {
			name = m.GetName()
		}
		got = append(got, o.file+": "+kind+" "+name)
	}
	slices.Sort(got)
	require.Equal(t, []string{
		"configmap.yaml: v1.ConfigMap queen",
		"deployment.yaml: v1.Deployment queen",
		"pdb.yaml: v1.PodDisruptionBudget queen",
		"secret.yaml: v1.Secret queen-secrets",
		"service.yaml: v1.Service queen",
		filepath.Join("statefulset", "statefulset.yaml") + ": v1.StatefulSet queen",
	}, got)
}

// TestDecoderIsStrict proves the decoder refuses what the API server would: without
// it, TestManifestsDecodeStrictly would pass on typos.
func TestDecoderIsStrict(t *testing.T) {
	t.Parallel()
	dec := decoder(t)
	for name, doc := range map[string]string{
		"UnknownField":     "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {prots: []}\n",
		"WrongCase":        "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {Ports: []}\n",
		"DuplicateField":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {A: \"1\", A: \"2\"}\n",
		"UnquotedBoolean":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {PG_USE_SSL: false}\n",
		"UnknownKind":      "apiVersion: v1\nkind: Servcie\nmetadata: {name: x}\n",
		"IntegerForString": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicas: \"2\"}\n",
	} {
		_, err := decodeAll(dec, []byte(doc))
		require.Error(t, err, name)
	}
	objs, err := decodeAll(dec, []byte("# only a comment\n---\napiVersion: v1\nkind: Service\nmetadata: {name: x}\n"))
	require.NoError(t, err)
	require.Len(t, objs, 1)
}

// TestProbesUseServedRoutes: every probe asks a route of the real router; liveness and
// startup ask /health/live, which answers without a database (a PostgreSQL outage must
// not restart brokers), readiness asks /health/ready.
func TestProbesUseServedRoutes(t *testing.T) {
	t.Parallel()
	srv := httpapi.New(httpapi.Options{}, nil, nil)
	handler := srv.Handler()
	serve := func(method, path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		return w
	}
	// Control: the router's own answer, without running a handler that would need a
	// database.
	require.False(t, srv.Routed(http.MethodGet, "/health/not-a-route"))
	routedForGet := func(t *testing.T, path string) {
		t.Helper()
		require.True(t, srv.Routed(http.MethodGet, path), "GET %s is not a route of the broker", path)
	}
	live := serve(http.MethodGet, "/health/live")
	require.Equal(t, http.StatusOK, live.Code, "GET /health/live without a database: %s", live.Body)
	var body struct{ Status string }
	require.NoError(t, json.Unmarshal(live.Body.Bytes(), &body))
	require.Equal(t, "alive", body.Status)

	forEachBundle(t, func(t *testing.T, b *bundle) {
		c := b.container(t)
		probes := map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe}
		want := map[string]string{"startup": "/health/live", "liveness": "/health/live", "readiness": "/health/ready"}
		for kind, p := range probes {
			require.NotNil(t, p, "%s probe", kind)
			require.NotNil(t, p.HTTPGet, "%s probe: httpGet", kind)
			require.Equal(t, want[kind], p.HTTPGet.Path, "%s probe path", kind)
			require.Contains(t, []corev1.URIScheme{"", corev1.URISchemeHTTP}, p.HTTPGet.Scheme, "%s probe scheme", kind)
			require.Equal(t, int32(6632), containerPort(t, c, p.HTTPGet.Port), "%s probe port", kind)
			require.Positive(t, p.PeriodSeconds, "%s probe periodSeconds", kind)
			require.Positive(t, p.FailureThreshold, "%s probe failureThreshold", kind)
			require.Positive(t, p.TimeoutSeconds, "%s probe timeoutSeconds", kind)
			require.LessOrEqual(t, p.TimeoutSeconds, p.PeriodSeconds, "%s probe: timeout above the period", kind)
			routedForGet(t, p.HTTPGet.Path)
		}
		// The startup budget covers a spool scan at start; liveness does not kill a
		// broker for a pause shorter than the systemd watchdog's 30 s.
		require.GreaterOrEqual(t, c.StartupProbe.PeriodSeconds*c.StartupProbe.FailureThreshold, int32(60),
			"startup probe: less than a minute to start")
		require.GreaterOrEqual(t, c.LivenessProbe.PeriodSeconds*c.LivenessProbe.FailureThreshold, int32(20),
			"liveness probe: restarts after less than 20 s")
		require.LessOrEqual(t, c.ReadinessProbe.SuccessThreshold, int32(1), "readiness successThreshold")
	})
}

// containerPort resolves a probe's or Service's port (number or name) to a container
// port number.
func containerPort(t *testing.T, c corev1.Container, port intstr.IntOrString) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
			return p.ContainerPort
		}
	}
	t.Fatalf("port %s is not a port of container %s", port.String(), c.Name)
	return 0
}

// TestPortIsTheBrokersDefault: the container port, the Service, the image's EXPOSE and
// queenctl's QUEEN_SERVER all use the port the broker listens on.
func TestPortIsTheBrokersDefault(t *testing.T) {
	t.Parallel()
	defaults, err := config.Load(nil)
	require.NoError(t, err)
	img := readContainerfile(t)
	require.Equal(t, []string{strconv.Itoa(defaults.Port)}, img.expose, "Containerfile EXPOSE")
	require.Equal(t, "http://127.0.0.1:"+strconv.Itoa(defaults.Port), img.env["QUEEN_SERVER"], "Containerfile QUEEN_SERVER")

	forEachBundle(t, func(t *testing.T, b *bundle) {
		c := b.container(t)
		require.Len(t, c.Ports, 1)
		require.Equal(t, int32(defaults.Port), c.Ports[0].ContainerPort, "containerPort")
		require.Equal(t, "http", c.Ports[0].Name)
		require.Equal(t, defaults.Port, b.loadConfig(t).Port, "PORT must not be moved away from the container port")
		require.Equal(t, strconv.Itoa(defaults.Port), b.template.Annotations["prometheus.io/port"])
		require.Equal(t, "/metrics/prometheus", b.template.Annotations["prometheus.io/path"])

		require.Len(t, b.services, 1)
		svc := b.services[0]
		require.Equal(t, "queen", svc.Name)
		require.Contains(t, []corev1.ServiceType{"", corev1.ServiceTypeClusterIP}, svc.Spec.Type)
		require.Len(t, svc.Spec.Ports, 1)
		require.Equal(t, int32(defaults.Port), svc.Spec.Ports[0].Port, "Service port")
		require.Equal(t, int32(defaults.Port), containerPort(t, c, svc.Spec.Ports[0].TargetPort), "Service targetPort")
		require.True(t, labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(b.template.Labels)),
			"the Service does not select the pods")
		require.NotEmpty(t, svc.Spec.Selector)
		if b.statefulSet != nil {
			require.Equal(t, svc.Name, b.statefulSet.Spec.ServiceName, "StatefulSet serviceName")
		}
	})
}

// TestEnvironmentIsWhatTheBrokerReads: every variable the manifests set is a setting of
// the broker (or one the Go runtime reads), no key is in both the ConfigMap and the
// Secret, secrets stay in the Secret, and the broker accepts the whole environment
// without an error or a warning.
func TestEnvironmentIsWhatTheBrokerReads(t *testing.T) {
	t.Parallel()
	defaults, err := config.Load(nil)
	require.NoError(t, err)
	isSetting := func(name string) bool { return defaults.Source(name) != "" }
	img := readContainerfile(t)
	for name := range img.env {
		require.True(t, isSetting(name) || slices.Contains(imageOnlyVariables, name),
			"Containerfile ENV %s is not a variable queen reads", name)
	}

	forEachBundle(t, func(t *testing.T, b *bundle) {
		cm := b.configMap(t)
		var secretKeys []string
		for _, s := range b.secrets {
			secretKeys = slices.AppendSeq(secretKeys, maps.Keys(secretValues(s)))
		}
		names := slices.Concat(slices.Collect(maps.Keys(cm.Data)), secretKeys)
		for _, e := range b.container(t).Env {
			names = append(names, e.Name)
		}
		for _, name := range names {
			require.True(t, isSetting(name) || slices.Contains(runtimeVariables, name),
				"%s is not a variable queen reads", name)
		}
		for _, k := range secretKeys {
			require.NotContains(t, cm.Data, k, "%s is in both the ConfigMap and the Secret", k)
		}
		for _, k := range []string{"PG_PASSWORD", "JWT_SECRET", "QUEEN_ENCRYPTION_KEY"} {
			require.NotContains(t, cm.Data, k, "the secret %s belongs in the Secret", k)
		}
		require.Contains(t, secretKeys, "PG_PASSWORD")
		for _, s := range b.secrets {
			for k, v := range secretValues(s) {
				if k != "PG_USER" {
					require.True(t, strings.HasPrefix(v, "PLACEHOLDER-"), "Secret %s: %s must be a marked placeholder", s.Name, k)
				}
			}
		}
		cfg := b.loadConfig(t)
		require.Equal(t, config.SourceEnv, cfg.Source("PG_HOST"), "PG_HOST must be set")
		require.Equal(t, config.SourceEnv, cfg.Source("PG_PORT"),
			"PG_PORT must be set: a Service named pg would inject PG_PORT=tcp://…")
		// Each replica opens up to DB_POOL_SIZE connections plus three outside its pool
		// (the wake-up listener, the commit watch's two), and a Deployment's rollout runs
		// maxSurge more pods for a while.
		pods := maxReplicas
		if d := b.deployment; d != nil && d.Spec.Strategy.RollingUpdate != nil && d.Spec.Strategy.RollingUpdate.MaxSurge != nil {
			surge, err := intstr.GetScaledValueFromIntOrPercent(d.Spec.Strategy.RollingUpdate.MaxSurge, maxReplicas, true)
			require.NoError(t, err)
			pods += surge
		}
		require.LessOrEqual(t, pods*(cfg.DBPoolSize+3), pgConnectionBudget,
			"%d pods × (DB_POOL_SIZE=%d + 3) exceed PostgreSQL's default max_connections", pods, cfg.DBPoolSize)
		require.True(t, ptrFalse(b.template.Spec.EnableServiceLinks), "enableServiceLinks: false")
	})
}

// TestDrainTimelineFits: the kubelet's SIGKILL comes after the broker's whole drain
// (preStop, QUEEN_SHUTDOWN_DELAY, QUEEN_SHUTDOWN_TIMEOUT) plus a margin, and the
// readiness probe notices the drain while the broker still serves.
func TestDrainTimelineFits(t *testing.T) {
	t.Parallel()
	forEachBundle(t, func(t *testing.T, b *bundle) {
		cm := b.configMap(t)
		for _, k := range []string{"QUEEN_SHUTDOWN_DELAY", "QUEEN_SHUTDOWN_TIMEOUT"} {
			require.Contains(t, cm.Data, k, "the ConfigMap must state the drain timing")
		}
		cfg := b.loadConfig(t)
		c := b.container(t)
		var preStop time.Duration
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
			h := c.Lifecycle.PreStop
			require.Nil(t, h.Exec, "preStop exec: the image is FROM scratch, it has no shell or sleep")
			require.Nil(t, h.HTTPGet, "preStop httpGet: the broker has no such hook")
			require.NotNil(t, h.Sleep, "preStop: only the sleep action")
			preStop = time.Duration(h.Sleep.Seconds) * time.Second
		}
		spec := b.template.Spec
		require.NotNil(t, spec.TerminationGracePeriodSeconds, "terminationGracePeriodSeconds")
		grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
		drain := preStop + cfg.ShutdownDelay + cfg.ShutdownTimeout
		require.GreaterOrEqual(t, grace, drain+drainMargin,
			"terminationGracePeriodSeconds %v must exceed preStop %v + QUEEN_SHUTDOWN_DELAY %v + QUEEN_SHUTDOWN_TIMEOUT %v by %v",
			grace, preStop, cfg.ShutdownDelay, cfg.ShutdownTimeout, drainMargin)
		require.GreaterOrEqual(t, preStop+cfg.ShutdownDelay, minEndpointDelay,
			"the listener closes before the endpoints can stop sending")
		if cfg.ShutdownDelay > 0 {
			r := c.ReadinessProbe
			notice := time.Duration(r.PeriodSeconds*r.FailureThreshold) * time.Second
			require.Less(t, notice, cfg.ShutdownDelay,
				"readiness needs %v to notice the drain, longer than QUEEN_SHUTDOWN_DELAY", notice)
		}
	})
}

func TestSecurityContext(t *testing.T) {
	t.Parallel()
	img := readContainerfile(t)
	require.Equal(t, fmt.Sprintf("%d:%d", queenUID, queenUID), img.user, "Containerfile USER must be numeric and not root")
	forEachBundle(t, func(t *testing.T, b *bundle) {
		spec := b.template.Spec
		pod := spec.SecurityContext
		require.NotNil(t, pod)
		require.True(t, ptrTrue(pod.RunAsNonRoot), "runAsNonRoot")
		require.Equal(t, int64(queenUID), ptrVal(pod.RunAsUser), "runAsUser")
		require.Equal(t, int64(queenUID), ptrVal(pod.RunAsGroup), "runAsGroup")
		require.Equal(t, int64(queenUID), ptrVal(pod.FSGroup), "fsGroup: the spool volume must be writable")
		c := b.container(t)
		sc := c.SecurityContext
		require.NotNil(t, sc)
		require.True(t, ptrFalse(sc.AllowPrivilegeEscalation), "allowPrivilegeEscalation: false")
		require.True(t, ptrTrue(sc.ReadOnlyRootFilesystem), "readOnlyRootFilesystem")
		require.False(t, ptrTrue(sc.Privileged), "privileged")
		require.NotNil(t, sc.Capabilities)
		require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop, "drop ALL capabilities")
		require.Empty(t, sc.Capabilities.Add, "no added capability")
		require.False(t, sc.RunAsUser != nil && *sc.RunAsUser == 0, "container runAsUser 0")
		seccomp := pod.SeccompProfile
		if sc.SeccompProfile != nil {
			seccomp = sc.SeccompProfile
		}
		require.NotNil(t, seccomp, "seccompProfile")
		require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, seccomp.Type)
		require.True(t, ptrFalse(spec.AutomountServiceAccountToken),
			"automountServiceAccountToken: false, queen does not use the Kubernetes API")
		require.False(t, spec.HostNetwork || spec.HostPID || spec.HostIPC, "host namespaces")
		require.Empty(t, c.Command, "command: the image's ENTRYPOINT runs the broker")
		require.Equal(t, []string{"serve"}, c.Args)
		require.NotEmpty(t, c.Image)
	})
}

// TestReplicasAndDisruptionBudget: 1 to 3 replicas, and a budget that lets a node drain
// proceed at every replica count from 1 to 3 while keeping a pod serving when there
// are several.
func TestReplicasAndDisruptionBudget(t *testing.T) {
	t.Parallel()
	forEachBundle(t, func(t *testing.T, b *bundle) {
		require.True(t, b.replicas >= 1 && b.replicas <= maxReplicas, "replicas %d not within 1–%d", b.replicas, maxReplicas)
		require.Equal(t, b.selector, b.template.Labels, "the selector must match the pod labels")
		require.Len(t, b.budgets, 1)
		pdb := b.budgets[0]
		require.NotNil(t, pdb.Spec.Selector)
		sel := labels.SelectorFromSet(pdb.Spec.Selector.MatchLabels)
		require.NotEmpty(t, pdb.Spec.Selector.MatchLabels)
		require.True(t, sel.Matches(labels.Set(b.template.Labels)), "the PodDisruptionBudget does not select the pods")
		require.True(t, (pdb.Spec.MinAvailable == nil) != (pdb.Spec.MaxUnavailable == nil),
			"set exactly one of minAvailable and maxUnavailable")
		for r := 1; r <= maxReplicas; r++ {
			var down int
			var err error
			if pdb.Spec.MaxUnavailable != nil {
				down, err = intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, r, true)
			} else {
				var up int
				up, err = intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, r, true)
				down = r - up
			}
			require.NoError(t, err)
			require.GreaterOrEqual(t, down, 1, "%d replicas: the budget blocks every eviction (node drains hang)", r)
			if r > 1 {
				require.GreaterOrEqual(t, r-down, 1, "%d replicas: the budget lets every pod go at once", r)
			}
		}
		if d := b.deployment; d != nil {
			ru := d.Spec.Strategy.RollingUpdate
			require.Equal(t, appsv1.RollingUpdateDeploymentStrategyType, d.Spec.Strategy.Type)
			require.NotNil(t, ru)
			require.Equal(t, 0, ru.MaxUnavailable.IntValue(), "maxUnavailable: keep every replica serving during a rollout")
			require.GreaterOrEqual(t, ru.MaxSurge.IntValue(), 1, "maxSurge")
		}
		if s := b.statefulSet; s != nil {
			require.Equal(t, appsv1.ParallelPodManagement, s.Spec.PodManagementPolicy)
			require.Equal(t, appsv1.RollingUpdateStatefulSetStrategyType, s.Spec.UpdateStrategy.Type)
		}
	})
}

// TestSpoolVolume: FILE_BUFFER_DIR is a writable mount of the spool volume, on disk,
// and QUEEN_SPOOL_MAX_BYTES keeps the spool below the volume's size.
func TestSpoolVolume(t *testing.T) {
	t.Parallel()
	img := readContainerfile(t)
	forEachBundle(t, func(t *testing.T, b *bundle) {
		cfg := b.loadConfig(t)
		require.Equal(t, img.env["FILE_BUFFER_DIR"], cfg.FileBufferDir, "the image and the pods disagree on FILE_BUFFER_DIR")
		require.Equal(t, []string{cfg.FileBufferDir}, img.volumes, "Containerfile VOLUME")
		c := b.container(t)
		var mount *corev1.VolumeMount
		for i, m := range c.VolumeMounts {
			if m.MountPath == cfg.FileBufferDir {
				mount = &c.VolumeMounts[i]
			}
		}
		require.NotNil(t, mount, "FILE_BUFFER_DIR %s is not a volume mount: the root file system is read-only", cfg.FileBufferDir)
		require.False(t, mount.ReadOnly)
		require.Empty(t, mount.SubPath)
		require.Positive(t, cfg.SpoolMaxBytes, "QUEEN_SPOOL_MAX_BYTES must cap the spool below the volume")
		spoolMax := resource.NewQuantity(cfg.SpoolMaxBytes, resource.BinarySI)

		var size resource.Quantity
		switch b.kind {
		case "Deployment":
			var vol *corev1.Volume
			for i, v := range b.template.Spec.Volumes {
				if v.Name == mount.Name {
					vol = &b.template.Spec.Volumes[i]
				}
			}
			require.NotNil(t, vol, "volume %s", mount.Name)
			require.NotNil(t, vol.EmptyDir, "the Deployment's spool is an emptyDir")
			require.Equal(t, corev1.StorageMediumDefault, vol.EmptyDir.Medium, "the spool must be on disk (fsync), not tmpfs")
			require.NotNil(t, vol.EmptyDir.SizeLimit, "emptyDir sizeLimit")
			size = *vol.EmptyDir.SizeLimit
			req, lim := c.Resources.Requests[corev1.ResourceEphemeralStorage], c.Resources.Limits[corev1.ResourceEphemeralStorage]
			require.GreaterOrEqual(t, req.Cmp(size), 0, "ephemeral-storage request must reserve the spool's sizeLimit")
			require.Positive(t, lim.Cmp(size), "ephemeral-storage limit must exceed the spool's sizeLimit (logs count too)")
		case "StatefulSet":
			require.Empty(t, b.template.Spec.Volumes, "the StatefulSet's spool comes from its claim template")
			var claim *corev1.PersistentVolumeClaim
			for i, pvc := range b.claims {
				if pvc.Name == mount.Name {
					claim = &b.claims[i]
				}
			}
			require.NotNil(t, claim, "volumeClaimTemplate %s", mount.Name)
			require.Contains(t, claim.Spec.AccessModes, corev1.ReadWriteOnce)
			size = claim.Spec.Resources.Requests[corev1.ResourceStorage]
			require.False(t, size.IsZero(), "claim storage request")
			require.NotNil(t, b.statefulSet.Spec.PersistentVolumeClaimRetentionPolicy)
			require.Equal(t, appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				b.statefulSet.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled,
				"a claim left by a scale-down may hold pushes not yet replayed")
		}
		require.Negative(t, spoolMax.Cmp(size), "QUEEN_SPOOL_MAX_BYTES %s must be below the spool volume's %s", spoolMax, &size)
	})
}

var memLimitRE = regexp.MustCompile(`^([0-9]+)(B|KiB|MiB|GiB|TiB)?$`)

// goMemLimit parses GOMEMLIMIT as the Go runtime does (byte suffixes B to TiB).
func goMemLimit(s string) (int64, error) {
	m := memLimitRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("GOMEMLIMIT %q: not a size the Go runtime reads", s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	shift := map[string]uint{"": 0, "B": 0, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40}[m[2]]
	return n << shift, err
}

func TestResources(t *testing.T) {
	t.Parallel()
	forEachBundle(t, func(t *testing.T, b *bundle) {
		res := b.container(t).Resources
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			q, ok := res.Requests[r]
			require.True(t, ok && !q.IsZero(), "requests.%s", r)
		}
		limit, ok := res.Limits[corev1.ResourceMemory]
		require.True(t, ok && !limit.IsZero(), "limits.memory")
		req := res.Requests[corev1.ResourceMemory]
		require.LessOrEqual(t, req.Cmp(limit), 0, "requests.memory above limits.memory")
		_, cpuLimit := res.Limits[corev1.ResourceCPU]
		require.False(t, cpuLimit, "no CPU limit: throttling stalls long-polls and probes")
		env := b.environ(t)
		gml, err := goMemLimit(env["GOMEMLIMIT"])
		require.NoError(t, err)
		require.Less(t, gml, limit.Value(), "GOMEMLIMIT must be below the memory limit")
		require.Greater(t, gml, limit.Value()*3/4, "GOMEMLIMIT far below the memory limit wastes it")
	})
}

// containerfileInfo is what the tests read from the Containerfile's final stage.
type containerfileInfo struct {
	froms      []string
	user       string
	expose     []string
	env        map[string]string
	volumes    []string
	labels     map[string]string
	stopSignal string
	entrypoint string
}

// readContainerfile parses the instructions the tests care about; comments and line
// continuations are handled, quoting only as far as the file uses it.
func readContainerfile(t *testing.T) containerfileInfo {
	t.Helper()
	data, err := os.ReadFile(containerfile)
	require.NoError(t, err)
	info := containerfileInfo{env: map[string]string{}, labels: map[string]string{}}
	var lines []string
	var cur strings.Builder
	for line := range strings.SplitSeq(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		if rest, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(rest + " ")
			continue
		}
		cur.WriteString(trimmed)
		lines = append(lines, cur.String())
		cur.Reset()
	}
	pairRE := regexp.MustCompile(`([A-Za-z0-9_.-]+)=("(?:[^"\\]|\\.)*"|\S+)`)
	pairs := func(s string) map[string]string {
		out := map[string]string{}
		for _, m := range pairRE.FindAllStringSubmatch(s, -1) {
			v := m[2]
			if uq, err := strconv.Unquote(v); err == nil {
				v = uq
			}
			out[m[1]] = v
		}
		return out
	}
	for _, l := range lines {
		instr, args, _ := strings.Cut(l, " ")
		args = strings.TrimSpace(args)
		switch strings.ToUpper(instr) {
		case "FROM":
			info.froms = append(info.froms, strings.Fields(args)[0])
		case "USER":
			info.user = args
		case "EXPOSE":
			info.expose = append(info.expose, strings.Fields(args)...)
		case "ENV":
			maps.Copy(info.env, pairs(args))
		case "LABEL":
			maps.Copy(info.labels, pairs(args))
		case "VOLUME":
			info.volumes = append(info.volumes, jsonArray(t, args)...)
		case "STOPSIGNAL":
			info.stopSignal = args
		case "ENTRYPOINT":
			info.entrypoint = strings.Join(jsonArray(t, args), " ")
		}
	}
	return info
}

func jsonArray(t *testing.T, s string) []string {
	t.Helper()
	s = strings.TrimSpace(s)
	require.True(t, strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"), "exec form expected: %s", s)
	var out []string
	for f := range strings.SplitSeq(strings.Trim(s, "[]"), ",") {
		v, err := strconv.Unquote(strings.TrimSpace(f))
		require.NoError(t, err, "%s", s)
		out = append(out, v)
	}
	return out
}

// TestContainerfile: the default build pulls no image (no registry is needed), and the
// image is what the manifests assume.
func TestContainerfile(t *testing.T) {
	t.Parallel()
	img := readContainerfile(t)
	require.Equal(t, []string{"scratch"}, img.froms, "the default build must be FROM scratch only (no registry)")
	require.Equal(t, "SIGTERM", img.stopSignal)
	require.Equal(t, "/usr/bin/queen", img.entrypoint)
	require.Equal(t, "/usr/bin", img.env["PATH"], "queenctl on PATH")
	for _, k := range []string{"title", "description", "version", "revision", "created", "source"} {
		require.NotEmpty(t, img.labels["org.opencontainers.image."+k], "OCI label %s", k)
	}
}

func ptrTrue(b *bool) bool { return b != nil && *b }

func ptrFalse(b *bool) bool { return b != nil && !*b }

func ptrVal(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}
