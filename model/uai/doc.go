// Package uai reads and writes the UAI file formats: the model format of the
// UAI 2008 evaluation (used by the UAI 2010, 2012, 2014 and later inference
// competitions), its .LG variant, evidence files, and MPE solution files.
//
// The package owns these formats and nothing else: it converts between files
// and model.Model / model.Evidence values. It must not know about solvers,
// slaves, transports or the command line; folding arity-1 factors into
// unaries, applying evidence and other transformations belong to other
// layers.
//
// # Model files
//
// A model file is a sequence of tokens separated by any blanks (spaces,
// tabs, line breaks, in any amount; a token may fall on any line):
//
//	MARKOV | BAYES          network type (letter case ignored)
//	n                       number of variables
//	c_0 ... c_{n-1}         cardinalities, each >= 1
//	F                       number of factors
//	k v_1 ... v_k           F scopes: arity, then distinct variables in [0,n)
//	s e_0 ... e_{s-1}       F tables, in scope order: entry count, entries
//
// Table entries enumerate the assignments of the scope with the last
// variable changing fastest, so s must equal the product of the scope's
// cardinalities. For BAYES the table of a factor is the conditional
// probability table of the last scope variable given the others, in the same
// layout; it is read exactly like a MARKOV table (normalisation is not
// checked). A line whose first non-blank character is 'c' is a comment (an
// extension from UAI 2016). Input may be gzip-compressed; it is recognised
// by its magic bytes whatever its name. Nothing may follow the last table.
//
// Entries are potentials: non-negative numbers whose natural logarithm is
// the factor's log-potential (scores are maximised); a zero entry is a hard
// constraint (log-potential -Inf). Negative, NaN and infinite potentials are
// rejected. Potentials outside float64's accurate range (such as 1e-400 or
// 1e400) keep their exact logarithm, for decimal exponents up to ±10000.
// Numbers are decimal (hex floats and digit separators are rejected); inf,
// infinity and nan may be spelled out, in any case, to be reported as such.
//
// Every factor, whatever its arity, becomes a model.Dense factor whose
// scope and table are sub-slices of two shared arenas (one []int, one
// []float64), except that a table over two variables of equal cardinality
// L >= 2 that is exactly (bit for bit, after taking logarithms) c + w [x =
// y], c - w min(|x-y|, t) or c - w min((x-y)^2, t) becomes a model.Potts,
// model.TruncLinear or model.TruncQuad factor and c goes to the model's
// constant (model.StructurePairs; ReadOptions.KeepDense turns this off, and
// Stream and StreamScopes never do it). Each factor's score reproduces its
// table entry exactly; the total is summed in another order. Arity-1 factors stay factors, and the model's unaries are all
// zero. A factor of arity 0 (one entry) is also kept as a Dense factor with
// an empty scope and a 1-entry table, rather than added to the constant, so
// that factor indices match the file and a zero entry (an infeasible model)
// stays representable.
//
// Sizes declared in the file are checked before memory is set aside for
// them, so that a few bytes of header cannot claim gigabytes: every table
// must fit model.MaxTableEntries (model.TableSize), the total number of
// table entries and, separately, the total number of variable states must
// fit ReadOptions.MaxEntries (default model.DefaultMaxEntries, 2^28), the
// variables that appear in no factor may have at most 2^20 states in all
// (or 64 per such variable, model.FreeStatesOK), and pre-allocation is
// capped by what the rest of the input could hold (slices grow as data
// actually arrives when the input's size is unknown, as with gzip).
//
// # The LG variant
//
// In .LG files every table entry is replaced by its logarithm. The published
// format description (toulbar2's "UAI and LG formats" page) only says
// "logarithm"; the base is taken from toulbar2's reader of both formats
// (WCSP::read_uai2008 in src/utils/tb2reader.cpp), which turns an .LG entry
// p into the cost LogProb2Cost(p) = -p * scale and a .uai potential p into
// Prob2Cost(p) = -ln(p) * scale with the same scale (src/core/tb2wcsp.cpp),
// and adds p, or ln(p), to the same log-normalising constant: LG entries are
// natural logarithms. (The base-10 logarithms of the UAI competitions are
// those of the partition function in PR result files, not of model tables.)
// Read and ReadFile therefore read names ending in .LG
// (or .LG.gz) with Ln; ReadWith and ReadFileWith take the encoding from
// ReadOptions (Potentials, Log10 or Ln) and ignore the name. In log
// encodings -Inf (spelled -inf or -Infinity) is a hard constraint, NaN and
// +Inf are rejected.
//
// # Errors
//
// Every parse error is a *ParseError whose message is one line
// "NAME:LINE: problem", naming the offending token where there is one, for
// instance:
//
//	grid.uai:7: factor 3 scope: variable 12 out of range [0,10)
//	x.uai:9: table of factor 0 has 6 entries, scope needs 4
//
// # Writing
//
// Write produces a MARKOV file of potentials printed with the shortest
// representation that parses back to the same float64, so that reading
// gives back every log-potential to within about 1e-16 (absolute). The
// model's factors come first, in order, so factor a of the model is factor
// a of the file; non-dense kinds (Pair, Potts, logic kinds) are expanded to
// full tables, after checking the table fits model.MaxTableEntries. Then
// comes one arity-1 factor per variable with non-zero unaries, then the
// constant as 0-arity factors (none when it is zero). Potentials must stay
// within float64: a table with a log-potential beyond ±700 is shifted by its
// maximum (the shift goes to the constant) and, if its range is still
// wider than 700, split into several identical-scope tables that share the
// log-potential; the constant is likewise split into parts of at most 700.
// Scores are preserved; the file's factor count can then exceed the model's.
// WriteWith can write log encodings instead, and WriteFile chooses gzip for
// names ending in .gz and natural logarithms for .LG.
//
// # Evidence files
//
// Two layouts exist: UAI 2014 `k v_1 s_1 ... v_k s_k` and UAI 2010 `1 k v_1
// s_1 ...` (a number of samples, 1, first). A file of 2k+1 tokens is the 2014
// layout; an even number of tokens with a leading 1 is the 2010 layout; an
// empty file or `0` is no evidence. Variables and states are checked
// against the model, and a variable observed twice with different states is
// an error.
//
// # MPE solution files
//
// WriteMPE writes the line `MPE` and then `N x_0 ... x_{N-1}`. ReadMPE
// accepts that, an optional header word (MPE or MAP), the older layout with
// a number of solutions `1` before the assignment, and several solutions
// separated by -BEGIN- (the last one counts). MPEWriter writes the same
// text from pieces of an assignment that come in any order (a sharded
// run's workers each hold a part of it), holding none of it in memory: a
// scratch file of 4 bytes per variable, then the text, renamed into place.
package uai
