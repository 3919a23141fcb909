package helm_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"

	"github.com/queenmq/queen/internal/config"
)

// TestSecretEnvRendersSecretKeyRefs: the SecretEnv case's broker reads exactly the two
// variables of its secretEnv from the named Secrets and keys, sorted by name, and the
// values reach the broker (the key completes config's PG_SSL_CERT to a key pair).
func TestSecretEnvRendersSecretKeyRefs(t *testing.T) {
	t.Parallel()
	vc := caseNamed(t, "SecretEnv")
	r := objects(t, vc)
	d := r.broker(t)
	var refs []corev1.EnvVar
	for _, e := range container(t, d).Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			refs = append(refs, e)
		}
	}
	ref := func(name, secret, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
	}
	require.Equal(t, []corev1.EnvVar{
		ref("OTEL_EXPORTER_OTLP_HEADERS", "otel-collector", "headers"),
		ref("PG_SSL_KEY", "pg-client-cert", "tls.key"),
	}, refs)

	_, keyPEM := testClientCert()
	cfg, err := config.Load(environList(r.environ(t, d)))
	require.NoError(t, err)
	require.Equal(t, keyPEM, cfg.PGSSLKey)
	require.Equal(t, map[string]string{"authorization": "Bearer otlp-token-for-the-test"}, cfg.Tracing.OTLP.Headers)
}

// TestSecretEnvRefusesEveryVariableTheChartSets: each variable any case of the matrix
// gives the broker, other than those of its config and secretEnv, is refused under
// secretEnv as set by the chart; so a variable the chart comes to set cannot be
// forgotten in the chart's list.
func TestSecretEnvRefusesEveryVariableTheChartSets(t *testing.T) {
	t.Parallel()
	chartSet := map[string]bool{}
	for _, vc := range matrix() {
		vals, err := chartutil.ReadValues([]byte(vc.values))
		require.NoError(t, err)
		r := objects(t, vc)
		for name := range r.environ(t, r.broker(t)) {
			if _, err := vals.PathValue("config." + name); err == nil {
				continue
			}
			if _, err := vals.Table("secretEnv." + name); err == nil {
				continue
			}
			chartSet[name] = true
		}
	}
	require.Contains(t, chartSet, "QUEEN_TENANCY_HEADER", "the matrix lacks a case with the proxy on")
	for _, name := range slices.Sorted(maps.Keys(chartSet)) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := renderFiles(t, fmt.Sprintf("secretEnv: {%s: {name: s, key: k}}", name), false)
			require.Error(t, err)
			require.Contains(t, err.Error(), "secretEnv."+name+": set by the chart itself; ")
		})
	}
}

// TestChartListsTheBrokersSettings: files/broker-settings.txt, the names the chart
// accepts under secretEnv, is the broker's settings table, sorted, one a line.
func TestChartListsTheBrokersSettings(t *testing.T) {
	t.Parallel()
	var names []string
	for _, r := range config.References() {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	want := strings.Join(names, "\n") + "\n"
	got, err := os.ReadFile(filepath.Join(chartDir, "files", "broker-settings.txt"))
	require.NoError(t, err)
	require.Equal(t, want, string(got), "packaging/helm/queen/files/broker-settings.txt must list the broker's settings "+
		"(config.References()), sorted, one a line")
}

// caseNamed is the matrix's case of that name.
func caseNamed(t *testing.T, name string) valueCase {
	t.Helper()
	for _, vc := range matrix() {
		if vc.name == name {
			return vc
		}
	}
	t.Fatalf("no case %s in the matrix", name)
	return valueCase{}
}
