package conformance

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/ttis-dev/ttis/daemon"
	"github.com/ttis-dev/ttis/units"
)

// manifests is the folder of the Kubernetes manifests.
const manifests = "../kubernetes"

// objects decodes every document of every manifest strictly: an unknown
// or duplicate field, or a kind outside core/v1 and apps/v1, fails.
func objects(t *testing.T) []runtime.Object {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := appsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	dec := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	files, err := filepath.Glob(filepath.Join(manifests, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	var out []runtime.Object
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs := utilyaml.NewDocumentDecoder(io.NopCloser(bytes.NewReader(data)))
		buf := make([]byte, len(data)+1)
		for i := 0; ; i++ {
			n, err := docs.Read(buf)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			doc := bytes.TrimSpace(buf[:n])
			if len(doc) == 0 {
				continue
			}
			obj, _, err := dec.Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			out = append(out, obj)
		}
	}
	return out
}

func TestManifestsDecodeStrictly(t *testing.T) {
	var (
		ds       *appsv1.DaemonSet
		svc      *corev1.Service
		cms      = map[string]*corev1.ConfigMap{}
		secrets  = map[string]*corev1.Secret{}
		ns       string
		nsPassed bool
	)
	for _, o := range objects(t) {
		switch v := o.(type) {
		case *appsv1.DaemonSet:
			ds = v
		case *corev1.Service:
			svc = v
		case *corev1.ConfigMap:
			cms[v.Name] = v
		case *corev1.Secret:
			secrets[v.Name] = v
		case *corev1.Namespace:
			ns, nsPassed = v.Name, true
		default:
			t.Errorf("unexpected object %T", o)
		}
	}
	if ds == nil || svc == nil || !nsPassed {
		t.Fatalf("want a DaemonSet, a Service and a Namespace (got %v, %v, %q)", ds != nil, svc != nil, ns)
	}
	for _, m := range []string{ds.Namespace, svc.Namespace} {
		if m != ns {
			t.Errorf("object in namespace %q, want %q", m, ns)
		}
	}

	pod := ds.Spec.Template
	for k, v := range ds.Spec.Selector.MatchLabels {
		if pod.Labels[k] != v {
			t.Errorf("DaemonSet selector %s=%s does not match its pods", k, v)
		}
	}
	for k, v := range svc.Spec.Selector {
		if pod.Labels[k] != v {
			t.Errorf("Service selector %s=%s matches no ttisd pod", k, v)
		}
	}
	c := pod.Spec.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for _, p := range svc.Spec.Ports {
		if p.TargetPort.Type != intstr.String || ports[p.TargetPort.StrVal] == 0 {
			t.Errorf("Service port %s targets %v, not a named port of the container", p.Name, p.TargetPort.String())
		}
	}

	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		if _, ok := vols[m.Name]; !ok {
			t.Errorf("mount %s names no volume", m.Name)
		}
		mounts[m.MountPath] = m.Name
	}
	for path, hostPath := range map[string]string{"/dev/tenstorrent": "/dev/tenstorrent", "/dev/hugepages-1G": "/dev/hugepages-1G", "/var/lib/ttis": "/var/lib/ttis"} {
		v := vols[mounts[path]]
		if v.HostPath == nil || v.HostPath.Path != hostPath {
			t.Errorf("%s is not mounted from the host's %s", path, hostPath)
		}
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil && cms[v.ConfigMap.Name] == nil:
			t.Errorf("volume %s: no ConfigMap %s in the manifests", v.Name, v.ConfigMap.Name)
		case v.Secret != nil && secrets[v.Secret.SecretName] == nil:
			t.Errorf("volume %s: no Secret %s in the manifests", v.Name, v.Secret.SecretName)
		case v.Secret != nil && (v.Secret.DefaultMode == nil || *v.Secret.DefaultMode&0o077 != 0):
			t.Errorf("volume %s: secret files must not be readable by group or others", v.Name)
		}
	}

	// The files the pod sees are what ttisd accepts: the configuration
	// through the daemon's loader, the units through the units package,
	// with the secret the Secret provides.
	tmp := t.TempDir()
	cfgPath := filepath.Join(tmp, "ttisd.toml")
	writeFile(t, cfgPath, cms["ttisd-config"].Data["ttisd.toml"], 0o644)
	cfg, err := daemon.LoadConfig(cfgPath, true)
	if err != nil {
		t.Fatalf("ConfigMap ttisd-config: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("ConfigMap ttisd-config: %v", err)
	}
	if mounts[cfg.UnitsDir] != "units" || vols["units"].ConfigMap == nil {
		t.Errorf("units_dir %s is not the units ConfigMap's mount", cfg.UnitsDir)
	}
	secretDir := filepath.Join(tmp, "secrets")
	for name, v := range secrets["ttis-api-key"].StringData {
		writeFile(t, filepath.Join(secretDir, name), v, 0o600)
	}
	units_ := cms["ttis-units"].Data
	if len(units_) == 0 {
		t.Fatal("ConfigMap ttis-units has no unit")
	}
	for name, text := range units_ {
		text = strings.ReplaceAll(text, "/etc/ttis/secrets/", secretDir+"/")
		if _, err := units.Parse(strings.TrimSuffix(name, ".toml"), filepath.Join(tmp, name), []byte(text)); err != nil {
			t.Errorf("ConfigMap ttis-units: %v", err)
		}
	}
}

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}
