// Package modelfile picks a model file format by file name and reads or
// writes it: UAI (.uai, .uai.gz, .LG) through package uai, the native format
// (.json, .msgpack, .mp, optionally .gz) through package native. It owns
// nothing but that choice, and reading a model or evidence file once while
// its bytes go to a hash (LoadTee, LoadEvidenceTee).
package modelfile

import (
	"fmt"
	"strings"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/native"
	"github.com/ddrun/ddrun/model/uai"
)

// Format is a model file format family.
type Format int

// Format families.
const (
	Unknown Format = iota
	UAI
	Native
)

// FormatOf returns the format family of a file name.
func FormatOf(path string) Format {
	p := strings.ToLower(strings.TrimSuffix(strings.ToLower(path), ".gz"))
	switch {
	case strings.HasSuffix(p, ".uai"), strings.HasSuffix(p, ".lg"):
		return UAI
	case strings.HasSuffix(p, ".json"), strings.HasSuffix(p, ".msgpack"), strings.HasSuffix(p, ".mp"):
		return Native
	}
	return Unknown
}

// Load reads a model, choosing the format by the file name.
func Load(path string) (*model.Model, error) {
	switch FormatOf(path) {
	case UAI:
		return uai.ReadFile(path)
	case Native:
		return native.ReadFile(path)
	}
	return nil, fmt.Errorf("%s: unknown model format (want .uai, .uai.gz, .LG, .json, .msgpack or .mp)", path)
}

// Save writes a model, choosing the format by the file name.
func Save(path string, m *model.Model) error {
	switch FormatOf(path) {
	case UAI:
		return uai.WriteFile(path, m)
	case Native:
		return native.WriteFile(path, m)
	}
	return fmt.Errorf("%s: unknown model format (want .uai, .uai.gz, .json, .msgpack or .mp)", path)
}
