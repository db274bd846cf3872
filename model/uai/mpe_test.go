package uai

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestMPERoundTrip(t *testing.T) {
	for _, x := range [][]int{{}, {0}, {1, 0, 2, 57}, make([]int, 20000)} {
		var buf bytes.Buffer
		if err := WriteMPE(&buf, x); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(buf.String(), "MPE\n") || strings.Count(buf.String(), "\n") != 2 {
			t.Errorf("format: %q", head(buf.String()))
		}
		got, err := ReadMPE(&buf, "x.MPE")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, x) {
			t.Errorf("got %v, want %v", got, x)
		}
	}
	var buf bytes.Buffer
	if err := WriteMPE(&buf, []int{1, 2, 3}); err != nil || buf.String() != "MPE\n3 1 2 3\n" {
		t.Errorf("WriteMPE: %q, %v", buf.String(), err)
	}
	if err := WriteMPE(&buf, []int{1, -2}); err == nil {
		t.Error("negative state accepted")
	}
}

func TestReadMPELayouts(t *testing.T) {
	tests := []struct {
		name, input string
		want        []int
	}{
		{"2014", "MPE\n3 0 1 0\n", []int{0, 1, 0}},
		{"MAP header", "MAP\n3 0 1 0\n", []int{0, 1, 0}},
		{"no header", "3 0 1 0", []int{0, 1, 0}},
		{"older", "MPE\n1\n3 0 1 0\n", []int{0, 1, 0}},
		{"older one var", "MPE\n1\n1 0\n", []int{0}},
		{"one var", "MPE\n1 1\n", []int{1}},
		{"several", "MPE\n3 0 1 0\n-BEGIN-\n1\n3 1 1 1\n", []int{1, 1, 1}},
		{"split lines", "MPE\n\n3\n0\n1 0\n", []int{0, 1, 0}},
		{"empty assignment", "MPE\n0\n", []int{}},
	}
	for _, tc := range tests {
		got, err := ReadMPE(strings.NewReader(tc.input), "x.MPE")
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestReadMPEErrors(t *testing.T) {
	tests := []struct {
		name, input string
		line        int
		want        []string
	}{
		{"empty", "", 1, []string{"unexpected end of file", "number of variables"}},
		{"header only", "MPE\n", 1, []string{"unexpected end of file"}},
		{"short", "MPE\n4 0 1 0\n", 2, []string{"unexpected end of file", "declares 4 variables, has 3"}},
		{"long", "MPE\n2 0 1 0\n", 2, []string{"trailing garbage", `"0"`}},
		{"word", "MPE\n2 0 x\n", 2, []string{`"x" is not an integer`}},
		{"negative", "MPE\n2 0\n-1\n", 3, []string{`"-1" is negative`}},
		{"second header", "MPE\nMPE\n1 0\n", 2, []string{`"MPE" is not an integer`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadMPE(strings.NewReader(tc.input), "x.MPE")
			checkParseError(t, err, "x.MPE", tc.line, tc.want)
		})
	}
}
