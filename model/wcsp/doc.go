// Package wcsp reads and writes toulbar2's legacy WCSP format (.wcsp, also
// gzip-compressed; modelfile adds .xz), the cost function network format of
// the toulbar2 solver (https://toulbar2.github.io/toulbar2/formats/wcspformat.html,
// read as toulbar2's WCSP::read_legacy in src/utils/tb2reader.cpp does).
//
// A file is a header "name nvars maxdomain nfuncs top", the nvars domain
// sizes, then nfuncs cost functions, each "arity var... defaultcost ntuples"
// followed by ntuples lines "val... cost": the function costs defaultcost
// on every tuple not listed. Arity 0 is a constant ("0 defaultcost ntuples",
// with one cost line when ntuples is 1). A negative arity marks a table that
// later functions may share; a negative ntuples -k reuses the k-th shared
// table (counted from 1), as toulbar2 does: for arity 1 to 3 the whole
// table, for larger arities its tuple list under the new default cost.
// Costs are integers; toulbar2 minimises their sum.
//
// ddrun maximises, so the model scores an assignment as minus the sum of its
// costs: every function over one or more variables becomes a model.Dense
// factor of negated costs, arity-0 functions go to Model.Constant, and
// Cost turns a score back into the file's cost. A cost >= top is forbidden
// (a -Inf entry): toulbar2 cuts every cost at its upper bound top the same
// way (CUT(cost, ub) in read_legacy). toulbar2 also rejects an assignment
// whose total cost reaches top while every single cost stays below it; the
// model cannot say that per table, so such an assignment keeps its finite
// score here (Write avoids the case by choosing top above any finite total).
//
// Not supported, each refused with a one-line "FILE:LINE: ..." error: global
// cost functions (a default cost of -1 followed by a keyword, or a keyword
// after a negative default cost of a binary function: "not supported:
// KEYWORD (global cost function)"), interval variables (negative domain
// sizes), and tables whose full size exceeds ReadOptions.MaxEntries (toulbar2
// keeps large n-ary functions as tuple lists; ddrun's factors are dense).
//
// The reader streams: it keeps one token at a time and the tables it has
// built; MaxEntries bounds the total table entries and, on its own, the
// total domain size, both checked before memory is set aside, and a tuple
// count larger than its table is an error, so the input's length is bounded
// by the limit. Context stops it between reads.
//
// It must not know about solvers, the command line or other file formats.
package wcsp
