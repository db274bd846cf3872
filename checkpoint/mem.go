package checkpoint

import (
	"context"
	"fmt"
	"sort"
	"sync"
)

// Mem is an in-memory Store for tests. It copies data in and out, so
// callers may reuse their buffers. Corrupt and Drop damage stored objects
// to produce torn checkpoints.
type Mem struct {
	mu   sync.RWMutex
	objs map[string][]byte
}

// NewMem returns an empty in-memory store.
func NewMem() *Mem {
	return &Mem{objs: map[string][]byte{}}
}

// Put implements Store.
func (s *Mem) Put(ctx context.Context, name string, data []byte) error {
	if err := checkOp(ctx, "put", name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objs[name]; !ok {
		s.objs[name] = append([]byte{}, data...)
	}
	return nil
}

// Get implements Store.
func (s *Mem) Get(ctx context.Context, name string) ([]byte, error) {
	if err := checkOp(ctx, "get", name); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	b, ok := s.objs[name]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", name, ErrNotFound)
	}
	return append([]byte{}, b...), nil
}

// Delete implements Store.
func (s *Mem) Delete(ctx context.Context, name string) error {
	if err := checkOp(ctx, "delete", name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objs, name)
	return nil
}

// List implements Store; the names come sorted.
func (s *Mem) List(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, 0, len(s.objs))
	for name := range s.objs {
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}

// Corrupt flips the bits of the object's first byte (an empty object gets
// one extra byte) and reports whether the object existed. Its name no
// longer matches its content, as after a bad disk or a torn write.
func (s *Mem) Corrupt(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.objs[name]
	if !ok {
		return false
	}
	if len(b) == 0 {
		s.objs[name] = []byte{0}
	} else {
		b[0] ^= 0xff
	}
	return true
}

// Drop removes the object behind the writer's back, as a lost write
// would, and reports whether it existed.
func (s *Mem) Drop(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.objs[name]
	delete(s.objs, name)
	return ok
}
