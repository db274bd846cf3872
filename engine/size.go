package engine

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize reads a byte count, the text of elim-memory: a number with an
// optional unit (B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB; all binary
// multiples, case-insensitive), e.g. 1GiB, 512M, 1.5g or 0.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	shift := 0
	switch unit {
	case "", "b":
	case "k", "kb", "kib":
		shift = 10
	case "m", "mb", "mib":
		shift = 20
	case "g", "gb", "gib":
		shift = 30
	case "t", "tb", "tib":
		shift = 40
	default:
		return 0, fmt.Errorf("size %q: unknown unit %q (want B, KiB, MiB, GiB or TiB)", s, t[i:])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("size %q: not a number of bytes with an optional unit, e.g. 1GiB", s)
	}
	v *= float64(int64(1) << shift)
	if v >= 1<<62 {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return int64(v), nil
}

// FormatSize writes a byte count the way ParseSize reads it.
func FormatSize(v int64) string {
	for _, u := range []struct {
		shift int
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if v != 0 && v%(int64(1)<<u.shift) == 0 {
			return strconv.FormatInt(v>>u.shift, 10) + u.name
		}
	}
	return strconv.FormatInt(v, 10)
}
