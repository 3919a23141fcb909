package helm_test

import (
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// plainValues are the chart's values for what packaging/kubernetes applies: its image,
// and the Secret queen-secrets that the operator creates (secret.yaml) as the existing
// Secret of the database password (authentication is off in both, so neither gives the
// broker a JWT secret). Everything else is the chart's defaults, which must therefore
// be the manifests' settings.
const plainValues = `
image: {repository: registry.example.com/queen, tag: 1.0.0}
postgresql: {existingSecret: queen-secrets, existingSecretKey: PG_PASSWORD}
`

// plainManifests decodes the top-level files of packaging/kubernetes (the Deployment
// variant; the StatefulSet variant has no counterpart in the chart).
func plainManifests(t *testing.T) *releaseObjects {
	t.Helper()
	dec := decoder(t)
	r := &releaseObjects{
		deployments: map[string]*appsv1.Deployment{}, configMaps: map[string]*corev1.ConfigMap{},
		secrets: map[string]*corev1.Secret{}, services: map[string]*corev1.Service{},
		budgets: map[string]*policyv1.PodDisruptionBudget{},
	}
	files, err := filepath.Glob(filepath.Join("..", "kubernetes", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		objs, err := decodeAll(dec, string(data))
		require.NoError(t, err, f)
		for _, o := range objs {
			switch v := o.(type) {
			case *appsv1.Deployment:
				r.deployments[v.Name] = v
			case *corev1.ConfigMap:
				r.configMaps[v.Name] = v
			case *corev1.Secret:
				r.secrets[v.Name] = v
			case *corev1.Service:
				r.services[v.Name] = v
			case *policyv1.PodDisruptionBudget:
				r.budgets[v.Name] = v
			default:
				t.Fatalf("%s: unexpected %T", f, v)
			}
		}
	}
	return r
}

// plainEnviron is the broker's environment under the plain manifests: the ConfigMap
// and the Secret through envFrom, then env.
func plainEnviron(t *testing.T, r *releaseObjects) map[string]string {
	t.Helper()
	d := r.broker(t)
	c := container(t, d)
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			maps.Copy(env, r.configMaps[from.ConfigMapRef.Name].Data)
		case from.SecretRef != nil:
			maps.Copy(env, r.secrets[from.SecretRef.Name].StringData)
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			env[e.Name] = d.Name + "-0"
		default:
			t.Fatalf("plain manifests: env %s: unsupported valueFrom", e.Name)
		}
	}
	return env
}

// TestPlainManifestsAgreeWithTheChart: packaging/kubernetes stays as plain manifests
// and is checked against the chart rendered with plainValues. The broker gets the same
// environment, names and values (PG_USER is in the chart's ConfigMap, in the plain
// Secret), and the pods the same image, arguments, ports, probes, drain, security
// context, resources and spool volume; the Service and the PodDisruptionBudget the same
// specs. Labels and selectors differ by design: the chart adds
// app.kubernetes.io/instance, so two releases do not select each other's pods.
func TestPlainManifestsAgreeWithTheChart(t *testing.T) {
	t.Parallel()
	plain := plainManifests(t)
	chart := objects(t, valueCase{name: "PlainManifests", values: plainValues})
	plainSecret := plain.secrets["queen-secrets"]
	require.NotNil(t, plainSecret)
	// The chart reads queen-secrets as an existing Secret: resolve it from secret.yaml.
	chart.secrets["queen-secrets"] = plainSecret

	pd, cd := plain.broker(t), chart.broker(t)
	require.Equal(t, *pd.Spec.Replicas, *cd.Spec.Replicas, "replicas")
	require.Equal(t, pd.Spec.RevisionHistoryLimit, cd.Spec.RevisionHistoryLimit, "revisionHistoryLimit")
	require.True(t, equality.Semantic.DeepEqual(pd.Spec.Strategy, cd.Spec.Strategy), "strategy: %v vs %v", pd.Spec.Strategy, cd.Spec.Strategy)
	require.Equal(t, plainEnviron(t, plain), chart.environ(t, cd), "the broker's environment")

	ps, cs := pd.Spec.Template.Spec, cd.Spec.Template.Spec
	require.Equal(t, ps.TerminationGracePeriodSeconds, cs.TerminationGracePeriodSeconds, "terminationGracePeriodSeconds")
	require.Equal(t, ps.EnableServiceLinks, cs.EnableServiceLinks, "enableServiceLinks")
	require.Equal(t, ps.AutomountServiceAccountToken, cs.AutomountServiceAccountToken, "automountServiceAccountToken")
	require.True(t, equality.Semantic.DeepEqual(ps.SecurityContext, cs.SecurityContext), "pod securityContext")
	require.True(t, equality.Semantic.DeepEqual(ps.Volumes, cs.Volumes), "volumes: %v vs %v", ps.Volumes, cs.Volumes)
	require.Len(t, cs.TopologySpreadConstraints, len(ps.TopologySpreadConstraints))
	for i, p := range ps.TopologySpreadConstraints {
		c := cs.TopologySpreadConstraints[i]
		require.Equal(t, p.TopologyKey, c.TopologyKey)
		require.Equal(t, p.MaxSkew, c.MaxSkew)
		require.Equal(t, p.WhenUnsatisfiable, c.WhenUnsatisfiable)
	}
	for _, k := range []string{"prometheus.io/scrape", "prometheus.io/port", "prometheus.io/path"} {
		require.Equal(t, pd.Spec.Template.Annotations[k], cd.Spec.Template.Annotations[k], "annotation %s", k)
	}

	pc, cc := container(t, pd), container(t, cd)
	require.Equal(t, pc.Name, cc.Name, "container name")
	require.Equal(t, pc.Image, cc.Image, "image")
	require.Equal(t, pc.ImagePullPolicy, cc.ImagePullPolicy, "imagePullPolicy")
	require.Equal(t, pc.Command, cc.Command, "command")
	require.Equal(t, pc.Args, cc.Args, "args")
	require.Equal(t, pc.Ports, cc.Ports, "ports")
	for name, probes := range map[string][2]*corev1.Probe{
		"startup": {pc.StartupProbe, cc.StartupProbe}, "liveness": {pc.LivenessProbe, cc.LivenessProbe},
		"readiness": {pc.ReadinessProbe, cc.ReadinessProbe},
	} {
		require.True(t, equality.Semantic.DeepEqual(probes[0], probes[1]), "%s probe: %v vs %v", name, probes[0], probes[1])
	}
	require.Equal(t, pc.Lifecycle, cc.Lifecycle, "lifecycle (preStop)")
	require.True(t, equality.Semantic.DeepEqual(pc.Resources, cc.Resources), "resources: %v vs %v", pc.Resources, cc.Resources)
	require.True(t, equality.Semantic.DeepEqual(pc.SecurityContext, cc.SecurityContext), "container securityContext")
	require.Equal(t, pc.VolumeMounts, cc.VolumeMounts, "volumeMounts")

	psvc, csvc := plain.services["queen"], chart.services["queen"]
	require.NotNil(t, psvc)
	require.NotNil(t, csvc)
	require.Equal(t, psvc.Spec.Type, csvc.Spec.Type, "Service type")
	require.Equal(t, psvc.Spec.Ports, csvc.Spec.Ports, "Service ports")

	ppdb, cpdb := plain.budgets["queen"], chart.budgets["queen"]
	require.NotNil(t, ppdb)
	require.NotNil(t, cpdb)
	require.Equal(t, ppdb.Spec.MaxUnavailable, cpdb.Spec.MaxUnavailable, "PodDisruptionBudget maxUnavailable")
	require.Equal(t, ppdb.Spec.MinAvailable, cpdb.Spec.MinAvailable, "PodDisruptionBudget minAvailable")
	for _, c := range []map[string]string{csvc.Spec.Selector, cpdb.Spec.Selector.MatchLabels, cd.Spec.Selector.MatchLabels} {
		for k, v := range psvc.Spec.Selector {
			require.Equal(t, v, c[k], "the chart's selectors must include the plain ones (%s)", k)
		}
	}
}
