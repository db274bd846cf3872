package learn

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The text formats (docs/learning.md):
//
// Sequences, CoNLL-style columns: one token per line, `LABEL FEAT:VAL ...`
// with LABEL a 0-based integer and FEAT a 1-based integer, a blank line
// between sentences. Multilabel, LIBSVM's multilabel format: one example
// per line, `L1,L2,... FEAT:VAL ...` (the label list may be empty; the line
// then starts with a space or a feature). In both, a line starting with '#'
// is a comment; the header comment
//
//	# ddrun sequence labels=L features=D
//	# ddrun multilabel labels=L features=D
//
// fixes the kind and the shape (labels and features may then exceed what
// the examples use).
//
// Weights: a first line `ddrun-weights sequence|multilabel labels=L
// features=D`, then one nonzero weight per line: `e FEAT LABEL VALUE`
// (emission/unigram, FEAT 1-based), `t A B VALUE` (transition A -> B) or
// `p A B VALUE` (labels A < B both on). Comments start with '#'.

const maxShape = 1 << 31 // labels*features must stay addressable

// header parses `# ddrun KIND labels=L features=D`; ok is false when the
// comment is not a header.
// headerOf reads a comment line that may be the header (header): a
// header of another kind than want is an error; one of kind want sets
// labels and features.
func headerOf(line string, lineNo int, want Kind, labels, features *int) error {
	kind, l, f, ok, err := header(line, lineNo)
	switch {
	case err != nil:
		return err
	case ok && kind != want:
		return fmt.Errorf("line %d: header says %s, want %s", lineNo, kind, want)
	case ok:
		*labels, *features = l, f
	}
	return nil
}

// kindNamed returns the Kind whose String is name, 0 when there is none.
func kindNamed(name string) Kind {
	for _, k := range []Kind{KindSequence, KindMultilabel} {
		if k.String() == name {
			return k
		}
	}
	return 0
}

func header(line string, lineNo int) (kind Kind, labels, features int, ok bool, err error) {
	f := strings.Fields(strings.TrimPrefix(line, "#"))
	if len(f) < 2 || f[0] != "ddrun" {
		return 0, 0, 0, false, nil
	}
	if kind = kindNamed(f[1]); kind == 0 {
		return 0, 0, 0, false, fmt.Errorf("line %d: header: unknown kind %q (want sequence or multilabel)", lineNo, f[1])
	}
	labels, features, err = shape(f[2:], lineNo)
	return kind, labels, features, true, err
}

func shape(fields []string, lineNo int) (labels, features int, err error) {
	for _, kv := range fields {
		k, v, found := strings.Cut(kv, "=")
		n, perr := strconv.Atoi(v)
		if !found || perr != nil || n < 0 || n > maxShape {
			return 0, 0, fmt.Errorf("line %d: header field %q: want labels=N or features=N", lineNo, kv)
		}
		switch k {
		case "labels":
			labels = n
		case "features":
			features = n
		default:
			return 0, 0, fmt.Errorf("line %d: header field %q: unknown key", lineNo, kv)
		}
	}
	if labels > 0 && features > 0 && labels*features > maxShape {
		return 0, 0, fmt.Errorf("line %d: header: %d labels x %d features is too large", lineNo, labels, features)
	}
	return labels, features, nil
}

// parseFeatures appends the `FEAT:VAL` fields (1-based FEAT) as 0-based
// indices and returns the largest index + 1 seen.
func parseFeatures(fields []string, lineNo, first int, idx []int32, val []float64) ([]int32, []float64, int, error) {
	maxF := 0
	for k, fv := range fields {
		fs, vs, found := strings.Cut(fv, ":")
		if !found {
			return idx, val, 0, fmt.Errorf("line %d: field %d %q: want FEAT:VAL", lineNo, first+k, fv)
		}
		f, err := strconv.Atoi(fs)
		if err != nil || f < 1 || f > maxShape {
			return idx, val, 0, fmt.Errorf("line %d: field %d %q: feature index must be an integer in [1, %d]", lineNo, first+k, fv, maxShape)
		}
		v, err := strconv.ParseFloat(vs, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return idx, val, 0, fmt.Errorf("line %d: field %d %q: value must be a finite number", lineNo, first+k, fv)
		}
		idx = append(idx, int32(f-1))
		val = append(val, v)
		maxF = max(maxF, f)
	}
	return idx, val, maxF, nil
}

func scanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	return sc
}

// textReader is what both text formats track while reading: the line
// number, the largest label and feature seen, the header's labels and
// features, and the buffers of a row's features.
type textReader struct {
	lineNo, maxL, maxF int
	hdrL, hdrF         int
	idx                []int32
	val                []float64
}

// read calls line with each line of r but comments, trimmed (blank lines
// too), which adds its rows to x (initialised here); a "#" line is the
// header of kind. It returns the data's shape (shape, with maxLabels).
func (tr *textReader) read(r io.Reader, kind Kind, x *Rows, maxLabels int, line func(string) error) (labels, features int, err error) {
	x.init()
	sc := scanner(r)
	for sc.Scan() {
		tr.lineNo++
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") {
			if err := headerOf(l, tr.lineNo, kind, &tr.hdrL, &tr.hdrF); err != nil {
				return 0, 0, err
			}
			continue
		}
		if err := line(l); err != nil {
			return 0, 0, err
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("line %d: %w", tr.lineNo+1, err)
	}
	return tr.shape(maxLabels)
}

// row parses fields (field number first onwards) as the features of a new
// row of x, which must be finite.
func (tr *textReader) row(x *Rows, fields []string, first int) error {
	tr.idx, tr.val = tr.idx[:0], tr.val[:0]
	var mf int
	var err error
	tr.idx, tr.val, mf, err = parseFeatures(fields, tr.lineNo, first, tr.idx, tr.val)
	if err != nil {
		return err
	}
	x.add(tr.idx, tr.val)
	if err := lastRowFinite(x, tr.lineNo); err != nil {
		return err
	}
	tr.maxF = max(tr.maxF, mf)
	return nil
}

// shape checks the labels and features seen against the header and
// returns the data's shape; more than maxLabels labels is too large.
func (tr *textReader) shape(maxLabels int) (labels, features int, err error) {
	if tr.hdrL > 0 && tr.maxL > tr.hdrL {
		return 0, 0, fmt.Errorf("a label is %d but the header says labels=%d", tr.maxL-1, tr.hdrL)
	}
	if tr.hdrF > 0 && tr.maxF > tr.hdrF {
		return 0, 0, fmt.Errorf("a feature is %d but the header says features=%d", tr.maxF, tr.hdrF)
	}
	labels, features = max(tr.maxL, tr.hdrL), max(tr.maxF, tr.hdrF)
	if labels*features > maxShape || labels > maxLabels {
		return 0, 0, fmt.Errorf("%d labels x %d features is too large", labels, features)
	}
	return labels, features, nil
}

// ReadSequences parses the CoNLL-style sequence format.
func ReadSequences(r io.Reader) (*SeqData, error) {
	d := &SeqData{Start: []int{0}}
	var tr textReader
	labels, features, err := tr.read(r, KindSequence, &d.X, math.MaxInt, func(line string) error {
		if line == "" {
			if n := len(d.Y); n > d.Start[len(d.Start)-1] {
				d.Start = append(d.Start, n)
			}
			return nil
		}
		fields := strings.Fields(line)
		y, err := strconv.Atoi(fields[0])
		if err != nil || y < 0 || y >= maxShape {
			return fmt.Errorf("line %d: field 1 %q: label must be a non-negative integer", tr.lineNo, fields[0])
		}
		if err := tr.row(&d.X, fields[1:], 2); err != nil {
			return err
		}
		d.Y = append(d.Y, int32(y))
		tr.maxL = max(tr.maxL, y+1)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n := len(d.Y); n > d.Start[len(d.Start)-1] {
		d.Start = append(d.Start, n)
	}
	d.Labels, d.Features = labels, features
	return d, nil
}

// WriteSequences writes d in the CoNLL-style format, header first.
func WriteSequences(w io.Writer, d *SeqData) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# ddrun sequence labels=%d features=%d\n", d.Labels, d.Features)
	for s := 0; s < d.Sentences(); s++ {
		if s > 0 {
			bw.WriteByte('\n')
		}
		for t := d.Start[s]; t < d.Start[s+1]; t++ {
			bw.WriteString(strconv.Itoa(int(d.Y[t])))
			writeFeatures(bw, &d.X, t)
			bw.WriteByte('\n')
		}
	}
	return bw.Flush()
}

func writeFeatures(bw *bufio.Writer, x *Rows, r int) {
	idx, val := x.Row(r)
	var b [32]byte
	for k, f := range idx {
		bw.WriteByte(' ')
		bw.Write(strconv.AppendInt(b[:0], int64(f)+1, 10))
		bw.WriteByte(':')
		bw.Write(strconv.AppendFloat(b[:0], val[k], 'g', -1, 64))
	}
}

// ReadMultilabel parses LIBSVM's multilabel format.
func ReadMultilabel(r io.Reader) (*MLData, error) {
	d := &MLData{YOff: []int{0}}
	var tr textReader
	labels, features, err := tr.read(r, KindMultilabel, &d.X, 1<<16, func(line string) error {
		if line == "" {
			return nil
		}
		fields := strings.Fields(line)
		first := 1
		if !strings.Contains(fields[0], ":") {
			start := len(d.Y)
			for _, ls := range strings.Split(fields[0], ",") {
				y, err := strconv.Atoi(ls)
				if err != nil || y < 0 || y >= maxShape {
					return fmt.Errorf("line %d: field 1 %q: labels must be non-negative integers separated by commas", tr.lineNo, fields[0])
				}
				d.Y = append(d.Y, int32(y))
				tr.maxL = max(tr.maxL, y+1)
			}
			ys := d.Y[start:]
			sortInt32(ys)
			for k := 1; k < len(ys); k++ {
				if ys[k] == ys[k-1] {
					return fmt.Errorf("line %d: field 1 %q: label %d repeated", tr.lineNo, fields[0], ys[k])
				}
			}
			fields = fields[1:]
			first = 2
		}
		d.YOff = append(d.YOff, len(d.Y))
		return tr.row(&d.X, fields, first)
	})
	if err != nil {
		return nil, err
	}
	d.Labels, d.Features = labels, features
	return d, nil
}

func sortInt32(a []int32) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// WriteMultilabel writes d in LIBSVM's multilabel format, header first.
func WriteMultilabel(w io.Writer, d *MLData) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# ddrun multilabel labels=%d features=%d\n", d.Labels, d.Features)
	for i := 0; i < d.Examples(); i++ {
		for k, y := range d.Positive(i) {
			if k > 0 {
				bw.WriteByte(',')
			}
			bw.WriteString(strconv.Itoa(int(y)))
		}
		writeFeatures(bw, &d.X, i)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// Data is a loaded data set: exactly one of Seq and ML is set.
type Data struct {
	Seq *SeqData
	ML  *MLData
}

// Kind returns the data set's kind.
func (d *Data) Kind() Kind {
	if d.Seq != nil {
		return KindSequence
	}
	return KindMultilabel
}

// Shape returns the number of labels and features.
func (d *Data) Shape() (labels, features int) {
	if d.Seq != nil {
		return d.Seq.Labels, d.Seq.Features
	}
	return d.ML.Labels, d.ML.Features
}

// ReadData reads a data file of either kind: the header comment says which;
// without one, the name does (.svm, .libsvm, .ml: multilabel; anything
// else: sequences).
func ReadData(path string) (*Data, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	kind := KindSequence
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svm", ".libsvm", ".ml":
		kind = KindMultilabel
	}
	if first, err := br.Peek(min(br.Size(), 256)); err == nil || errors.Is(err, io.EOF) || errors.Is(err, bufio.ErrBufferFull) {
		line, _, _ := strings.Cut(string(first), "\n")
		if k, _, _, ok, herr := header(strings.TrimSpace(line), 1); ok && herr == nil && strings.HasPrefix(strings.TrimSpace(line), "#") {
			kind = k
		}
	}
	if kind == KindMultilabel {
		d, err := ReadMultilabel(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return &Data{ML: d}, nil
	}
	d, err := ReadSequences(br)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Data{Seq: d}, nil
}

// WriteWeights writes w's nonzero weights in the weights format.
func WriteWeights(out io.Writer, w *Weights) error {
	bw := bufio.NewWriter(out)
	fmt.Fprintf(bw, "ddrun-weights %s labels=%d features=%d\n", w.Kind, w.Labels, w.Features)
	if w.Dict != nil {
		w.Dict.write(bw)
	}
	var b []byte
	L := w.Labels
	for f := 0; f < w.Features; f++ {
		for y, v := range w.Emit[f*L : f*L+L] {
			if v != 0 {
				b = appendEntry(b[:0], "e ", f+1, y, v)
				bw.Write(b)
			}
		}
	}
	tab, tag := w.Trans, "t "
	if w.Kind == KindMultilabel {
		tab, tag = w.Pair, "p "
	}
	for a := 0; a < L && tab != nil; a++ {
		for c, v := range tab[a*L : a*L+L] {
			if v != 0 && (w.Kind == KindSequence || c > a) {
				b = appendEntry(b[:0], tag, a, c, v)
				bw.Write(b)
			}
		}
	}
	return bw.Flush()
}

// appendEntry appends the weights file's line "TAG i j v" to b.
func appendEntry(b []byte, tag string, i, j int, v float64) []byte {
	b = append(b, tag...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(j), 10)
	b = append(b, ' ')
	b = strconv.AppendFloat(b, v, 'g', -1, 64)
	return append(b, '\n')
}

// MaxWeights bounds labels*features (and labels^2) of a weights file: 2^28
// entries, 2 GiB of float64.
const MaxWeights = 1 << 28

// ReadWeights parses the weights format.
func ReadWeights(r io.Reader) (*Weights, error) { return readWeights(r, MaxWeights) }

func readWeights(r io.Reader, maxEntries int) (*Weights, error) {
	sc := scanner(r)
	lineNo := 0
	var w *Weights
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if w == nil {
			if f[0] != "ddrun-weights" || len(f) < 2 {
				return nil, fmt.Errorf("line %d: want the header `ddrun-weights sequence|multilabel labels=L features=D`", lineNo)
			}
			kind := kindNamed(f[1])
			if kind == 0 {
				return nil, fmt.Errorf("line %d: field 2 %q: want sequence or multilabel", lineNo, f[1])
			}
			L, D, err := shape(f[2:], lineNo)
			if err != nil {
				return nil, err
			}
			if L < 1 || L*L > maxEntries || L*D > maxEntries {
				return nil, fmt.Errorf("line %d: labels=%d features=%d: want labels >= 1 and labels^2, labels*features <= %d", lineNo, L, D, maxEntries)
			}
			w = NewWeights(kind, L, D)
			continue
		}
		if handled, err := dictLine(&w.Dict, f, lineNo, w.Labels, w.Features); handled || err != nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		if len(f) != 4 {
			return nil, fmt.Errorf("line %d: want 4 fields (e FEAT LABEL VALUE, t A B VALUE or p A B VALUE), got %d", lineNo, len(f))
		}
		a, err1 := strconv.Atoi(f[1])
		b, err2 := strconv.Atoi(f[2])
		v, err3 := strconv.ParseFloat(f[3], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("line %d: fields 2-3 %q %q: want integers", lineNo, f[1], f[2])
		}
		if err3 != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("line %d: field 4 %q: want a finite number", lineNo, f[3])
		}
		L := w.Labels
		switch f[0] {
		case "e":
			if a < 1 || a > w.Features || b < 0 || b >= L {
				return nil, fmt.Errorf("line %d: e %d %d: feature must be in [1, %d], label in [0, %d)", lineNo, a, b, w.Features, L)
			}
			w.Emit[(a-1)*L+b] = v
		case "t":
			if w.Kind != KindSequence {
				return nil, fmt.Errorf("line %d: field 1 %q: transitions belong to sequence weights", lineNo, f[0])
			}
			if a < 0 || a >= L || b < 0 || b >= L {
				return nil, fmt.Errorf("line %d: t %d %d: labels must be in [0, %d)", lineNo, a, b, L)
			}
			w.Trans[a*L+b] = v
		case "p":
			if w.Kind != KindMultilabel {
				return nil, fmt.Errorf("line %d: field 1 %q: pairs belong to multilabel weights", lineNo, f[0])
			}
			if a < 0 || b <= a || b >= L {
				return nil, fmt.Errorf("line %d: p %d %d: want 0 <= A < B < %d", lineNo, a, b, L)
			}
			w.Pair[a*L+b] = v
		default:
			return nil, fmt.Errorf("line %d: field 1 %q: want e, t or p", lineNo, f[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", lineNo+1, err)
	}
	if w == nil {
		return nil, errors.New("empty weights file (no ddrun-weights header)")
	}
	if w.Dict != nil {
		if err := w.Dict.check(w.Labels, w.Features); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// LoadWeights reads a weights file.
func LoadWeights(path string) (*Weights, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	w, err := ReadWeights(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return w, nil
}

// SaveWeights writes a weights file.
func SaveWeights(path string, w *Weights) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteWeights(f, w); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// lastRowFinite rejects a row whose repeated features sum to an infinity.
func lastRowFinite(x *Rows, lineNo int) error {
	idx, val := x.Row(x.Len() - 1)
	for k, v := range val {
		if math.IsInf(v, 0) {
			return fmt.Errorf("line %d: feature %d: repeated values sum to %v", lineNo, idx[k]+1, v)
		}
	}
	return nil
}
