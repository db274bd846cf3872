package transport

import (
	"bytes"
	"testing"
)

// FuzzDecode: whatever arrives, Decode and DecodeBody return an error or a
// value, never panic; what Decode accepts re-encodes to a message that
// decodes to the same header.
func FuzzDecode(f *testing.F) {
	h := Header{Job: "j", Epoch: 1, Iter: 2, From: "w", Seq: 3}
	for _, body := range []Body{
		note{Name: "w", Threads: 4, Blob: []byte{1, 2}, IDs: Int32s{2, 3}},
		vectors{Eta: 0.5, Lambda: Floats{1, 2}, Mu: Floats{3}, X: Int32s{1, 0}, Stop: true},
		vectors{},
		empty{},
		custom{Note: "n", V: Floats{1}, M: map[string]int32{"k": 1}},
	} {
		data := mustEncode(f, h, body)
		f.Add(data)
		f.Add(data[:len(data)/2])
		f.Add(append(bytes.Clone(data), 0xc0))
	}
	f.Add([]byte{})
	f.Add([]byte("DDM\x01"))
	f.Add([]byte("DDM\x01\x96\xa1j\x01\x02\x03\xa1w\x04\x91\x91\x91\x91\x91\x91"))
	f.Add(rawMessage([]any{"j", 1, 2, 3, "w", 4}, []byte{0x81, 0xa6, 'l', 'a', 'm', 'b', 'd', 'a', 0xc6, 0xff, 0xff, 0xff, 0xf8}))
	f.Add(rawMessage([]any{"j", 1, 2, 3, "w", 4}, []byte{0x81, 0xa1, 'x', 0xc4, 0x03, 1, 2, 3}))
	f.Add(append([]byte("DDC\x01"), make([]byte, 50)...))

	f.Fuzz(func(t *testing.T, data []byte) {
		h, raw, err := Decode(data)
		if err != nil {
			return
		}
		for _, v := range []any{new(note), new(vectors), new(empty), new(custom), new(any)} {
			_ = DecodeBody(raw, v)
		}
		again, err := Encode(h, nil)
		if err != nil {
			t.Fatalf("decoded header %+v does not re-encode: %v", h, err)
		}
		h2, _, err := Decode(again)
		if err != nil || h2 != h {
			t.Fatalf("header %+v re-decodes as %+v, %v", h, h2, err)
		}
	})
}

// FuzzReassemble: arbitrary frames never panic a Reassembler, and what it
// completes is exactly the size its frames announced.
func FuzzReassemble(f *testing.F) {
	var frames [][]byte
	_ = SplitChunks(MsgID{1}, bytes.Repeat([]byte("abc"), 100), 100, func(fr []byte) error {
		frames = append(frames, bytes.Clone(fr))
		return nil
	})
	for _, fr := range frames {
		f.Add(fr, fr)
	}
	f.Add(frames[0], frames[0][:50])
	f.Add([]byte("DDC\x01"), []byte{})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		r := NewReassembler(ReassemblyOptions{MaxMessageBytes: 1 << 20, MaxPendingBytes: 4 << 20})
		for _, fr := range [][]byte{a, b, a} {
			msg, err := r.Add(fr)
			if err == nil && msg != nil {
				if h, _, _ := parseChunk(fr); uint64(len(msg)) != h.size {
					t.Fatalf("completed %d bytes, frame said %d", len(msg), h.size)
				}
			}
		}
	})
}
