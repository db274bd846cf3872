package learn

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tagged is one sentence of a tagged corpus: its words and their tags.
type Tagged struct {
	Words, Tags []string
}

// Tagging is the tag granularity of a corpus' labels.
type Tagging uint8

const (
	// TagsFull keeps every tag as written (Brown's compound tags
	// such as nn-tl or nn+bez are labels of their own).
	TagsFull Tagging = iota + 1
	// TagsCut cuts each tag at its first '-' or '+' after the first
	// character (nn-tl and nn+bez become nn; fw-at becomes fw); tags
	// without a letter (--, ', ...) stay whole.
	TagsCut
)

func (t Tagging) String() string {
	if t == TagsCut {
		return "cut"
	}
	return "full"
}

func taggingNamed(s string) (Tagging, bool) {
	switch s {
	case "full":
		return TagsFull, true
	case "cut":
		return TagsCut, true
	}
	return 0, false
}

// tag is tag at granularity t.
func (t Tagging) tag(tag string) string {
	if t != TagsCut || !strings.ContainsFunc(tag, unicode.IsLetter) || len(tag) < 2 {
		return tag
	}
	if i := strings.IndexAny(tag[1:], "-+"); i >= 0 {
		return tag[:i+1]
	}
	return tag
}

// maxCorpusLine bounds a corpus line (a Brown sentence).
const maxCorpusLine = 1 << 20

func corpusScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxCorpusLine)
	return sc
}

// ReadBrown reads the Brown corpus' layout (NLTK's): one sentence per
// non-blank line, tokens separated by white space, each token word/tag
// split at its last '/'. Errors name the file (name) and line.
func ReadBrown(r io.Reader, name string) ([]Tagged, error) {
	sc := corpusScanner(r)
	var out []Tagged
	for lineNo := 1; sc.Scan(); lineNo++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		s := Tagged{Words: make([]string, len(fields)), Tags: make([]string, len(fields))}
		for k, tok := range fields {
			i := strings.LastIndexByte(tok, '/')
			if i <= 0 || i == len(tok)-1 {
				return nil, fmt.Errorf("%s:%d: token %d %q: want word/tag", name, lineNo, k+1, tok)
			}
			s.Words[k], s.Tags[k] = tok[:i], tok[i+1:]
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// ReadCoNLL reads tagged CoNLL columns: one token per line, a blank line
// between sentences, '#' lines comments. A line of 10 tab-separated
// columns whose first is a number is CoNLL-U/X (the word is column 2, the
// tag column 4, multiword ranges 1-2 and empty nodes 1.1 skipped); any
// other line has the word in column 1 and the tag in column 2 (CoNLL-2000,
// CoNLL-2003: further columns ignored). Errors name the file and line.
func ReadCoNLL(r io.Reader, name string) ([]Tagged, error) {
	sc := corpusScanner(r)
	var out []Tagged
	var cur Tagged
	flush := func() {
		if len(cur.Words) > 0 {
			out = append(out, cur)
			cur = Tagged{}
		}
	}
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			flush()
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		var word, tag string
		if cols := strings.Split(line, "\t"); len(cols) == 10 && cols[0] != "" && strings.Trim(cols[0], "0123456789-.") == "" {
			if strings.ContainsAny(cols[0], "-.") {
				continue // a multiword range or an empty node
			}
			word, tag = strings.TrimSpace(cols[1]), strings.TrimSpace(cols[3])
		} else {
			f := strings.Fields(line)
			if len(f) < 2 {
				return nil, fmt.Errorf("%s:%d: %q: want a word and its tag", name, lineNo, trimmed)
			}
			word, tag = f[0], f[1]
		}
		if word == "" || tag == "" || strings.ContainsFunc(word+tag, unicode.IsSpace) {
			return nil, fmt.Errorf("%s:%d: %q: want a word and a tag without spaces", name, lineNo, trimmed)
		}
		cur.Words = append(cur.Words, word)
		cur.Tags = append(cur.Tags, tag)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	flush()
	return out, nil
}

// WriteBrown writes sentences in the Brown layout (ReadBrown's input).
func WriteBrown(w io.Writer, sents []Tagged) error {
	bw := bufio.NewWriter(w)
	for _, s := range sents {
		for k := range s.Words {
			if k > 0 {
				bw.WriteByte(' ')
			}
			bw.WriteString(s.Words[k])
			bw.WriteByte('/')
			bw.WriteString(s.Tags[k])
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// CorpusSpec names a tagged corpus and a selection of it, the form
// `brown:DIR?genres=a-j&sentences=2000&tags=cut` or
// `conll:FILE?sentences=N&tags=full` (options optional, in any order):
//
//   - brown:DIR, the Brown layout: files named c<genre><2 digits> (ca01 ...),
//     the genre a letter; genres (letters and ranges, e.g. a-j or a,c,f-h;
//     default all) selects files by genre. Its labels are every tag of the
//     directory's files (all genres), so a training and a test selection
//     of one directory share them.
//   - conll:FILE, CoNLL columns (ReadCoNLL); its labels are its tags.
//   - sentences=N keeps N sentences spread evenly over the selection
//     (every (total/N)-th, in file order; default all).
//   - tags=full|cut is the granularity (Tagging; default full). At
//     prediction the weights' dictionary fixes it.
type CorpusSpec struct {
	Format    string // brown or conll
	Path      string
	Genres    string // brown: the selected genre letters, "" for all
	Sentences int    // 0: all
	Tagging   Tagging
	tagsSet   bool
}

// ParseCorpusSpec parses a corpus spec; ok is false when s is not one
// (no brown: or conll: prefix): a data file.
func ParseCorpusSpec(s string) (spec CorpusSpec, ok bool, err error) {
	format, rest, found := strings.Cut(s, ":")
	if !found || format != "brown" && format != "conll" {
		return spec, false, nil
	}
	spec = CorpusSpec{Format: format, Tagging: TagsFull}
	path, query, _ := strings.Cut(rest, "?")
	if path == "" {
		return spec, true, fmt.Errorf("corpus %q: no path after %s:", s, format)
	}
	spec.Path = path
	for _, kv := range strings.Split(query, "&") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "genres":
			if format != "brown" {
				return spec, true, fmt.Errorf("corpus %q: genres: only brown: has genres", s)
			}
			if spec.Genres, err = parseGenres(v); err != nil {
				return spec, true, fmt.Errorf("corpus %q: genres=%s: %w", s, v, err)
			}
		case "sentences":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return spec, true, fmt.Errorf("corpus %q: sentences=%s: want a positive integer", s, v)
			}
			spec.Sentences = n
		case "tags":
			t, ok := taggingNamed(v)
			if !ok {
				return spec, true, fmt.Errorf("corpus %q: tags=%s: want full or cut", s, v)
			}
			spec.Tagging, spec.tagsSet = t, true
		default:
			return spec, true, fmt.Errorf("corpus %q: option %q: want genres, sentences or tags", s, k)
		}
	}
	return spec, true, nil
}

// parseGenres expands letters and ranges (a-j,m) to the sorted letters.
func parseGenres(v string) (string, error) {
	var in [26]bool
	for _, part := range strings.Split(v, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		if len(lo) != 1 || len(hi) != 1 || lo[0] < 'a' || hi[0] > 'z' || lo[0] > hi[0] {
			return "", fmt.Errorf("%q: want a letter a-z or a range such as a-j", part)
		}
		for c := lo[0]; c <= hi[0]; c++ {
			in[c-'a'] = true
		}
	}
	var b []byte
	for i, ok := range in {
		if ok {
			b = append(b, byte('a'+i))
		}
	}
	return string(b), nil
}

// brownGenre returns the genre letter of a Brown file name (ca01: a).
func brownGenre(name string) (byte, bool) {
	if len(name) != 4 || name[0] != 'c' || name[1] < 'a' || name[1] > 'z' || name[2] < '0' || name[2] > '9' || name[3] < '0' || name[3] > '9' {
		return 0, false
	}
	return name[1], true
}

// readCorpus reads the sentences spec selects and the tags of its label
// set (every tag of a Brown directory, the file's tags for CoNLL), at
// spec's granularity.
func readCorpus(spec CorpusSpec) (sel []Tagged, tags []string, err error) {
	seen := map[string]bool{}
	note := func(sents []Tagged) {
		for _, s := range sents {
			for k, t := range s.Tags {
				t = spec.Tagging.tag(t)
				s.Tags[k] = t
				if !seen[t] {
					seen[t] = true
					tags = append(tags, t)
				}
			}
		}
	}
	if spec.Format == "conll" {
		f, err := os.Open(spec.Path)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		if sel, err = ReadCoNLL(f, spec.Path); err != nil {
			return nil, nil, err
		}
		note(sel)
	} else {
		ents, err := os.ReadDir(spec.Path)
		if err != nil {
			return nil, nil, err
		}
		files := 0
		for _, e := range ents {
			g, ok := brownGenre(e.Name())
			if !ok || e.IsDir() {
				continue
			}
			files++
			path := filepath.Join(spec.Path, e.Name())
			f, err := os.Open(path)
			if err != nil {
				return nil, nil, err
			}
			sents, err := ReadBrown(f, path)
			f.Close()
			if err != nil {
				return nil, nil, err
			}
			note(sents)
			if spec.Genres == "" || strings.IndexByte(spec.Genres, g) >= 0 {
				sel = append(sel, sents...)
			}
		}
		if files == 0 {
			return nil, nil, fmt.Errorf("%s: no Brown files (named like ca01)", spec.Path)
		}
	}
	if len(sel) == 0 {
		return nil, nil, fmt.Errorf("%s: no sentences selected", spec.Path)
	}
	if n := spec.Sentences; n > 0 && n < len(sel) {
		kept := make([]Tagged, n)
		for i := range kept {
			kept[i] = sel[i*len(sel)/n]
		}
		sel = kept
	}
	slices.Sort(tags)
	return sel, tags, nil
}

// FeatureDict maps a tagged corpus to the sparse features and labels the
// trainers take, and is saved with the weights so that prediction maps
// unseen data the same way: the tag granularity, the label names (label
// y is Tags[y]) and the feature names (feature f, 0-based, is Feats[f]).
// The features of a token (Extract; every value 1): a bias, the word
// lower-cased, its suffixes of 1-3 and prefixes of 1-2 characters, its
// shape (upper X, lower x, digit d, other characters kept, runs
// collapsed), and the lower-cased words before and after it (or the
// sentence boundary).
type FeatureDict struct {
	Tagging Tagging
	Tags    []string
	Feats   []string
	tagIx   map[string]int32
	featIx  map[string]int32
}

func newFeatureDict(t Tagging, tags []string) *FeatureDict {
	fd := &FeatureDict{Tagging: t, Tags: tags}
	fd.index()
	return fd
}

// index builds the lookup maps and reports a repeated name.
func (fd *FeatureDict) index() error {
	fd.tagIx = make(map[string]int32, len(fd.Tags))
	fd.featIx = make(map[string]int32, len(fd.Feats))
	for i, t := range fd.Tags {
		if _, dup := fd.tagIx[t]; dup {
			return fmt.Errorf("tag %q twice", t)
		}
		fd.tagIx[t] = int32(i)
	}
	for i, f := range fd.Feats {
		if _, dup := fd.featIx[f]; dup {
			return fmt.Errorf("feature %q twice", f)
		}
		fd.featIx[f] = int32(i)
	}
	return nil
}

// tokenFeatures appends the feature names of token k of words to out.
func tokenFeatures(words []string, k int, out []string) []string {
	w := strings.ToLower(words[k])
	out = append(out, "b", "w="+w)
	n := utf8.RuneCountInString(w)
	r := []rune(w)
	for l := 1; l <= 3 && l <= n; l++ {
		out = append(out, "s"+strconv.Itoa(l)+"="+string(r[n-l:]))
	}
	for l := 1; l <= 2 && l <= n; l++ {
		out = append(out, "p"+strconv.Itoa(l)+"="+string(r[:l]))
	}
	out = append(out, "h="+wordShape(words[k]))
	prev, next := "<s>", "</s>"
	if k > 0 {
		prev = strings.ToLower(words[k-1])
	}
	if k+1 < len(words) {
		next = strings.ToLower(words[k+1])
	}
	return append(out, "w-1="+prev, "w+1="+next)
}

// wordShape is word's character classes, runs collapsed (Mr.: Xx.).
func wordShape(word string) string {
	var b []rune
	for _, c := range word {
		switch {
		case unicode.IsUpper(c):
			c = 'X'
		case unicode.IsLower(c):
			c = 'x'
		case unicode.IsDigit(c):
			c = 'd'
		}
		if len(b) == 0 || b[len(b)-1] != c {
			b = append(b, c)
		}
	}
	return string(b)
}

// Extract turns sentences into a sequence data set: label y of a token
// is its tag's index in Tags (a tag the dictionary does not know gets
// label len(Tags), which no weights predict: counted wrong), feature f
// one of Feats. With grow, features not in the dictionary are added (the
// training set); without, they are dropped (unseen data).
func (fd *FeatureDict) Extract(sents []Tagged, grow bool) *SeqData {
	d := &SeqData{Labels: len(fd.Tags), Start: []int{0}}
	d.X.init()
	var names []string
	var idx []int32
	var val []float64
	for _, s := range sents {
		for k := range s.Words {
			names = tokenFeatures(s.Words, k, names[:0])
			idx, val = idx[:0], val[:0]
			for _, nm := range names {
				f, ok := fd.featIx[nm]
				if !ok && grow {
					f, ok = int32(len(fd.Feats)), true
					fd.featIx[nm] = f
					fd.Feats = append(fd.Feats, nm)
				}
				if ok {
					idx, val = append(idx, f), append(val, 1)
				}
			}
			d.X.add(idx, val)
			y, ok := fd.tagIx[s.Tags[k]]
			if !ok {
				y = int32(len(fd.Tags))
			}
			d.Y = append(d.Y, y)
		}
		if len(s.Words) > 0 {
			d.Start = append(d.Start, len(d.Y))
		}
	}
	d.Features = len(fd.Feats)
	return d
}

// ReadCorpusTraining reads the corpus spec names and extracts its
// features into a new dictionary.
func ReadCorpusTraining(spec CorpusSpec) (*Data, *FeatureDict, error) {
	sel, tags, err := readCorpus(spec)
	if err != nil {
		return nil, nil, err
	}
	fd := newFeatureDict(spec.Tagging, tags)
	return &Data{Seq: fd.Extract(sel, true)}, fd, nil
}

// ReadCorpusWith reads the corpus spec names through an existing
// dictionary (the weights'), its granularity included.
func ReadCorpusWith(spec CorpusSpec, fd *FeatureDict) (*Data, error) {
	if spec.tagsSet && spec.Tagging != fd.Tagging {
		return nil, fmt.Errorf("tags=%s: the weights were trained with tags=%s", spec.Tagging, fd.Tagging)
	}
	spec.Tagging = fd.Tagging
	sel, _, err := readCorpus(spec)
	if err != nil {
		return nil, err
	}
	return &Data{Seq: fd.Extract(sel, false)}, nil
}

// writeDict writes the dictionary section of a weights file: a line
// `dict tagging=T tags=L feats=D`, then `tag NAME` per label and `feat
// NAME` per feature, in index order.
func (fd *FeatureDict) write(bw *bufio.Writer) {
	fmt.Fprintf(bw, "dict tagging=%s tags=%d feats=%d\n", fd.Tagging, len(fd.Tags), len(fd.Feats))
	for _, t := range fd.Tags {
		bw.WriteString("tag ")
		bw.WriteString(t)
		bw.WriteByte('\n')
	}
	for _, f := range fd.Feats {
		bw.WriteString("feat ")
		bw.WriteString(f)
		bw.WriteByte('\n')
	}
}

// dictLine reads one line of a weights file's dictionary section into
// *fd (created by the dict line); handled is false for other lines.
func dictLine(fd **FeatureDict, f []string, lineNo, labels, features int) (handled bool, err error) {
	switch f[0] {
	case "dict":
		if *fd != nil {
			return true, fmt.Errorf("line %d: a second dict line", lineNo)
		}
		if len(f) != 4 || !strings.HasPrefix(f[1], "tagging=") {
			return true, fmt.Errorf("line %d: want `dict tagging=full|cut tags=L feats=D`", lineNo)
		}
		t, ok := taggingNamed(strings.TrimPrefix(f[1], "tagging="))
		if !ok {
			return true, fmt.Errorf("line %d: %q: want tagging=full or tagging=cut", lineNo, f[1])
		}
		if f[2] != "tags="+strconv.Itoa(labels) || f[3] != "feats="+strconv.Itoa(features) {
			return true, fmt.Errorf("line %d: %s %s: want tags=%d feats=%d (the header's shape)", lineNo, f[2], f[3], labels, features)
		}
		*fd = &FeatureDict{Tagging: t}
		return true, nil
	case "tag", "feat":
		if *fd == nil {
			return true, fmt.Errorf("line %d: %s before the dict line", lineNo, f[0])
		}
		if len(f) != 2 {
			return true, fmt.Errorf("line %d: want `%s NAME`", lineNo, f[0])
		}
		if f[0] == "tag" {
			if len((*fd).Tags) == labels {
				return true, fmt.Errorf("line %d: more than %d tags", lineNo, labels)
			}
			(*fd).Tags = append((*fd).Tags, f[1])
		} else {
			if len((*fd).Feats) == features {
				return true, fmt.Errorf("line %d: more than %d features", lineNo, features)
			}
			(*fd).Feats = append((*fd).Feats, f[1])
		}
		return true, nil
	}
	return false, nil
}

// checkDict completes a dictionary read from a weights file.
func (fd *FeatureDict) check(labels, features int) error {
	if len(fd.Tags) != labels || len(fd.Feats) != features {
		return fmt.Errorf("dict: %d tags and %d features, want %d and %d", len(fd.Tags), len(fd.Feats), labels, features)
	}
	if err := fd.index(); err != nil {
		return fmt.Errorf("dict: %w", err)
	}
	return nil
}
