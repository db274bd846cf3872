package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/internal/testcert"
)

// python3 is the interpreter for the client's tests, or a skip.
func python3(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH: the Python client (python/) is not tested")
	}
	return py
}

// The Python client's unittest suite (python/tests) against a real
// `coordinator serve` over TLS with a token file, with the package from
// the checkout (PYTHONPATH): the client finds the token and the CA in the
// environment (DDRUN_API_TOKEN_FILE, DDRUN_CA_FILE), and the suite checks
// that a wrong token gets 401 and an untrusted certificate no answer.
func TestServePython(t *testing.T) {
	py := python3(t)
	coord, _ := binaries(t)
	// go test caches by the files a test opens: read the client's.
	for _, pat := range []string{"../python/ddrun/*.py", "../python/tests/*.py"} {
		files, _ := filepath.Glob(pat)
		for _, f := range files {
			if _, err := os.ReadFile(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := t.TempDir()
	ca, cert, key := testcert.NewCA(t, "ddrun serve test CA").WriteFiles(t, dir, "127.0.0.1")
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("# the suite's client\npython 0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, filepath.Join(dir, "data"), "--quiet", "--tls-cert", cert, "--tls-key", key, "--token-file", tokens)
	if !strings.HasPrefix(s.url, "https://") {
		t.Fatalf("serve with --tls-cert prints http=%s", s.url)
	}
	long := genModel(t, coord, "potts", "--height", "30", "--width", "30", "--labels", "4", "--rho", "0.5", ".uai")
	examples, err := filepath.Abs("../examples")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-m", "unittest", "discover", "-v", "-s", "python/tests", "-t", "python")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "PYTHONPATH=python", "PYTHONDONTWRITEBYTECODE=1", "DDRUN_URL="+s.url, "DDRUN_API_TOKEN_FILE="+tokens, "DDRUN_CA_FILE="+ca, "DDRUN_API_TOKEN=",
		"DDRUN_EXAMPLES="+examples, "DDRUN_LONG_MODEL="+long)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s\nservice:\n%s", err, out, s.stderr())
	}
	t.Logf("%s", out)
}

// `pip install ./python` works offline into a fresh virtual environment
// (the in-tree build backend needs no download), and the installed package
// imports from elsewhere.
func TestPythonPipInstall(t *testing.T) {
	py := python3(t)
	if err := exec.Command(py, "-m", "pip", "--version").Run(); err != nil {
		t.Skipf("python3 has no pip: %v", err)
	}
	venv := filepath.Join(t.TempDir(), "venv")
	// Without pip in the venv (ensurepip takes seconds): python3's own pip
	// installs into it (pip >= 22.3, --python).
	if out, err := exec.Command(py, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Skipf("python3 -m venv: %v\n%s", err, out)
	}
	vpy := filepath.Join(venv, "bin", "python")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pip := exec.CommandContext(ctx, py, "-m", "pip", "--python", vpy, "install", "--no-index", "--no-cache-dir", "--disable-pip-version-check", "../python")
	pip.Env = append(os.Environ(), "PIP_NO_INPUT=1")
	if out, err := pip.CombinedOutput(); err != nil {
		t.Fatalf("pip install ./python: %v\n%s", err, out)
	}
	check := exec.CommandContext(ctx, vpy, "-c", "import ddrun, sys; assert '/site-packages/' in ddrun.__file__, ddrun.__file__; print(ddrun.Client('http://x').url)")
	check.Dir = venv
	out, err := check.CombinedOutput()
	if err != nil || string(out) != "http://x\n" {
		t.Fatalf("import ddrun from the venv: %v\n%s", err, out)
	}
}
