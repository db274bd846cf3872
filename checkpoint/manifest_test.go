package checkpoint

import (
	"strings"
	"testing"
)

func TestManifestValidateFind(t *testing.T) {
	obj := objectName([]byte("x"))
	cases := []struct {
		name  string
		blobs []Blob
		want  string // error text; "" for valid
	}{
		{"valid", []Blob{{Role: "master", Object: obj, Size: 1}, {Role: "part-0", Object: obj, Size: 1}}, ""},
		{"empty", nil, ""},
		{"no role", []Blob{{Object: obj}}, "no role"},
		{"role twice", []Blob{{Role: "a", Object: obj}, {Role: "a", Object: obj}}, `role "a" twice`},
		{"upper-case object", []Blob{{Role: "a", Object: strings.ToUpper(obj)}}, "not a sha256"},
		{"short object", []Blob{{Role: "a", Object: obj[1:]}}, "not a sha256"},
		{"negative size", []Blob{{Role: "a", Object: obj, Size: -1}}, "negative size"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := Manifest{Job: "j", Iteration: 2, Blobs: tc.blobs}
			err := m.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if len(tc.blobs) > 0 {
				if b, ok := m.Find(tc.blobs[0].Role); !ok || b != tc.blobs[0] {
					t.Errorf("find %q: %+v, %v", tc.blobs[0].Role, b, ok)
				}
			}
			if _, ok := m.Find("absent"); ok {
				t.Error("found a missing role")
			}
		})
	}
}
