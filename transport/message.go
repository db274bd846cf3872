package transport

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Kind says which body a message carries. The protocol built on this
// package numbers its bodies from 1 to 255; 0 is never on the wire.
type Kind uint8

func (k Kind) String() string { return "kind" + strconv.Itoa(int(k)) }

// Body is a message body that knows its kind. Encode fills Header.Kind from
// it when the header leaves Kind zero.
type Body interface {
	Kind() Kind
}

// Header is what every message carries ahead of its body, so that receivers
// can drop stale and duplicated messages without decoding the body.
type Header struct {
	Job   string // job id, a ValidName; empty for messages outside any job
	Epoch uint64 // the job's epoch: a Filter drops messages of earlier ones
	Iter  uint64 // iteration the message belongs to; a Filter drops earlier ones
	Kind  Kind   // body kind, never zero on the wire
	From  string // sender name, a ValidName; may be empty
	Seq   uint64 // per-sender sequence number; 0 means unsequenced (see Sequence)
}

// Raw is a message body still in msgpack form, as returned by Decode. It
// aliases the decoded buffer.
type Raw []byte

// Wire format, version 1:
//
//	"DDM" 0x01                 magic and version (4 bytes)
//	[job, epoch, iter, kind, from, seq]   msgpack array of 6
//	body                       exactly one msgpack value, nested <= 32 deep
//
// Chunk frames (chunk.go) start with "DDC" 0x01 instead.
const (
	// Version is the wire format version this package writes and reads.
	Version = 1
	// MaxNameLen bounds Header.Job and Header.From.
	MaxNameLen = 128
)

var msgMagic = [4]byte{'D', 'D', 'M', Version}

// ErrMalformed is wrapped by every decoding error caused by the input.
var ErrMalformed = errors.New("malformed message")

func malformed(format string, args ...any) error {
	return fmt.Errorf("transport: %w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// maxPooled is the largest encode buffer kept for reuse.
const maxPooled = 64 << 20

var encBufPool = sync.Pool{New: func() any { return new(appendBuf) }}

// Encode returns the wire form of a message: magic and version, the header,
// then body encoded by msgpack (struct fields by their msgpack tags; Floats
// and Int32s as raw little-endian bins). A nil body encodes as msgpack nil.
// If body is a Body and h.Kind is zero, the kind comes from the body; a
// non-zero h.Kind that disagrees with it is an error.
func Encode(h Header, body any) ([]byte, error) {
	ab := encBufPool.Get().(*appendBuf)
	ab.b = ab.b[:0]
	err := encodeTo(ab, h, body)
	var out []byte
	if err == nil {
		out = bytes.Clone(ab.b)
	}
	if cap(ab.b) <= maxPooled {
		encBufPool.Put(ab)
	}
	return out, err
}

// AppendEncode appends the wire form of a message to dst and returns the
// extended slice; with a reused dst it encodes without allocating.
func AppendEncode(dst []byte, h Header, body any) ([]byte, error) {
	ab := appendBuf{b: dst}
	if err := encodeTo(&ab, h, body); err != nil {
		return dst, err
	}
	return ab.b, nil
}

func encodeTo(ab *appendBuf, h Header, body any) error {
	if b, ok := body.(Body); ok {
		switch k := b.Kind(); {
		case h.Kind == 0:
			h.Kind = k
		case h.Kind != k:
			return fmt.Errorf("transport: header has %v but body %T is %v", h.Kind, body, k)
		}
	}
	if err := h.validate(); err != nil {
		return err
	}
	ab.b = append(ab.b, msgMagic[:]...)
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(ab)
	enc.UseCompactInts(true)
	err := errors.Join(
		enc.EncodeArrayLen(6),
		enc.EncodeString(h.Job),
		enc.EncodeUint(h.Epoch),
		enc.EncodeUint(h.Iter),
		enc.EncodeUint(uint64(h.Kind)),
		enc.EncodeString(h.From),
		enc.EncodeUint(h.Seq),
	)
	if err != nil {
		return fmt.Errorf("transport: encoding header: %w", err)
	}
	if err := enc.Encode(body); err != nil {
		return fmt.Errorf("transport: encoding %v body %T: %w", h.Kind, body, err)
	}
	return nil
}

func (h Header) validate() error {
	if h.Kind == 0 {
		return errors.New("transport: header has no kind")
	}
	if h.Job != "" {
		if err := ValidName(h.Job); err != nil {
			return fmt.Errorf("transport: job id: %w", err)
		}
	}
	if h.From != "" {
		if err := ValidName(h.From); err != nil {
			return fmt.Errorf("transport: sender name: %w", err)
		}
	}
	return nil
}

// Decode checks the magic and version, decodes the header and checks that
// what follows is exactly one well-formed msgpack value, which it returns
// undecoded (aliasing data) for DecodeBody. Every error wraps ErrMalformed;
// no input makes it panic.
func Decode(data []byte) (Header, Raw, error) {
	var h Header
	if len(data) < len(msgMagic) || !bytes.Equal(data[:3], msgMagic[:3]) {
		if IsChunk(data) {
			return h, nil, malformed("a chunk frame, not a message")
		}
		return h, nil, malformed("no ddrun magic")
	}
	if data[3] != Version {
		return h, nil, malformed("wire version %d, want %d", data[3], Version)
	}
	r := bytes.NewReader(data[len(msgMagic):])
	dec := msgpack.GetDecoder()
	dec.Reset(r)
	err := decodeHeader(dec, &h)
	msgpack.PutDecoder(dec)
	if err != nil {
		return Header{}, nil, malformed("header: %v", err)
	}
	raw := data[len(data)-r.Len():]
	if err := checkMsgpack(raw); err != nil {
		return Header{}, nil, malformed("%v body: %v", h.Kind, err)
	}
	return h, Raw(raw), nil
}

func decodeHeader(dec *msgpack.Decoder, h *Header) error {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n != 6 {
		return fmt.Errorf("array of %d, want 6", n)
	}
	if h.Job, err = decodeName(dec); err != nil {
		return fmt.Errorf("job: %w", err)
	}
	if h.Epoch, err = decodeUint(dec); err != nil {
		return fmt.Errorf("epoch: %w", err)
	}
	if h.Iter, err = decodeUint(dec); err != nil {
		return fmt.Errorf("iter: %w", err)
	}
	k, err := decodeUint(dec)
	if err != nil {
		return fmt.Errorf("kind: %w", err)
	}
	if k == 0 || k > 255 {
		return fmt.Errorf("kind %d out of range", k)
	}
	h.Kind = Kind(k)
	if h.From, err = decodeName(dec); err != nil {
		return fmt.Errorf("from: %w", err)
	}
	if h.Seq, err = decodeUint(dec); err != nil {
		return fmt.Errorf("seq: %w", err)
	}
	return nil
}

// decodeUint accepts only msgpack's unsigned encodings.
func decodeUint(dec *msgpack.Decoder) (uint64, error) {
	c, err := dec.PeekCode()
	if err != nil {
		return 0, err
	}
	switch {
	case c <= msgpcode.PosFixedNumHigh:
	case c == msgpcode.Uint8, c == msgpcode.Uint16, c == msgpcode.Uint32, c == msgpcode.Uint64:
	default:
		return 0, fmt.Errorf("want unsigned integer, got msgpack code 0x%02x", c)
	}
	return dec.DecodeUint64()
}

// decodeName accepts a str of at most MaxNameLen bytes that is empty or a
// ValidName.
func decodeName(dec *msgpack.Decoder) (string, error) {
	c, err := dec.PeekCode()
	if err != nil {
		return "", err
	}
	if !msgpcode.IsFixedString(c) && c != msgpcode.Str8 {
		return "", fmt.Errorf("want a short str, got msgpack code 0x%02x", c)
	}
	s, err := dec.DecodeString()
	if err != nil {
		return "", err
	}
	if s != "" {
		if err := ValidName(s); err != nil {
			return "", err
		}
	}
	return s, nil
}

// DecodeBody decodes a body returned by Decode into v (a pointer), as
// msgpack.Unmarshal would, after checking that raw is exactly one
// well-formed msgpack value. Unknown struct fields are skipped, so bodies
// can grow fields without a version change.
func DecodeBody(raw Raw, v any) error {
	if err := checkMsgpack(raw); err != nil {
		return malformed("body: %v", err)
	}
	r := bytes.NewReader(raw)
	dec := msgpack.GetDecoder()
	dec.Reset(r)
	err := dec.Decode(v)
	msgpack.PutDecoder(dec)
	if err != nil {
		return fmt.Errorf("transport: %w: decoding body into %T: %v", ErrMalformed, v, err)
	}
	if r.Len() != 0 {
		return malformed("%d bytes left after decoding body into %T", r.Len(), v)
	}
	return nil
}

// DecodeInto decodes a whole message into h and its body into v, checking
// that the header's kind is v's when v is a Body.
func DecodeInto(data []byte, v any) (Header, error) {
	h, raw, err := Decode(data)
	if err != nil {
		return h, err
	}
	if b, ok := v.(Body); ok && b.Kind() != h.Kind {
		return h, fmt.Errorf("transport: got a %v message, want %v", h.Kind, b.Kind())
	}
	return h, DecodeBody(raw, v)
}
