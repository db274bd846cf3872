// Package cfn reads and writes toulbar2's cost function network format
// (.cfn, also gzip-compressed; modelfile adds .xz), the JSON-like format of
// https://toulbar2.github.io/toulbar2/formats/cfnformat.html, read as
// toulbar2's CFNStreamReader does (src/utils/tb2reader.cpp): quotes, colons
// and commas are separators, "{}" and "[]" are interchangeable, a line
// starting with '#' and anything after "//" are comments, the fields come
// in their fixed order and the tags ("problem", "name", "mustbe",
// "variables", "functions", "scope", "defaultcost", "costs") may be left
// out altogether (the concise form).
//
// A file is {problem: {name: NAME, mustbe: "<B" | ">B"}, variables: {...},
// functions: {...}}. "<" minimises the sum of the costs, ">" maximises it;
// B is the global bound (an assignment whose total reaches B, at or above
// it when minimising, at or below it when maximising, is infeasible) and
// its digits after the decimal point are the precision: every cost is
// truncated to that many decimals, as toulbar2's Decimal2Cost does. A
// variable is named or not, with a domain size (values "v0", "v1", ... or
// their indexes) or a list of value names. A function has a scope (names or
// indexes; empty for a constant), then either a full table "costs" in
// lexicographic order (the last variable fastest) or a "defaultcost" and a
// sparse list of tuples and costs; "inf" is a forbidden entry. A function
// may share the table of a function defined later ("costs": NAME).
//
// The model scores an assignment as minus its cost when minimising and as
// its value when maximising (ddrun maximises): one model.Dense factor per
// function over one or more variables, constants in Model.Constant.
// Header.Cost turns a score back into the file's objective at its
// precision. The bound is kept the way toulbar2 applies it before search:
// an entry is forbidden (-Inf) when no assignment using it can stay within
// B, that is when the entry plus the best entry of every other function
// already reaches B. An assignment whose total reaches B although each of
// its entries passes that test keeps its finite score (the model cannot say
// that per table); Write chooses B beyond every finite total.
//
// Not supported, each refused with a one-line "FILE:LINE: ..." error:
// global and arithmetic cost functions ("not supported: TYPE (global cost
// function)"), interval variables (negative domain sizes), and tables whose
// full size exceeds ReadOptions.MaxEntries.
//
// The reader streams: it keeps one token at a time and the tables it has
// built; MaxEntries bounds the total table entries and, on its own, the
// total domain size, both checked before memory is set aside, and a sparse
// table may list each tuple once, so the input's length is bounded by the
// limit. Context stops it between reads.
//
// It must not know about solvers, the command line or other file formats.
package cfn
