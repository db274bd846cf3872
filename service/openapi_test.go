package service

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// openAPIOperations reads docs/openapi.yaml minimally: the paths (two-space
// keys under "paths:") and their operations (four-space method keys).
func openAPIOperations(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ops []string
	in, path := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "paths:":
			in = true
		case in && line != "" && !strings.HasPrefix(line, " "):
			in = false
		case in && strings.HasPrefix(line, "  /") && strings.HasSuffix(line, ":"):
			path = strings.TrimSuffix(strings.TrimSpace(line), ":")
		case in && path != "" && strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "     "):
			key, _, _ := strings.Cut(strings.TrimSpace(line), ":")
			if slices.Contains([]string{"get", "post", "put", "patch", "delete"}, key) {
				ops = append(ops, strings.ToUpper(key)+" "+path)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ops
}

// Every route the server registers is in docs/openapi.yaml, and the
// document describes no route the server lacks.
func TestOpenAPICoversRoutes(t *testing.T) {
	doc := openAPIOperations(t)
	if len(doc) == 0 {
		t.Fatal("docs/openapi.yaml: no operations found under paths:")
	}
	routes := Routes()
	for _, r := range routes {
		if !slices.Contains(doc, r) {
			t.Errorf("route %s is not in docs/openapi.yaml", r)
		}
	}
	for _, d := range doc {
		if !slices.Contains(routes, d) {
			t.Errorf("docs/openapi.yaml describes %s, which the server does not serve", d)
		}
	}
}

// docs/openapi.yaml says what RequireToken does: every route that needs a
// token documents its 401 under the bearer scheme, and the open ones
// (/healthz, /readyz) opt out of security.
func TestOpenAPISecurity(t *testing.T) {
	b, err := os.ReadFile("../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Security   []map[string][]string
		Components struct {
			SecuritySchemes map[string]struct{ Type, Scheme string } `yaml:"securitySchemes"`
		}
		Paths map[string]map[string]yaml.Node // operations, and the path's parameters
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Security) != 1 || doc.Components.SecuritySchemes["bearer"].Scheme != "bearer" {
		t.Fatalf("docs/openapi.yaml: security %v, schemes %v; want the bearer scheme for every operation", doc.Security, doc.Components.SecuritySchemes)
	}
	for _, rt := range routes {
		var op struct {
			Security  *[]map[string][]string
			Responses map[string]any
		}
		node := doc.Paths[rt.path][strings.ToLower(rt.method)]
		if err := node.Decode(&op); err != nil {
			t.Fatalf("%s %s: %v", rt.method, rt.path, err)
		}
		_, has401 := op.Responses["401"]
		open := op.Security != nil && len(*op.Security) == 0
		if open != rt.open || has401 == rt.open {
			t.Errorf("%s %s: documented open %v with 401 %v; the server's route is open: %v", rt.method, rt.path, open, has401, rt.open)
		}
	}
}
