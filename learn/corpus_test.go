package learn

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// brownDir is the Brown corpus of the learning issue: $DDRUN_BROWN, else
// ../shared/data/brown from the repository root; "" when absent.
func brownDir(t *testing.T) string {
	dir := os.Getenv("DDRUN_BROWN")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "data", "brown")
	}
	if _, err := os.Stat(filepath.Join(dir, "ca01")); err != nil {
		return ""
	}
	return dir
}

// tinyBrown writes a hand-made corpus in the Brown layout (not Brown's
// text: genre a's file ca01, genre b's cb01, and a README the reader must
// skip) into a test directory and returns it.
func tinyBrown(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{"ca01": "\n\n\tThe/at cat/nn sat/vbd on/in the/at mat/nn ./.\n\n\n\tA/at dog/nn-tl barked/vbd loudly/rb ./.\n\n\tShe/pps didn't/dod+* run/vb ./.\n", "cb01": "\tThe/at bird/nn sang/vbd sweetly/rb ./.\n\tDogs/nns ran/vbd home/nr ./.\n", "README": "not a brown file\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// readTagged reads the corpus file at path with read, under its base name.
func readTagged(t *testing.T, path string, read func(io.Reader, string) ([]Tagged, error)) []Tagged {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sents, err := read(f, filepath.Base(path))
	if err != nil {
		t.Fatal(err)
	}
	return sents
}

func TestReadBrownRoundTrip(t *testing.T) {
	sents := readTagged(t, filepath.Join(tinyBrown(t), "ca01"), ReadBrown)
	if len(sents) != 3 || !slices.Equal(sents[2].Words, []string{"She", "didn't", "run", "."}) || !slices.Equal(sents[2].Tags, []string{"pps", "dod+*", "vb", "."}) {
		t.Fatalf("read %q", sents)
	}
	again := writeRead(t, sents, WriteBrown, func(r io.Reader) ([]Tagged, error) { return ReadBrown(r, "written") })
	if !reflect.DeepEqual(again, sents) {
		t.Errorf("round trip: %q, want %q", again, sents)
	}
}

func TestReadCoNLL(t *testing.T) {
	sents := readTagged(t, "testdata/tagged.conll", ReadCoNLL)
	want := []Tagged{
		{Words: []string{"The", "cat", "sat"}, Tags: []string{"DT", "NN", "VBD"}},
		{Words: []string{"Dogs", "do", "n't"}, Tags: []string{"NOUN", "AUX", "PART"}},
	}
	if !reflect.DeepEqual(sents, want) {
		t.Errorf("read %q, want %q", sents, want)
	}
}

func TestCorpusMalformedLines(t *testing.T) {
	for _, c := range []struct {
		conll bool
		in    string
		want  string
	}{
		{false, "a/b c/d\n\nthe/at dog\n", `f:3: token 2 "dog": want word/tag`},
		{false, "/at\n", `f:1: token 1 "/at": want word/tag`},
		{false, "x/y dog/\n", `f:1: token 2 "dog/": want word/tag`},
		{true, "The DT\ncat\n", `f:2: "cat": want a word and its tag`},
	} {
		var err error
		if c.conll {
			_, err = ReadCoNLL(strings.NewReader(c.in), "f")
		} else {
			_, err = ReadBrown(strings.NewReader(c.in), "f")
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: error %v, want %s", c.in, err, c.want)
		}
	}
	for _, spec := range []string{"brown:", "brown:d?genres=j-a", "brown:d?sentences=0", "brown:d?tags=half", "conll:f?genres=a", "brown:d?colour=red"} {
		if _, ok, err := ParseCorpusSpec(spec); !ok || err == nil {
			t.Errorf("%s: ok %v, error %v", spec, ok, err)
		}
	}
	if _, _, err := readCorpus(CorpusSpec{Format: "brown", Path: "testdata", Tagging: TagsFull}); err == nil || !strings.Contains(err.Error(), "no Brown files") {
		t.Errorf("a directory without Brown files: %v", err)
	}
}

func TestTagging(t *testing.T) {
	for in, want := range map[string]string{"nn-tl": "nn", "nn+bez": "nn", "fw-at-hl": "fw", "--": "--", "'": "'", "np$": "np$", "-": "-"} {
		if got := TagsCut.tag(in); got != want {
			t.Errorf("cut %q: %q, want %q", in, got, want)
		}
		if got := TagsFull.tag(in); got != in {
			t.Errorf("full %q: %q", in, got)
		}
	}
}

// TestCorpusTrainPredict trains on genre a of the test corpus, saves the
// weights with their dictionary, reads them back and maps genre b (unseen
// words) through it: the same labels, known features only, and the
// accuracy of the reloaded weights equal to the trained ones'.
func TestCorpusTrainPredict(t *testing.T) {
	corpus := tinyBrown(t)
	var o Options
	a, d, err := PrepareTraining("bcfw", "brown:"+corpus+"?genres=a&tags=cut", &o)
	if err != nil {
		t.Fatal(err)
	}
	// The labels are the tags of both genres, cut: ., at, dod, in, nn, nns, nr, pps, rb, vb, vbd.
	if d.Seq.Sentences() != 3 || d.Seq.Labels != 11 {
		t.Fatalf("%d sentences, %d labels", d.Seq.Sentences(), d.Seq.Labels)
	}
	w, _, err := a.Train(context.Background(), d, o)
	if err != nil {
		t.Fatal(err)
	}
	if w.Dict == nil || !slices.Contains(w.Dict.Feats, "w=cat") || !slices.Contains(w.Dict.Feats, "w-1=<s>") || !slices.Contains(w.Dict.Feats, "h=Xx") || !slices.Contains(w.Dict.Feats, "s3=dly") {
		t.Fatalf("dictionary %+v", w.Dict)
	}
	path := filepath.Join(t.TempDir(), "w.weights")
	if err := SaveWeights(path, w); err != nil {
		t.Fatal(err)
	}
	w2, test, err := PreparePrediction(path, "brown:"+corpus+"?genres=b", 1)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(w2.Dict.Tags, w.Dict.Tags) || !reflect.DeepEqual(w2.Dict.Feats, w.Dict.Feats) || w2.Dict.Tagging != TagsCut {
		t.Fatalf("dictionary changed by the round trip")
	}
	if !reflect.DeepEqual(w2.Emit, w.Emit) || !reflect.DeepEqual(w2.Trans, w.Trans) {
		t.Fatalf("weights changed by the round trip")
	}
	// "bird" is unseen: its word feature is dropped, its shape and "The" before it are known.
	row, _ := test.Seq.X.Row(1)
	var names []string
	for _, f := range row {
		names = append(names, w.Dict.Feats[f])
	}
	if slices.Contains(names, "w=bird") || !slices.Contains(names, "h=x") || !slices.Contains(names, "w-1=the") || !slices.Contains(names, "b") {
		t.Errorf("features of an unseen word: %q", names)
	}
	want, err := Predict(context.Background(), w, test, 1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Predict(context.Background(), w2, test, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got.Accuracy != want.Accuracy || got.Accuracy <= 0 {
		t.Errorf("accuracy %v after the round trip, %v before", got.Accuracy, want.Accuracy)
	}
	if _, _, err := PreparePrediction(path, "brown:"+corpus+"?tags=full", 1); err == nil {
		t.Errorf("tags=full through cut weights: no error")
	}
}

func TestWeightsDictMalformed(t *testing.T) {
	head := "ddrun-weights sequence labels=2 features=1\n"
	for in, want := range map[string]string{
		head + "dict tagging=cut tags=2 feats=1\ntag a\ntag b\n": "dict: 2 tags and 0 features",
		head + "tag a\n": "line 2: tag before the dict line",
		head + "dict tagging=half tags=2 feats=1\n":                                 `line 2: "tagging=half"`,
		head + "dict tagging=cut tags=3 feats=1\n":                                  "line 2: tags=3 feats=1: want tags=2 feats=1",
		head + "dict tagging=cut tags=2 feats=1\ntag a\ntag a\nfeat b\n":            `dict: tag "a" twice`,
		head + "dict tagging=cut tags=2 feats=1\ntag a\ntag b\ntag c\n":             "line 5: more than 2 tags",
		head + "dict tagging=cut tags=2 feats=1\ntag a b\n":                         "line 3: want `tag NAME`",
		head + "dict tagging=cut tags=2 feats=1\ndict tagging=cut tags=2 feats=1\n": "line 3: a second dict line",
	} {
		_, err := ReadWeights(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %s", in, err, want)
		}
	}
}

// TestBrownCorpus reads the real corpus when it is there: the label sets
// of both granularities and a selection spread over the genres.
func TestBrownCorpus(t *testing.T) {
	dir := brownDir(t)
	if dir == "" {
		t.Skip("no Brown corpus (set DDRUN_BROWN or put it at ../shared/data/brown)")
	}
	full, fullTags, err := readCorpus(CorpusSpec{Format: "brown", Path: dir, Tagging: TagsFull, Sentences: 500, Genres: "aj"})
	if err != nil {
		t.Fatal(err)
	}
	_, cutTags, err := readCorpus(CorpusSpec{Format: "brown", Path: dir, Tagging: TagsCut, Sentences: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(full) != 500 || len(cutTags) >= len(fullTags) || len(cutTags) < 50 {
		t.Errorf("%d sentences, %d full tags, %d cut", len(full), len(fullTags), len(cutTags))
	}
	for _, tg := range cutTags {
		if strings.ContainsAny(tg[1:], "-+") && strings.ContainsAny(tg, "abcdefghijklmnopqrstuvwxyz") {
			t.Errorf("cut tag %q", tg)
		}
	}
	t.Logf("%d full tags, %d cut", len(fullTags), len(cutTags))
}

// fuzzCorpus fuzzes a corpus reader from the seeds: an input it refuses
// must be refused by an error that names the file ("fuzz"); what it reads
// goes to check.
func fuzzCorpus(f *testing.F, read func(io.Reader, string) ([]Tagged, error), seeds []string, check func(t *testing.T, sents []Tagged)) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		sents, err := read(bytes.NewReader(in), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		check(t, sents)
	})
}

// FuzzReadBrown: no panic; what is read writes back to the same sentences.
func FuzzReadBrown(f *testing.F) {
	fuzzCorpus(f, ReadBrown, []string{"The/at cat/nn ./.\n", "a/b/c d//e\n\n", "x\n", "\t\n/a b/\n", "1/2/cd\r\n"}, func(t *testing.T, sents []Tagged) {
		var buf bytes.Buffer
		if err := WriteBrown(&buf, sents); err != nil {
			t.Fatal(err)
		}
		again, err := ReadBrown(&buf, "again")
		if err != nil || !reflect.DeepEqual(again, sents) {
			t.Fatalf("round trip: %q, %v; want %q", again, err, sents)
		}
		fd := newFeatureDict(TagsFull, nil)
		d := fd.Extract(sents, true)
		if d.Sentences() != len(sents) {
			t.Fatalf("%d sentences extracted of %d", d.Sentences(), len(sents))
		}
	})
}

// FuzzReadCoNLL: no panic, errors name the file.
func FuzzReadCoNLL(f *testing.F) {
	fuzzCorpus(f, ReadCoNLL, []string{"The DT B-NP\n\ncat NN\n", "1\tA\ta\tDET\tDT\t_\t0\troot\t_\t_\n", "# c\nx\n", "2-3\ta\n"}, func(t *testing.T, sents []Tagged) {
		for _, s := range sents {
			if len(s.Words) == 0 || len(s.Words) != len(s.Tags) {
				t.Fatalf("sentence %q", s)
			}
		}
	})
}
