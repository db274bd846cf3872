package uai

import (
	"bytes"
	"errors"
	"io"
)

// This file is StreamScopes' parallel reading of the tables
// (ReadOptions.Converters): the bytes after the scopes are cut into
// windows at line breaks, and each window is tokenized and its entries
// converted (entryToLog: parsing and the logarithm) on a goroutine of its
// own, several windows at once, so that the tokenizing (a third of a
// table's reading) is parallel too, not only the conversion. Where a
// window's tokens fall in the tables depends on every window before it:
// after tokenizing, each window waits for the state its predecessor ends
// in (the factor and the entries of its table still to come), walks its
// own tokens (one count a table: cheap) and hands its end state on, then
// converts its entries. The caller's goroutine reads the windows and
// hands the tables over in file order.
//
// Anything out of the ordinary (a bad count or entry, a count that is not
// the scope's table size, a token over maxTokenLen, a line longer than
// maxWindow, a read error, a file that ends early or goes on after the
// last table) stops the parallel reading at the first window that has it,
// and StreamScopes reads the tables again sequentially (factorTables),
// skipping the tables already handed over: the tables, the errors and
// their order are the sequential reading's by construction. Line numbers
// are only needed for errors, so the windows do not count lines.

// windowBytes is about the size of one window (a variable for the tests).
var windowBytes = 256 << 10

// maxWindow bounds a window that has to grow to reach a line break: a
// longer line is read sequentially. A window's tokens take up to about 8
// bytes per byte of text, and up to Converters+1 windows are in flight,
// so this bounds the windows' memory to some 400 MiB.
const maxWindow = 8 << 20

// errFallback says that the parallel reading stopped before something it
// leaves to the sequential reading.
var errFallback = errors.New("uai: read the tables sequentially")

// walkState is where the tables stand at a window's start or end: factor
// a's table has left entries still to come (0: its count comes next).
type walkState struct {
	a, left int
	bad     bool // a window before stopped the parallel reading
}

// segment is the part of factor a's table that lies in one window: its
// entries are tokens [t0, t1); first: the table's count is in the window
// (count: its value), done: its last entry is.
type segment struct {
	a, count    int
	t0, t1      int
	first, done bool
}

// window is a run of whole lines of the tables' bytes and what its
// goroutine made of them.
type window struct {
	text         []byte
	bol          bool    // the text starts a line
	starts, ends []int32 // the tokens
	segs         []segment
	vals         []float64 // vals[t]: token t's log-potential (entries only)
	bad          bool      // the parallel reading stops at this window
	end          chan walkState
	done         chan struct{}
}

// tokenize splits w.text into tokens as the scanner does (blanks,
// comment lines); it is false when a token is longer than maxTokenLen.
func (w *window) tokenize() bool {
	t, bol := w.text, w.bol
	w.starts, w.ends = w.starts[:0], w.ends[:0]
	for i := 0; i < len(t); {
		c := t[i]
		switch {
		case c == '\n':
			bol = true
			i++
		case isBlank[c]:
			i++
		case c == 'c' && bol:
			if j := bytes.IndexByte(t[i:], '\n'); j >= 0 {
				i += j
			} else {
				i = len(t)
			}
		default:
			bol = false
			j := i + 1
			for j < len(t) && !isBlank[t[j]] {
				j++
			}
			if j-i > maxTokenLen {
				return false
			}
			w.starts = append(w.starts, int32(i))
			w.ends = append(w.ends, int32(j))
			i = j
		}
	}
	return true
}

func (w *window) token(t int) []byte { return w.text[w.starts[t]:w.ends[t]] }

// walk places w's tokens in the tables of nf factors from st, the state at
// w's start, and returns the state at its end.
func (w *window) walk(st walkState, nf int) walkState {
	w.segs = w.segs[:0]
	n := len(w.starts)
	for i := 0; i < n; {
		if st.left == 0 {
			if st.a >= nf {
				st.bad = true // a token after the last table
				return st
			}
			count, problem := parseCount(w.token(i))
			if problem != "" {
				st.bad = true
				return st
			}
			i++
			w.segs = append(w.segs, segment{a: st.a, count: count, t0: i, t1: i, first: true, done: count == 0})
			if count == 0 {
				st.a++
			}
			st.left = count
			continue
		}
		take := min(st.left, n-i)
		if k := len(w.segs) - 1; k >= 0 && w.segs[k].a == st.a && w.segs[k].t1 == i {
			w.segs[k].t1 += take
		} else {
			w.segs = append(w.segs, segment{a: st.a, t0: i, t1: i + take})
		}
		i += take
		if st.left -= take; st.left == 0 {
			w.segs[len(w.segs)-1].done = true
			st.a++
		}
	}
	return st
}

// convert fills w.vals for the entries of w's segments; it is false at a
// token that is not a valid entry.
func (w *window) convert(base LogBase) bool {
	if n := len(w.starts); cap(w.vals) < n {
		w.vals = make([]float64, n)
	} else {
		w.vals = w.vals[:n]
	}
	var memo entryMemo
	for _, s := range w.segs {
		for t := s.t0; t < s.t1; t++ {
			v, problem := memo.toLog(w.token(t), base)
			if problem != "" {
				return false
			}
			w.vals[t] = v
		}
	}
	return true
}

// process is w's goroutine: prev gives the state at w's start.
func (w *window) process(prev <-chan walkState, nf int, base LogBase) {
	defer func() { w.done <- struct{}{} }() // received once
	ok := w.tokenize()
	st := <-prev
	switch {
	case st.bad:
	case !ok:
		st.bad = true
	default:
		st = w.walk(st, nf)
	}
	w.end <- st
	w.bad = st.bad || !w.convert(base)
}

// readWindow appends to buf from r until buf holds want bytes or the input
// ends (eof), as the scanner's fill reads.
func readWindow(r io.Reader, buf []byte, want int) (_ []byte, eof bool, err error) {
	for empty := 0; len(buf) < want; {
		if cap(buf) < want {
			buf = append(buf[:cap(buf)], make([]byte, want-cap(buf))...)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):want])
		if n < 0 || n > want-len(buf) {
			return buf, false, errors.New("invalid read count")
		}
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF:
			return buf, true, nil
		case err != nil:
			return buf, false, err
		case n == 0:
			if empty++; empty >= maxEmptyReads {
				return buf, false, io.ErrNoProgress
			}
		}
	}
	return buf, false, nil
}

// windowTables reads the tables after the scopes (p's scanner stands after
// the last scope) in windows, at most inFlight of them at once, and hands
// them to deliver in order. It returns the number of tables handed over
// and deliver's error, or errFallback when the rest is left to the
// sequential reading.
func (p *modelParser) windowTables(inFlight int, deliver func(a int, scope []int, t []float64) error) (delivered int, err error) {
	s := p.src.s
	carry := append([]byte(nil), s.buf[s.pos:s.end]...)
	s.pos = s.end
	eof := false
	switch {
	case s.readErr == io.EOF:
		eof = true
	case s.readErr != nil:
		return 0, errFallback
	}
	start := make(chan walkState, 1)
	start <- walkState{}
	prev := (<-chan walkState)(start)
	var pending, free []*window
	defer func() {
		for _, w := range pending {
			<-w.done
		}
	}()
	var table []float64 // a table cut by windows, its entries so far
	hand := func(w *window) error {
		<-w.done
		pending = pending[1:]
		defer func() { free = append(free, w) }()
		if w.bad {
			return errFallback
		}
		for _, sg := range w.segs {
			if sg.first {
				size, err := p.tableSize(sg.a)
				if err != nil || size != sg.count {
					return errFallback
				}
				table = table[:0]
			}
			t := w.vals[sg.t0:sg.t1]
			if !sg.first || !sg.done {
				table = append(table, t...)
				t = table
			}
			if !sg.done {
				continue
			}
			if err := deliver(sg.a, p.cur, t); err != nil {
				return err
			}
			delivered = sg.a + 1
		}
		return nil
	}
	bol := s.bol
	for more := true; more; more = !eof {
		var w *window
		if n := len(free); n > 0 {
			w, free = free[n-1], free[:n-1]
		} else {
			w = &window{}
		}
		w.text = append(w.text[:0], carry...)
		cut := -1
		for cut < 0 && !eof {
			want := max(len(w.text)+1, min(2*len(w.text), maxWindow+1), windowBytes)
			var rerr error
			if w.text, eof, rerr = readWindow(s.r, w.text, want); rerr != nil {
				return delivered, errFallback
			}
			if cut = bytes.LastIndexByte(w.text, '\n'); cut < 0 && len(w.text) > maxWindow {
				return delivered, errFallback
			}
		}
		if eof {
			cut = len(w.text) - 1
		}
		carry = append(carry[:0], w.text[cut+1:]...)
		w.text, w.bol = w.text[:cut+1], bol
		bol = true
		w.end, w.done = make(chan walkState, 1), make(chan struct{}, 1)
		go w.process(prev, p.nf, p.base)
		prev = w.end
		pending = append(pending, w)
		if len(pending) > inFlight {
			if err := hand(pending[0]); err != nil {
				return delivered, err
			}
		}
	}
	for len(pending) > 0 {
		if err := hand(pending[0]); err != nil {
			return delivered, err
		}
	}
	if st := <-prev; st.bad || st.a != p.nf || st.left != 0 {
		return delivered, errFallback // the input ended inside the tables
	}
	return delivered, nil
}
