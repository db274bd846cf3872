package e2e

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"gopkg.in/yaml.v3"
)

// The chart tests render deploy/helm/ddrun with helm template and run what
// it renders on loopback: the real nats-server with the rendered command,
// arguments, configuration files and environment, then the workers of the
// rendered Deployment and the coordinators of the rendered StatefulSet
// (through the rendered shell wrapper), and check that the job completes
// with the result of coordinator solve. In-cluster things are mapped, and
// only those: mounted paths (ConfigMap volumes, /models, /data) to temp
// dirs, Service and pod DNS names to 127.0.0.1 and a free port, container
// ports to free ports, /usr/local/bin of the image to the built binaries,
// $(VAR) in arguments as Kubernetes expands it, and env from the rendered
// Secrets and the pod name. What they do not prove (scheduling, volumes,
// DNS, probes run by a kubelet) deploy/helm/README.md says.

const chartDir = "../deploy/helm/ddrun"

// helmBinary finds helm on PATH or in $(go env GOPATH)/bin, or skips.
func helmBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	var dirs []string
	if out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output(); err == nil {
		f := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(f) == 2 {
			if f[0] != "" {
				dirs = append(dirs, f[0])
			}
			for _, p := range filepath.SplitList(f[1]) {
				dirs = append(dirs, filepath.Join(p, "bin"))
			}
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "helm")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	t.Skip("chart test skipped: helm is not on PATH nor in $(go env GOPATH)/bin (GOFLAGS= go install helm.sh/helm/v3/cmd/helm@v3.22.0; .ci/run does it)")
	return ""
}

var (
	natsOnce sync.Once
	natsBin  string
	natsErr  error
)

// natsServerBinary builds the real nats-server, the version in go.mod,
// into the binaries' folder.
func natsServerBinary(t *testing.T) string {
	t.Helper()
	binaries(t) // makes binDir
	natsOnce.Do(func() {
		natsBin = filepath.Join(binDir, "nats-server")
		if out, err := exec.Command("go", "build", "-o", natsBin, "github.com/nats-io/nats-server/v2").CombinedOutput(); err != nil {
			natsErr = fmt.Errorf("go build nats-server: %v\n%s", err, out)
		}
	})
	if natsErr != nil {
		t.Fatal(natsErr)
	}
	return natsBin
}

// The parts of the rendered objects that the test runs.
type k8sObject struct {
	Kind     string
	Metadata struct {
		Name   string
		Labels map[string]string
	}
	Data map[string]string // ConfigMap, Secret (base64)
	Spec struct {
		Replicas            *int
		ServiceName         string `yaml:"serviceName"`
		PodManagementPolicy string `yaml:"podManagementPolicy"`
		ClusterIP           string `yaml:"clusterIP"`
		PublishNotReady     bool   `yaml:"publishNotReadyAddresses"`
		Selector            map[string]any
		Ports               []struct {
			Name       string
			Port       int
			TargetPort any `yaml:"targetPort"`
		}
		Template struct {
			Metadata struct{ Labels map[string]string }
			Spec     podSpec
		}
		VolumeClaimTemplates []struct {
			Metadata struct{ Name string }
		} `yaml:"volumeClaimTemplates"`
	}
}

type podSpec struct {
	Containers []container
	Volumes    []volume
}

type volume struct {
	Name      string
	ConfigMap *struct{ Name string } `yaml:"configMap"`
	PVC       *struct {
		ClaimName string `yaml:"claimName"`
	} `yaml:"persistentVolumeClaim"`
	EmptyDir any `yaml:"emptyDir"`
	Secret   *struct {
		SecretName string `yaml:"secretName"`
	} `yaml:"secret"`
}

type container struct {
	Name    string
	Command []string
	Args    []string
	Env     []struct {
		Name      string
		Value     string
		ValueFrom *struct {
			SecretKeyRef *struct{ Name, Key string } `yaml:"secretKeyRef"`
			FieldRef     *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	}
	Ports []struct {
		Name          string
		ContainerPort int `yaml:"containerPort"`
	}
	StartupProbe   *probe `yaml:"startupProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	VolumeMounts   []struct {
		Name      string
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Path string
		Port any
	} `yaml:"httpGet"`
}

// rendered is the output of one helm template.
type rendered struct {
	objs []k8sObject
}

// renderChart runs helm template with the --set values and parses every
// document.
func renderChart(t *testing.T, helm string, sets ...string) rendered {
	t.Helper()
	args := []string{"template", "t", chartDir, "--namespace", "ddrun"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(helm, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var r rendered
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var o k8sObject
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("helm template output: %v", err)
		}
		if o.Kind != "" {
			r.objs = append(r.objs, o)
		}
	}
	return r
}

// one returns the only object of kind whose name ends in suffix.
func (r rendered) one(t *testing.T, kind, suffix string) k8sObject {
	t.Helper()
	var found []k8sObject
	for _, o := range r.objs {
		if o.Kind == kind && strings.HasSuffix(o.Metadata.Name, suffix) {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s named *%s, rendered %d", kind, suffix, len(found))
	}
	return found[0]
}

func (r rendered) has(kind, suffix string) bool {
	for _, o := range r.objs {
		if o.Kind == kind && strings.HasSuffix(o.Metadata.Name, suffix) {
			return true
		}
	}
	return false
}

// freePort returns a free loopback port.
func freePort(t *testing.T) int {
	t.Helper()
	return freePorts(t, 1)[0]
}

// pod is one rendered pod mapped onto this machine.
type pod struct {
	name  string
	c     container
	ports map[int]int       // containerPort -> loopback port
	mount map[string]string // mountPath -> local dir
}

// newPod maps the pod template's first container: every volume to a
// temp dir (a ConfigMap's or a Secret's files written into it, the models
// PVC to models), every container port to a free port.
func newPod(t *testing.T, r rendered, name string, spec podSpec, models string) *pod {
	t.Helper()
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", name, len(spec.Containers))
	}
	p := &pod{name: name, c: spec.Containers[0], ports: map[int]int{}, mount: map[string]string{}}
	for _, cp := range p.c.Ports {
		p.ports[cp.ContainerPort] = freePort(t)
	}
	for _, vm := range p.c.VolumeMounts {
		i := slices.IndexFunc(spec.Volumes, func(v volume) bool { return v.Name == vm.Name })
		dir := t.TempDir()
		switch {
		case i >= 0 && spec.Volumes[i].ConfigMap != nil:
			cm := r.one(t, "ConfigMap", spec.Volumes[i].ConfigMap.Name)
			for f, content := range cm.Data {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		case i >= 0 && spec.Volumes[i].Secret != nil: // its keys as files (base64 decoded)
			sec := r.one(t, "Secret", spec.Volumes[i].Secret.SecretName)
			for f, v := range sec.Data {
				b, err := base64.StdEncoding.DecodeString(v)
				if err != nil {
					t.Fatalf("Secret %s key %s: %v", sec.Metadata.Name, f, err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		case i >= 0 && spec.Volumes[i].PVC != nil && vm.MountPath == "/models":
			dir = models
		case i >= 0 && spec.Volumes[i].PVC != nil:
			t.Fatalf("%s: volume %s: unexpected claim %s", name, vm.Name, spec.Volumes[i].PVC.ClaimName)
		case i < 0: // a volumeClaimTemplate's volume: a fresh dir
		}
		p.mount[vm.MountPath] = dir
	}
	return p
}

// path maps an in-cluster path under a mount to the local dir; /usr/local/bin
// (the image's binaries) to the built ones.
func (p *pod) path(s string) string {
	mounts := append(slices.Collect(maps.Keys(p.mount)), "/usr/local/bin")
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
	for _, m := range mounts {
		local := p.mount[m]
		if m == "/usr/local/bin" {
			local = binDir
		}
		if s == m || strings.HasPrefix(s, m+"/") {
			return local + s[len(m):]
		}
	}
	return s
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// env resolves the container's environment: values, the rendered
// Secrets' keys, the pod's name.
func (p *pod) env(t *testing.T, r rendered) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range p.c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = varRef.ReplaceAllStringFunc(e.Value, func(s string) string { return env[s[2:len(s)-1]] })
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = p.name
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			sec := r.one(t, "Secret", ref.Name)
			if sec.Metadata.Name != ref.Name {
				t.Fatalf("%s: env %s: Secret %s is not rendered", p.name, e.Name, ref.Name)
			}
			v, ok := sec.Data[ref.Key]
			if !ok {
				t.Fatalf("%s: env %s: Secret %s has no key %s", p.name, e.Name, ref.Name, ref.Key)
			}
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				t.Fatalf("Secret %s key %s: %v", ref.Name, ref.Key, err)
			}
			env[e.Name] = string(b)
		default:
			t.Fatalf("%s: env %s: unsupported source", p.name, e.Name)
		}
	}
	return env
}

// start runs the container's command and args: $(VAR) expanded, paths and
// hosts mapped (hosts: "name:port" -> "127.0.0.1:port"), listen addresses
// ":PORT" of a container port to its loopback port.
func (p *pod) start(t *testing.T, r rendered, hosts map[string]string) *proc {
	t.Helper()
	env := p.env(t, r)
	var pairs []string
	for h, local := range hosts {
		pairs = append(pairs, h, local)
	}
	hostMap := strings.NewReplacer(pairs...)
	argv := append(slices.Clone(p.c.Command), p.c.Args...)
	if len(p.c.Command) == 0 {
		t.Fatalf("%s: no command (the image's entrypoint is not what the chart runs)", p.name)
	}
	for i, a := range argv {
		a = varRef.ReplaceAllStringFunc(a, func(s string) string {
			if v, ok := env[s[2:len(s)-1]]; ok {
				return v
			}
			return s
		})
		if cp, err := strconv.Atoi(strings.TrimPrefix(a, ":")); err == nil && strings.HasPrefix(a, ":") {
			local, ok := p.ports[cp]
			if !ok {
				t.Fatalf("%s: listens on %s, which is not a container port", p.name, a)
			}
			a = fmt.Sprintf("127.0.0.1:%d", local)
		}
		a = hostMap.Replace(p.path(a))
		if strings.Contains(a, ".svc") || strings.Contains(a, "$(") {
			t.Fatalf("%s: argument %q left unmapped", p.name, a)
		}
		argv[i] = a
	}
	if argv[0] == "nats-server" {
		argv[0] = natsBin
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DDRUN_") && !strings.HasPrefix(kv, "PATH=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// A group of its own, killed as one when the test ends: the
	// coordinator's wrapper shell has children.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	return startCmd(t, p.name, cmd)
}

// probeURL is the loopback URL of an httpGet probe.
func (p *pod) probeURL(t *testing.T, pr *probe) string {
	t.Helper()
	if pr == nil || pr.HTTPGet == nil {
		t.Fatalf("%s: no httpGet probe", p.name)
	}
	port := -1
	switch v := pr.HTTPGet.Port.(type) {
	case int:
		port = v
	case string:
		for _, cp := range p.c.Ports {
			if cp.Name == v {
				port = cp.ContainerPort
			}
		}
	}
	local, ok := p.ports[port]
	if !ok {
		t.Fatalf("%s: probe port %v is not a container port", p.name, pr.HTTPGet.Port)
	}
	return fmt.Sprintf("http://127.0.0.1:%d%s", local, pr.HTTPGet.Path)
}

// waitHTTP waits until url answers 200.
func waitHTTP(t *testing.T, p *proc, url string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited before %s answered\n%s", p.name, url, p.stderr())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s did not answer 200 within %v (last: %v)\n%s", p.name, url, timeout, err, p.stderr())
		}
	}
}

// expectStatus checks that url answers code.
func expectStatus(t *testing.T, url string, code int) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode != code {
		t.Fatalf("%s: %d, want %d", url, resp.StatusCode, code)
	}
}

// The chart's NATS configuration must listen where its container and
// Service say: its port lines are rewritten to loopback ports, and a
// missing one is an error.
var confPort = regexp.MustCompile(`(?m)^(\s*)(port|http_port):\s*(\d+)\s*$`)

func (p *pod) mapNATSConf(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	conf := confPort.ReplaceAllStringFunc(string(b), func(line string) string {
		m := confPort.FindStringSubmatch(line)
		cp, _ := strconv.Atoi(m[3])
		local, ok := p.ports[cp]
		if !ok {
			t.Errorf("%s: %s %d is not a container port", file, m[2], cp)
		}
		seen[m[2]] = true
		if m[2] == "port" {
			return fmt.Sprintf("%shost: 127.0.0.1\n%sport: %d", m[1], m[1], local)
		}
		return fmt.Sprintf("%shttp: \"127.0.0.1:%d\"", m[1], local)
	})
	if !seen["port"] || !seen["http_port"] {
		t.Fatalf("%s sets no port or http_port:\n%s", file, b)
	}
	// Paths in the file: the mounts.
	for m, local := range p.mount {
		conf = strings.ReplaceAll(conf, m+"/", local+"/")
	}
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
}

// servicePort checks that Service svc routes port to a container port of
// p, and returns the loopback port it maps to.
func servicePort(t *testing.T, svc k8sObject, p *pod, port int) int {
	t.Helper()
	for _, sp := range svc.Spec.Ports {
		if sp.Port != port {
			continue
		}
		for _, cp := range p.c.Ports {
			if tp, ok := sp.TargetPort.(string); (ok && tp == cp.Name) || sp.TargetPort == cp.ContainerPort {
				return p.ports[cp.ContainerPort]
			}
		}
		t.Fatalf("Service %s port %d: target %v is no container port of %s", svc.Metadata.Name, port, sp.TargetPort, p.name)
	}
	t.Fatalf("Service %s has no port %d", svc.Metadata.Name, port)
	return 0
}

// selects reports whether the Service's selector picks the pod template's
// labels.
func selects(svc k8sObject, labels map[string]string) bool {
	if len(svc.Spec.Selector) == 0 {
		return false
	}
	for k, v := range svc.Spec.Selector {
		if labels[k] != fmt.Sprint(v) {
			return false
		}
	}
	return true
}

// chartJob renders the chart with sets and runs it to the end of its job.
func chartJob(t *testing.T, sets ...string) {
	chartJobForged(t, nil, sets...)
}

// chartJobForged is chartJob, with a stranger on the chart's NATS server
// (the default values ask no credentials) when attack is set
// (chart_forge_test.go); unless the attack judges the job's end itself,
// the job must end as the undisturbed one does.
func chartJobForged(t *testing.T, attack *chartAttack, sets ...string) {
	coord, _ := binaries(t)
	helm := helmBinary(t)
	natsServerBinary(t)
	models := t.TempDir()
	model := filepath.Join(models, "potts.uai")
	runOK(t, coord, "gen", "potts", "--height", "12", "--width", "12", "--labels", "3", "-o", model)
	flags := []string{"--json", "--quiet", "--tol", "0", "--max-iter", "150"}
	want := runJSON(t, time.Minute, coord, append(append([]string{"solve", "--algo", "admm"}, flags...), model)...)
	base := []string{
		"workers.replicas=2", "workers.threads=1",
		"coordinator.job.model=/models/potts.uai",
		"coordinator.job.args={" + strings.Join(flags, ",") + "}",
		"coordinator.job.waitWorkers=1m",
	}
	r := renderChart(t, helm, append(base, sets...)...)
	hosts := map[string]string{}

	// NATS, from its StatefulSet and ConfigMap.
	natsSts := r.one(t, "StatefulSet", "-nats")
	natsPod := newPod(t, r, natsSts.Metadata.Name+"-0", natsSts.Spec.Template.Spec, models)
	natsSvc := r.one(t, "Service", "-nats")
	if !selects(natsSvc, natsSts.Spec.Template.Metadata.Labels) {
		t.Fatalf("Service %s does not select the NATS pods", natsSvc.Metadata.Name)
	}
	hosts[fmt.Sprintf("%s:4222", natsSvc.Metadata.Name)] = fmt.Sprintf("127.0.0.1:%d", servicePort(t, natsSvc, natsPod, 4222))
	confDir, ok := natsPod.mount["/etc/nats"]
	if !ok {
		t.Fatal("the NATS pod mounts no /etc/nats")
	}
	natsPod.mapNATSConf(t, filepath.Join(confDir, "nats.conf"))

	// The coordinators' pod names and Raft addresses.
	sts := r.one(t, "StatefulSet", "-coordinator")
	headless := r.one(t, "Service", "-coordinator")
	if headless.Spec.ClusterIP != "None" || !headless.Spec.PublishNotReady || sts.Spec.ServiceName != headless.Metadata.Name || !selects(headless, sts.Spec.Template.Metadata.Labels) {
		t.Fatalf("the coordinators' Service is not a headless Service of their pods that publishes unready ones: %+v", headless.Spec)
	}
	if sts.Spec.PodManagementPolicy != "Parallel" {
		t.Fatalf("coordinator pods start %q, want Parallel (a Raft group needs its majority up to be ready)", sts.Spec.PodManagementPolicy)
	}
	var coords []*pod
	for i := range *sts.Spec.Replicas {
		name := fmt.Sprintf("%s-%d", sts.Metadata.Name, i)
		cp := newPod(t, r, name, sts.Spec.Template.Spec, models)
		if args := strings.Join(cp.c.Args, " "); !strings.Contains(args, "--raft-tls-cert /etc/ddrun/raft-tls/tls.crt") || !strings.Contains(args, "--raft-tls-ca") {
			t.Errorf("%s: Raft traffic not over TLS by default: %s", name, args) // the group runs over the generated certificates
		}
		raft := servicePort(t, headless, cp, 7000)
		hosts[fmt.Sprintf("%s.%s.ddrun.svc.cluster.local:7000", name, headless.Metadata.Name)] = fmt.Sprintf("127.0.0.1:%d", raft)
		coords = append(coords, cp)
	}

	// Workers and coordinators first, as Kubernetes may start them: they
	// keep trying to reach NATS (--connect-timeout), alive (/healthz 200)
	// and not ready (/readyz 503) meanwhile.
	dep := r.one(t, "Deployment", "-worker")
	var workers []*pod
	var wprocs []*proc
	for i := range *dep.Spec.Replicas {
		wp := newPod(t, r, fmt.Sprintf("%s-%d", dep.Metadata.Name, i), dep.Spec.Template.Spec, models)
		workers = append(workers, wp)
		wprocs = append(wprocs, wp.start(t, r, hosts))
	}
	var procs []*proc
	for _, cp := range coords {
		procs = append(procs, cp.start(t, r, hosts))
	}
	for i, wp := range workers {
		waitHTTP(t, wprocs[i], wp.probeURL(t, wp.c.LivenessProbe), 20*time.Second)
		expectStatus(t, wp.probeURL(t, wp.c.ReadinessProbe), http.StatusServiceUnavailable)
	}
	for i, cp := range coords {
		if cp.c.LivenessProbe != nil {
			t.Errorf("%s has a liveness probe: it would restart the pod that idles after the job", cp.name)
		}
		u := cp.probeURL(t, cp.c.ReadinessProbe)
		waitHTTP(t, procs[i], strings.Replace(u, "/readyz", "/healthz", 1), 20*time.Second)
		expectStatus(t, u, http.StatusServiceUnavailable)
	}

	// Then NATS; the workers become ready.
	nats := natsPod.start(t, r, hosts)
	for _, pr := range []*probe{natsPod.c.StartupProbe, natsPod.c.ReadinessProbe, natsPod.c.LivenessProbe} {
		waitHTTP(t, nats, natsPod.probeURL(t, pr), 20*time.Second)
	}

	if attack != nil {
		var names []string
		for _, wp := range workers {
			names = append(names, wp.name)
		}
		defer attack.start(t, "nats://"+hosts[fmt.Sprintf("%s:4222", natsSvc.Metadata.Name)], names, want)()
	}
	for i, wp := range workers {
		waitHTTP(t, wprocs[i], wp.probeURL(t, wp.c.ReadinessProbe), 30*time.Second)
	}
	if attack != nil && attack.judge != nil {
		attack.judge(t, procs, want)
		return
	}
	// Every member ends the job with status 0, and its wrapper then idles.
	for _, p := range procs {
		waitLine(t, p, "the job is over", 90*time.Second)
	}
	var got []result
	for _, p := range procs {
		if p.stdout.Len() > 0 {
			got = append(got, p.result(t))
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d members printed a result, want 1", len(got))
	}
	if got[0].Workers != 2 {
		t.Errorf("chart job ran on %d workers, want the Deployment's 2", got[0].Workers)
	}
	sameResult(t, got[0], want)
	// SIGTERM, as Kubernetes stops a pod: the idle wrapper exits 0.
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		if err := p.wait(t, 10*time.Second); err != nil {
			t.Errorf("%s: SIGTERM while idle: %v, want exit 0", p.name, err)
		}
	}
}

// replayForger connects to the NATS server at url as a stranger: every
// distinct message on ddrun's subjects it sees it publishes again once, 20
// ms later, and after every fourth one it publishes random bytes on the
// same subject (at most 3,000 replays). stop ends it and says how many of
// each it sent.
func replayForger(t *testing.T, url string) (stop func() (replayed, garbage int)) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("the forger: %v", err)
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	done := false
	var replayed, garbage int
	rng := rand.New(rand.NewPCG(3, 9))
	sub, err := nc.Subscribe("ddrun.>", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		if done || seen[string(m.Data)] || replayed >= 3000 {
			return
		}
		seen[string(m.Data)] = true
		replayed++
		data := slices.Clone(m.Data)
		var junk []byte
		if replayed%4 == 0 {
			junk = make([]byte, 1+rng.IntN(200))
			for i := range junk {
				junk[i] = byte(rng.Uint32())
			}
			garbage++
			seen[string(junk)] = true // not to be replayed in turn
		}
		wg.Go(func() {
			time.Sleep(20 * time.Millisecond)
			_ = nc.Publish(m.Subject, data)
			if junk != nil {
				_ = nc.Publish(m.Subject, junk)
			}
		})
	})
	if err != nil {
		t.Fatalf("the forger: %v", err)
	}
	return func() (int, int) {
		_ = sub.Unsubscribe()
		mu.Lock()
		done = true
		mu.Unlock()
		wg.Wait()
		nc.Close()
		mu.Lock()
		defer mu.Unlock()
		return replayed, garbage
	}
}

// Three coordinators from their rendered Raft arguments (checkpoints in
// the JetStream object store), and NATS credentials and a job key from
// the Secret the chart generates: the chart's NATS server runs
// ddrun-auth.conf with the passwords from it.
func TestChartRaftGroupWithAuthRunsAJob(t *testing.T) {
	chartJob(t, "coordinator.replicas=3", "auth.generate=true", "nats.jetstream.persistence.enabled=true")
}

// Sealed by default: the default values render a job key Secret
// (<fullname>-job-key, 32 random bytes in hex) that the coordinators and
// the workers get as DDRUN_JOB_KEY; auth.insecure=true renders none and
// runs both with --insecure.
func TestChartSealsByDefault(t *testing.T) {
	helm := helmBinary(t)
	for _, insecure := range []bool{false, true} {
		r := renderChart(t, helm, "coordinator.job.model=/models/m.uai", fmt.Sprintf("auth.insecure=%v", insecure))
		if r.has("Secret", "-job-key") == insecure {
			t.Fatalf("insecure=%v: a job key Secret: %v", insecure, !insecure)
		}
		if !insecure {
			sec := r.one(t, "Secret", "-job-key")
			key, err := base64.StdEncoding.DecodeString(sec.Data["job-key"])
			if err != nil || len(key) != 64 || strings.Trim(string(key), "0123456789abcdef") != "" {
				t.Errorf("job-key %q: %v", key, err)
			}
		}
		for _, suffix := range []string{"-coordinator", "-worker"} {
			var pod podSpec
			for _, o := range r.objs {
				if (o.Kind == "StatefulSet" || o.Kind == "Deployment") && strings.HasSuffix(o.Metadata.Name, suffix) {
					pod = o.Spec.Template.Spec
				}
			}
			if len(pod.Containers) == 0 {
				t.Fatalf("no %s pods rendered", suffix)
			}
			c := pod.Containers[0]
			keyed := false
			for _, e := range c.Env {
				keyed = keyed || e.Name == "DDRUN_JOB_KEY" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil &&
					strings.HasSuffix(e.ValueFrom.SecretKeyRef.Name, "-job-key")
			}
			if keyed == insecure || slices.Contains(c.Args, "--insecure") != insecure {
				t.Errorf("insecure=%v: %s pods get the key %v, args %q", insecure, suffix, keyed, c.Args)
			}
		}
	}
}
