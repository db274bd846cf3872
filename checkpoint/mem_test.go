package checkpoint

import (
	"context"
	"errors"
	"slices"
	"testing"
)

func TestMemDamage(t *testing.T) {
	ctx := context.Background()
	full, empty := randomBytes(1, 100), []byte{}
	cases := []struct {
		name   string
		data   []byte
		damage func(s *Mem, name string) bool
		want   []byte // after the damage; nil: gone
	}{
		{"corrupt", full, (*Mem).Corrupt, append([]byte{full[0] ^ 0xff}, full[1:]...)},
		{"corrupt empty", empty, (*Mem).Corrupt, []byte{0}},
		{"drop", full, (*Mem).Drop, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewMem()
			name := objectName(tc.data)
			if tc.damage(s, name) {
				t.Fatal("damage to a missing object reported done")
			}
			mustPut(t, s, tc.data)
			if !tc.damage(s, name) {
				t.Fatal("damage to a stored object reported not done")
			}
			got, err := s.Get(ctx, name)
			switch {
			case tc.want == nil && !errors.Is(err, ErrNotFound):
				t.Fatalf("get: %v, want ErrNotFound", err)
			case tc.want != nil && (err != nil || !slices.Equal(got, tc.want)):
				t.Fatalf("get: %v, %v, want %v", got, err, tc.want)
			}
		})
	}
}
