package model_test

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/ddrun/ddrun/model"
)

// TestFactorSize pins the size of a Factor: grid models hold one per edge,
// and the 48 bytes the rare fields took inline were as much as a 4x4
// table's header and more.
func TestFactorSize(t *testing.T) {
	if s := unsafe.Sizeof(model.Factor{}); s != 80 {
		t.Fatalf("model.Factor is %d bytes, want 80", s)
	}
}

// TestFactorRareFields checks that the rare fields behave as plain fields:
// set and read back, copies independent, zero values equal to unset ones.
func TestFactorRareFields(t *testing.T) {
	var zero model.Factor
	if zero.NegatedInputs() != nil || zero.EmissionScores() != nil || zero.BudgetBound() != 0 || zero.IsNegated(0) {
		t.Fatal("a zero Factor has rare fields")
	}
	neg, em := []bool{false, true}, []float64{1, 2, 3}
	f := model.Factor{Kind: model.Budget, Vars: []int{0, 1}}.WithNegated(neg).WithBudget(1)
	if !reflect.DeepEqual(f.NegatedInputs(), neg) || f.BudgetBound() != 1 || f.EmissionScores() != nil {
		t.Fatalf("read back %v %v %v", f.NegatedInputs(), f.BudgetBound(), f.EmissionScores())
	}
	if f.IsNegated(0) || !f.IsNegated(1) {
		t.Fatal("IsNegated disagrees with the flags")
	}
	if &f.NegatedInputs()[0] != &neg[0] {
		t.Fatal("WithNegated copied the flags; it keeps them, as a field would")
	}

	// A copy shares the slices but not the fields: setting one on a copy
	// leaves the original as it was.
	g := f
	g.SetBudget(2)
	g.SetNegated(nil)
	g.SetEmission(em)
	if f.BudgetBound() != 1 || !reflect.DeepEqual(f.NegatedInputs(), neg) || f.EmissionScores() != nil {
		t.Fatalf("setting a copy changed the original: %v %v %v", f.NegatedInputs(), f.BudgetBound(), f.EmissionScores())
	}
	if g.BudgetBound() != 2 || g.NegatedInputs() != nil || !reflect.DeepEqual(g.EmissionScores(), em) {
		t.Fatalf("copy reads %v %v %v", g.NegatedInputs(), g.BudgetBound(), g.EmissionScores())
	}
	h := f.WithBudget(5)
	if f.BudgetBound() != 1 || h.BudgetBound() != 5 || !reflect.DeepEqual(h.NegatedInputs(), neg) {
		t.Fatal("WithBudget changed its receiver or lost the flags")
	}

	// Setting every rare field back to zero gives a Factor equal to one
	// that never had them, so DeepEqual compares fields, not history.
	g.SetBudget(0)
	g.SetEmission(nil)
	if want := (model.Factor{Kind: model.Budget, Vars: []int{0, 1}}); !reflect.DeepEqual(g, want) {
		t.Fatalf("%+v, want %+v", g, want)
	}
	empty := model.Factor{Kind: model.XOR}.WithNegated([]bool{})
	if reflect.DeepEqual(empty, model.Factor{Kind: model.XOR}) {
		t.Fatal("empty flags equal to none: a nil slice and an empty one were different fields")
	}
}
