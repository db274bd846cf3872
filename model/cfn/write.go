package cfn

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/uai"
)

// MaxWritePrecision is the most decimals Write gives a cost: a model whose
// scores need more (a UAI file's logarithms) is written rounded to 10^-9.
const MaxWritePrecision = 9

// writeTol is how far (relative, at least absolute) a score may be from
// its decimal at a precision and still be written as that decimal: the
// last bits that float arithmetic leaves.
const writeTol = 1e-9

// Write writes m to w as a CFN file named name (the problem's name) that
// minimises the costs, each minus a score. The precision is the fewest
// decimals, at most MaxWritePrecision, that hold every score within 1e-9
// (relative); a score that needs more is rounded to MaxWritePrecision
// decimals. The bound "<B" is one unit above the largest total any
// assignment can reach, and a -Inf entry is written as the cost that
// reaches B when every other function is at its least (not "inf", which
// toulbar2 releases before 1.2 do not read), so that the bound forbids
// exactly the -Inf entries.
// Variables are named x0, x1, ... with numbered values (domain sizes);
// the unaries and every factor, of any kind, are written as tables: in
// full, or as a default cost (0 or forbidden) and the other tuples when that is
// shorter or the arity is 4 or more (toulbar2 misreads the offset of a full
// table of arity 4 or more). Reading the output back gives a model with the same score for
// every assignment (to the precision).
func Write(w io.Writer, m *model.Model, name string) error {
	if err := write(w, m, name); err != nil {
		return fmt.Errorf("cfn: write: %w", err)
	}
	return nil
}

// WriteFile writes m to the file at path, gzip-compressed when path ends in
// .gz; on failure it removes the partial file.
func WriteFile(path string, m *model.Model) error {
	return uai.CreateFile("cfn", path, func(w io.Writer) error { return write(w, m, uai.ProblemName(path)) })
}

// outTable is one function of the output: its scope and scores.
type outTable struct {
	vars   []int
	scores []float64
}

// fits reports whether s is a decimal with p decimals, within writeTol.
func fits(s float64, p int) bool {
	r := math.Round(s*pow10[p]) / pow10[p]
	return math.Abs(s-r) <= writeTol*math.Max(1, math.Abs(s))
}

// precisionOf returns the fewest decimals (at most MaxWritePrecision) that
// hold every finite score of the tables and c.
func precisionOf(tabs []outTable, c float64) int {
	p := 0
	ok := func(s float64) bool {
		for !fits(s, p) {
			if p == MaxWritePrecision {
				return false
			}
			p++
		}
		return true
	}
	if !ok(c) {
		return p
	}
	for _, t := range tabs {
		for _, s := range t.scores {
			if !math.IsInf(s, -1) && !ok(s) {
				return p
			}
		}
	}
	return p
}

// formatUnits writes u units of 10^-p as a decimal with p decimals.
func formatUnits(buf []byte, u int64, p int) []byte {
	if u < 0 {
		buf = append(buf, '-')
		u = -u
	}
	s := strconv.FormatInt(u, 10)
	if p == 0 {
		return append(buf, s...)
	}
	if len(s) <= p {
		s = strings.Repeat("0", p-len(s)+1) + s
	}
	buf = append(buf, s[:len(s)-p]...)
	buf = append(buf, '.')
	return append(buf, s[len(s)-p:]...)
}

// cleanName makes s a CFN string: no separator, brace, comment character,
// and not starting like a number.
func cleanName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if isSep(c) || isBrace(c) || c == '#' || c == '/' || c == '\n' || c < ' ' {
			b[i] = '_'
		}
	}
	s = string(b)
	if s == "" || startsNumber(s) || s == "inf" {
		s = "p" + s
	}
	return s
}

func write(w io.Writer, m *model.Model, name string) error {
	if err := m.Validate(); err != nil {
		return err
	}
	var tabs []outTable
	for i := range m.Cards {
		u := m.Unaries(i)
		for _, s := range u {
			if s != 0 {
				tabs = append(tabs, outTable{[]int{i}, u})
				break
			}
		}
	}
	for a := range m.Factors {
		if _, err := m.TableSize(m.Factors[a].Vars); err != nil {
			return fmt.Errorf("factor %d: %w", a, err)
		}
		tabs = append(tabs, outTable{m.Factors[a].Vars, m.DenseTable(a)})
	}
	if math.IsNaN(m.Constant) || math.IsInf(m.Constant, 0) {
		return fmt.Errorf("constant %v is not finite", m.Constant)
	}
	p := precisionOf(tabs, m.Constant)
	scale := pow10[p]
	units := func(s float64, what string) (int64, error) {
		c := math.Round(-s * scale)
		if math.Abs(c) > maxExact {
			return 0, fmt.Errorf("%s: cost %v at precision %d: magnitude above 2^53 units", what, -s, p)
		}
		return int64(c), nil
	}
	constant, err := units(m.Constant, "constant")
	if err != nil {
		return err
	}
	bound := float64(constant) // the largest finite total
	best := float64(constant)  // the least total, forbidden entries aside
	costs := make([][]int64, len(tabs))
	mins := make([]int64, len(tabs))
	for k, t := range tabs {
		costs[k] = make([]int64, len(t.scores))
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for e, s := range t.scores {
			if math.IsInf(s, -1) {
				continue
			}
			if costs[k][e], err = units(s, fmt.Sprintf("function %d entry %d", k, e)); err != nil {
				return err
			}
			lo, hi = min(lo, costs[k][e]), max(hi, costs[k][e])
		}
		if lo <= hi {
			bound += float64(hi)
			best += float64(lo)
			mins[k] = lo
		}
	}
	if math.Abs(bound)+1 >= maxExact || math.Abs(best) >= maxExact || bound+1-best >= maxExact {
		return fmt.Errorf("total cost bound %v units of 10^-%d: not below 2^53", bound, p)
	}
	// A forbidden entry of table k costs what reaches the bound with every
	// other table at its least: mins[k] + B - best.
	for k := range tabs {
		forbid := mins[k] + int64(bound) + 1 - int64(best)
		for e, s := range tabs[k].scores {
			if math.IsInf(s, -1) {
				costs[k][e] = forbid
			}
		}
	}
	var buf []byte
	bw := bufio.NewWriterSize(w, 64<<10)
	buf = append(buf, "{\n  \"problem\": {\"name\": \""...)
	buf = append(buf, cleanName(strings.Join(strings.Fields(name), "_"))...)
	buf = append(buf, "\", \"mustbe\": \"<"...)
	buf = formatUnits(buf, int64(bound)+1, p)
	buf = append(buf, "\"},\n  \"variables\": {"...)
	for i, c := range m.Cards {
		if i > 0 {
			buf = append(buf, ", "...)
		}
		buf = append(buf, fmt.Sprintf("\"x%d\": %d", i, c)...)
	}
	buf = append(buf, "},\n  \"functions\": {"...)
	sep := "\n"
	if constant != 0 {
		buf = append(buf, "\n    \"c\": {\"scope\": [], \"costs\": ["...)
		buf = formatUnits(buf, constant, p)
		buf = append(buf, "]}"...)
		sep = ",\n"
	}
	bw.Write(buf)
	for k, t := range tabs {
		buf = append(buf[:0], sep...)
		sep = ",\n"
		buf = append(buf, fmt.Sprintf("    \"f%d\": {\"scope\": [", k)...)
		for j, v := range t.vars {
			if j > 0 {
				buf = append(buf, ", "...)
			}
			buf = append(buf, fmt.Sprintf("\"x%d\"", v)...)
		}
		buf = append(buf, ']')
		bw.Write(buf)
		writeTable(bw, m, t, costs[k], p)
	}
	bw.WriteString("\n  }\n}\n")
	return bw.Flush()
}

// writeTable writes a table's costs, after its scope, and the function's
// closing brace: as a default (the commoner of 0 and forbidden) and the
// other tuples when that is shorter or the arity is 4 or more, else in
// full.
func writeTable(bw *bufio.Writer, m *model.Model, t outTable, costs []int64, p int) {
	zeros, bad := 0, 0
	for e, s := range t.scores {
		if math.IsInf(s, -1) {
			bad++
		} else if costs[e] == 0 {
			zeros++
		}
	}
	defBad := bad > zeros
	listed := len(costs) - max(zeros, bad)
	entry := func(buf []byte, e int) []byte { return formatUnits(buf, costs[e], p) }
	buf := make([]byte, 0, 64)
	// toulbar2 counts the least cost of a full table of arity 4 or more
	// twice (readNaryCostFunction shifts its offset, not its tuples): such
	// tables go as tuples.
	if len(t.vars) <= 3 && listed*(len(t.vars)+1) >= len(costs) {
		bw.WriteString(", \"costs\": [")
		for e := range costs {
			buf = buf[:0]
			if e > 0 {
				buf = append(buf, ", "...)
			}
			bw.Write(entry(buf, e))
		}
		bw.WriteString("]}")
		return
	}
	def := int64(0)
	for e, s := range t.scores {
		if defBad && math.IsInf(s, -1) {
			def = costs[e]
			break
		}
	}
	bw.WriteString(", \"defaultcost\": ")
	bw.Write(formatUnits(nil, def, p))
	bw.WriteString(", \"costs\": [")
	x := make([]int, len(t.vars))
	first := true
	for e := range costs {
		isBad := math.IsInf(t.scores[e], -1)
		if isBad != defBad || (!defBad && costs[e] != 0) {
			buf = buf[:0]
			if !first {
				buf = append(buf, ",\n      "...)
			}
			first = false
			for _, s := range x {
				buf = strconv.AppendInt(buf, int64(s), 10)
				buf = append(buf, ", "...)
			}
			bw.Write(entry(buf, e))
		}
		for k := len(x) - 1; k >= 0; k-- {
			if x[k]++; x[k] < m.Cards[t.vars[k]] {
				break
			}
			x[k] = 0
		}
	}
	bw.WriteString("]}")
}
