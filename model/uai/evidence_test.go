package uai

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ddrun/ddrun/model"
)

// evidenceModel has 4 variables with cardinalities 2, 3, 2, 5.
func evidenceModel() *model.Model { return model.New([]int{2, 3, 2, 5}) }

func TestReadEvidence(t *testing.T) {
	m := evidenceModel()
	tests := []struct {
		name, input string
		want        model.Evidence
	}{
		{"empty", "", model.Evidence{}},
		{"blank", " \n\n", model.Evidence{}},
		{"zero", "0\n", model.Evidence{}},
		{"2010 zero", "1\n0\n", model.Evidence{}},
		{"2014 one", "1 3 4", model.Evidence{3: 4}},
		{"2014", "2\n 1 2\n 3 0\n", model.Evidence{1: 2, 3: 0}},
		{"2014 one line", "3 0 1 1 0 2 1", model.Evidence{0: 1, 1: 0, 2: 1}},
		{"2010", "1\n2 1 2 3 0\n", model.Evidence{1: 2, 3: 0}},
		{"2010 one", "1\n1\n3 4\n", model.Evidence{3: 4}},
		{"2014 repeated same", "2 1 2 1 2", model.Evidence{1: 2}},
		{"comment", "c evidence\n1 0 1\n", model.Evidence{0: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := ReadEvidence(strings.NewReader(tc.input), "x.evid", m)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(ev, tc.want) {
				t.Errorf("got %v, want %v", ev, tc.want)
			}
			if err := ev.Check(m); err != nil {
				t.Error(err)
			}
			ev, err = ReadEvidence(bytes.NewReader(gzipBytes(t, []byte(tc.input))), "x.evid.gz", m)
			if err != nil || !maps.Equal(ev, tc.want) {
				t.Errorf("gzip: got %v, %v", ev, err)
			}
			ev, err = ReadEvidence(iotest.OneByteReader(strings.NewReader(tc.input)), "x.evid", m)
			if err != nil || !maps.Equal(ev, tc.want) {
				t.Errorf("one byte reads: got %v, %v", ev, err)
			}
		})
	}
}

func TestReadEvidenceErrors(t *testing.T) {
	m := evidenceModel()
	tests := []struct {
		name, input string
		line        int
		want        []string
	}{
		{"word count", "two 1 1", 1, []string{"number of observed variables", `"two" is not an integer`}},
		{"negative count", "-1", 1, []string{"number of observed variables", `"-1" is negative`}},
		{"short 2014", "3\n0 1\n1 0\n2", 4, []string{"unexpected end of file", "state of observation 2 (of 3)"}},
		{"short 2010", "1\n3\n0 1\n1 0\n", 4, []string{"unexpected end of file", "variable of observation 2 (of 3)"}},
		{"long 2014", "2\n0 1\n2 1\n3", 4, []string{"trailing garbage", "UAI 2014", `"3"`}},
		{"long 2010", "1\n1\n0 1\n2 1\n", 4, []string{"trailing garbage", "UAI 2010", `"2"`}},
		{"variable range", "2\n0 1\n7 0\n", 3, []string{"observation 1: variable 7 out of range [0,4)"}},
		{"state range", "1\n1 3\n", 2, []string{"observation 0: variable 1 state 3 out of range [0,3)"}},
		{"negative state", "1\n1 -1\n", 2, []string{"state of observation 0", `"-1" is negative`}},
		{"float state", "1\n1 1.0\n", 2, []string{"state of observation 0", `"1.0" is not an integer`}},
		{"conflict", "2\n3 1\n3 2\n", 3, []string{"variable 3 observed with state 1 and with state 2"}},
		{"garbage", "1 0 x", 1, []string{"state of observation 0", `"x" is not an integer`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadEvidence(strings.NewReader(tc.input), "x.evid", m)
			checkParseError(t, err, "x.evid", tc.line, tc.want)
		})
	}
}

func TestReadEvidenceFile(t *testing.T) {
	m := evidenceModel()
	path := filepath.Join(t.TempDir(), "m.uai.evid")
	if err := os.WriteFile(path, []byte("1\n2 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ev, err := ReadEvidenceFile(path, m)
	if err != nil || !maps.Equal(ev, model.Evidence{2: 1}) {
		t.Fatalf("got %v, %v", ev, err)
	}
	if _, err := ReadEvidenceFile(path+".missing", m); err == nil {
		t.Error("missing file: no error")
	}
}
