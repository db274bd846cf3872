package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The chart's job service (jobService.enabled) as rendered: its token and
// certificate come from the Secrets the chart generates, as files, never
// as arguments; run on loopback with the chart's NATS server, it answers
// HTTPS for the Service's DNS name with a certificate of the generated
// CA, refuses requests without the token (401), and runs a job with it to
// coordinator solve's result.
func TestChartJobService(t *testing.T) {
	coord, _ := binaries(t)
	helm := helmBinary(t)
	natsServerBinary(t)
	models := t.TempDir()
	r := renderChart(t, helm, "jobService.enabled=true", "jobService.persistence.enabled=false")
	hosts := map[string]string{}

	natsSts := r.one(t, "StatefulSet", "-nats")
	natsPod := newPod(t, r, natsSts.Metadata.Name+"-0", natsSts.Spec.Template.Spec, models)
	natsSvc := r.one(t, "Service", "-nats")
	hosts[natsSvc.Metadata.Name+":4222"] = fmt.Sprintf("127.0.0.1:%d", servicePort(t, natsSvc, natsPod, 4222))
	natsPod.mapNATSConf(t, filepath.Join(natsPod.mount["/etc/nats"], "nats.conf"))

	dep := r.one(t, "Deployment", "-api")
	api := newPod(t, r, dep.Metadata.Name+"-0", dep.Spec.Template.Spec, models)
	svc := r.one(t, "Service", "-api")
	if !selects(svc, dep.Spec.Template.Metadata.Labels) {
		t.Fatalf("Service %s does not select the job service's pod", svc.Metadata.Name)
	}
	// The Secrets' files where the pod mounts them.
	secrets := map[string]map[string][]byte{}
	for _, vm := range api.c.VolumeMounts {
		i := slices.IndexFunc(dep.Spec.Template.Spec.Volumes, func(v volume) bool { return v.Name == vm.Name })
		if i < 0 || dep.Spec.Template.Spec.Volumes[i].Secret == nil {
			continue
		}
		name := dep.Spec.Template.Spec.Volumes[i].Secret.SecretName
		sec := r.one(t, "Secret", name)
		secrets[vm.MountPath] = map[string][]byte{}
		for k, v := range sec.Data {
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				t.Fatalf("Secret %s key %s: %v", name, k, err)
			}
			secrets[vm.MountPath][k] = b
			if err := os.WriteFile(filepath.Join(api.mount[vm.MountPath], k), b, 0o400); err != nil {
				t.Fatal(err)
			}
		}
	}
	tokens, ca := secrets["/etc/ddrun/api"]["tokens"], secrets["/etc/ddrun/tls"]["ca.crt"]
	token := strings.TrimSpace(string(tokens))
	if len(token) < 32 || len(ca) == 0 || len(secrets["/etc/ddrun/tls"]["tls.key"]) == 0 {
		t.Fatalf("generated Secrets: token of %d bytes, CA of %d bytes, mounts %v", len(token), len(ca), slices.Collect(maps.Keys(secrets)))
	}
	args := strings.Join(api.c.Args, " ")
	for _, want := range []string{"--token-file /etc/ddrun/api/tokens", "--tls-cert /etc/ddrun/tls/tls.crt", "--tls-key /etc/ddrun/tls/tls.key"} {
		if !strings.Contains(args, want) {
			t.Errorf("serve's arguments %q lack %q", args, want)
		}
	}
	for _, e := range api.c.Env {
		if strings.Contains(e.Value, token) {
			t.Errorf("env %s holds the token", e.Name)
		}
	}
	if strings.Contains(args, token) {
		t.Error("the token is on serve's command line")
	}

	nats := natsPod.start(t, r, hosts)
	waitHTTP(t, nats, natsPod.probeURL(t, natsPod.c.ReadinessProbe), 20*time.Second)
	p := api.start(t, r, hosts)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("ca.crt holds no certificate")
	}
	dns := fmt.Sprintf("%s.ddrun.svc", svc.Metadata.Name)
	s := &serveProc{url: fmt.Sprintf("https://127.0.0.1:%d", servicePort(t, svc, api, 8443)), token: token,
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: dns}}}}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := s.client.Get(s.url + dep.Spec.Template.Spec.Containers[0].ReadinessProbe.HTTPGet.Path)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job service is not ready over HTTPS as %s: %v\n%s", dns, err, p.stderr())
		}
	}
	model := filepath.Join(models, "potts.uai")
	runOK(t, coord, "gen", "potts", "--height", "10", "--width", "10", "--labels", "3", "-o", model)
	data, _ := os.ReadFile(model)
	if code, b := s.callAs(t, "", "POST", s.url+"/v1/jobs", "", data); code != http.StatusUnauthorized {
		t.Errorf("submit without the token: %d %s, want 401", code, b)
	}
	want := runJSON(t, time.Minute, coord, "solve", "--json", "--quiet", "--max-iter", "100", "--threads", "1", model)
	s.checkJob(t, s.submit(t, model, "max_iter=100&threads=1"), want)
}
