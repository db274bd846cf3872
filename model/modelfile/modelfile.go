// Package modelfile picks a model file format by file name and reads or
// writes it: UAI (.uai, .uai.gz, .LG) through package uai, the native format
// (.json, .msgpack, .mp, optionally .gz) through package native, the indexed
// format (.ddx) through package indexed, toulbar2's WCSP format (.wcsp,
// .wcsp.gz) through package wcsp, toulbar2's CFN format (.cfn, .cfn.gz)
// through package cfn; any but the indexed format may also be
// xz-compressed (.uai.xz, .LG.xz, .json.xz: read only, decompressed as it
// is read, bounded by the entry limit). It owns nothing but that choice,
// reading a model or evidence file once while its bytes go to a hash
// (LoadTee, LoadEvidenceTee), and converting between the formats (Convert).
package modelfile

import (
	"context"
	"fmt"
	"strings"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/cfn"
	"github.com/ddrun/ddrun/model/indexed"
	"github.com/ddrun/ddrun/model/native"
	"github.com/ddrun/ddrun/model/uai"
	"github.com/ddrun/ddrun/model/wcsp"
)

// Format is a model file format family.
type Format int

// Format families.
const (
	Unknown Format = iota
	UAI
	Native
	Indexed
	// WCSP is toulbar2's legacy WCSP format (package wcsp): costs to
	// minimise, which the model holds negated (wcsp.Cost turns a score
	// back into the file's cost).
	WCSP
	// CFN is toulbar2's cost function network format (package cfn):
	// costs to minimise or maximise at a declared precision (the file's
	// cfn.Header.Cost turns a score back into its objective).
	CFN
)

// formats lists the extensions for errors.
const formats = ".uai, .uai.gz, .LG, .json, .msgpack, .mp, .wcsp, .cfn (optionally .gz or .xz for reading) or .ddx"

// FormatOf returns the format family of a file name.
func FormatOf(path string) Format {
	if strings.HasSuffix(strings.ToLower(path), indexed.Ext) {
		return Indexed
	}
	p := strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(path), ".xz"), ".gz")
	switch {
	case strings.HasSuffix(p, ".uai"), strings.HasSuffix(p, ".lg"):
		return UAI
	case strings.HasSuffix(p, ".json"), strings.HasSuffix(p, ".msgpack"), strings.HasSuffix(p, ".mp"):
		return Native
	case strings.HasSuffix(p, ".wcsp"):
		return WCSP
	case strings.HasSuffix(p, ".cfn"):
		return CFN
	}
	return Unknown
}

// Load reads a model, choosing the format by the file name.
func Load(path string) (*model.Model, error) {
	if isXZ(path) {
		return LoadWith(context.Background(), path, Options{})
	}
	switch FormatOf(path) {
	case UAI:
		return uai.ReadFile(path)
	case Native:
		return native.ReadFile(path)
	case Indexed:
		return indexed.ReadFile(path, indexed.ReadOptions{})
	case WCSP:
		return wcsp.ReadFile(path, wcsp.ReadOptions{})
	case CFN:
		m, _, err := cfn.ReadFile(path, cfn.ReadOptions{})
		return m, err
	}
	return nil, fmt.Errorf("%s: unknown model format (want %s)", path, formats)
}

// Save writes a model, choosing the format by the file name.
func Save(path string, m *model.Model) error {
	if isXZ(path) {
		return fmt.Errorf("%s: writing xz is not supported (write .gz or a plain file)", path)
	}
	switch FormatOf(path) {
	case UAI:
		return uai.WriteFile(path, m)
	case Native:
		return native.WriteFile(path, m)
	case Indexed:
		return indexed.WriteFile(path, m)
	case WCSP:
		return wcsp.WriteFile(path, m)
	case CFN:
		return cfn.WriteFile(path, m)
	}
	return fmt.Errorf("%s: unknown model format (want %s)", path, formats)
}
