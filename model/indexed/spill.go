package indexed

import (
	"fmt"
	"io"
	"os"
)

// spillBuf is the bytes a file spill buffers before writing, and the least
// it reads at a time.
const spillBuf = 256 << 10

// spillPage is the window of an update that jumps away from the last one.
const spillPage = 4 << 10

// spill holds a section that the Writer builds before it knows where the
// section goes in the file (the unaries, the factor records, the block
// index): in memory, or in a temporary file so that memory does not grow
// with the model. It is appended to, updated in place by windows (span),
// and finally copied out in order.
type spill struct {
	f    *os.File // nil: in memory, in buf
	name string   // the temporary file's name while it still has one
	buf  []byte   // in memory: all the bytes; on file: bytes [size-len(buf), size) not yet written
	size int64    // bytes in all

	// On file, span's window: bytes [wOff, wOff+len(win)) read for update.
	win   []byte
	wOff  int64
	dirty bool
}

// newSpill returns an empty spill: in memory when dir is "", else in a
// temporary file in dir, unlinked at once where the system allows it (so
// that nothing is left behind even if the process is killed), otherwise
// on release.
func newSpill(dir, what string) (*spill, error) {
	if dir == "" {
		return &spill{}, nil
	}
	f, err := os.CreateTemp(dir, ".ddx-"+what+"-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("temporary file for the %s: %w", what, err)
	}
	s := &spill{f: f, name: f.Name(), buf: make([]byte, 0, spillBuf)}
	if os.Remove(s.name) == nil {
		s.name = ""
	}
	return s, nil
}

// write appends p.
func (s *spill) write(p []byte) error {
	if s.f != nil && len(s.buf)+len(p) > cap(s.buf) {
		if err := s.flush(); err != nil {
			return err
		}
		if len(p) > cap(s.buf) {
			_, err := s.f.WriteAt(p, s.size)
			s.size += int64(len(p))
			return err
		}
	}
	s.buf = append(s.buf, p...)
	s.size += int64(len(p))
	return nil
}

// flush writes the buffered bytes to the file.
func (s *spill) flush() error {
	if s.f == nil || len(s.buf) == 0 {
		return nil
	}
	_, err := s.f.WriteAt(s.buf, s.size-int64(len(s.buf)))
	s.buf = s.buf[:0]
	return err
}

// writeBack writes the window back if it was handed out.
func (s *spill) writeBack() error {
	if !s.dirty {
		return nil
	}
	s.dirty = false
	_, err := s.f.WriteAt(s.win, s.wOff)
	return err
}

// span returns bytes [off, off+n) for reading and updating in place; the
// slice is valid until the next call of a spill method. On file it is a
// window of at least spillBuf bytes from off, so that updates of nearby
// bytes (the unaries of neighbouring variables) share a read and a write;
// after a jump, a page-aligned window of at least spillPage bytes.
func (s *spill) span(off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off+n > s.size {
		return nil, fmt.Errorf("spill: bytes %d..%d of %d", off, off+n, s.size)
	}
	if s.f == nil {
		return s.buf[off : off+n : off+n], nil
	}
	if off >= s.wOff && off+n <= s.wOff+int64(len(s.win)) {
		s.dirty = true
		return s.win[off-s.wOff : off-s.wOff+n], nil
	}
	if err := s.writeBack(); err != nil {
		return nil, err
	}
	if err := s.flush(); err != nil {
		return nil, err
	}
	start, l := off, max(n, spillBuf)
	if len(s.win) > 0 && !(off >= s.wOff && off < s.wOff+int64(len(s.win))+spillBuf) {
		// A jump, not the next stretch (factors that are not in the order
		// of their variables): a small aligned window, so that an update
		// costs a page read and written, not a buffer (a shuffled 10^6
		// grid's unary folds took 40 s with 256 KiB windows).
		start = off &^ (spillPage - 1)
		l = max(off+n-start, spillPage)
	}
	l = min(l, s.size-start)
	if int64(cap(s.win)) < l {
		s.win = make([]byte, l)
	}
	s.win, s.wOff = s.win[:l], start
	if _, err := s.f.ReadAt(s.win, start); err != nil {
		s.win = s.win[:0]
		return nil, err
	}
	s.dirty = true
	return s.win[off-start : off-start+n], nil
}

// copyTo calls w with all the bytes, in order, a buffer at a time.
func (s *spill) copyTo(w func([]byte)) error {
	if s.f == nil {
		w(s.buf)
		return nil
	}
	if err := s.writeBack(); err != nil {
		return err
	}
	if err := s.flush(); err != nil {
		return err
	}
	b := s.buf[:cap(s.buf)]
	for off := int64(0); off < s.size; {
		n, err := s.f.ReadAt(b[:min(int64(len(b)), s.size-off)], off)
		if n == 0 && err == io.EOF {
			return io.ErrUnexpectedEOF
		}
		if err != nil && err != io.EOF {
			return err
		}
		w(b[:n])
		off += int64(n)
	}
	return nil
}

// release closes and removes the temporary file, if any.
func (s *spill) release() {
	if s == nil || s.f == nil {
		return
	}
	s.f.Close()
	if s.name != "" {
		os.Remove(s.name)
	}
	s.f = nil
}
