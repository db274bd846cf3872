package service

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"
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
