// Package learn owns structural SVM training of factor-template models
// (Taskar et al. 2003; Tsochantaridis et al. 2004) and prediction with the
// trained weights: the data sets (sequence labelling with sparse token
// features, multilabel classification with sparse features), their files
// (CoNLL-style columns for sequences, LIBSVM's multilabel format), tagged
// text corpora (the Brown layout, CoNLL word/tag columns) turned into
// sequence data by a feature extractor whose dictionary travels in the
// weights file, a planted-model generator, the structural SVM primal
//
//	P(w) = 1/2 ||w||^2 + C sum_i max_y [<w, phi(x_i, y) - phi(x_i, ybar_i)> + Hamming(y, ybar_i)]
//
// (Yen et al. NIPS 2016, eqs. 1-3, the sum over examples not divided by n)
// with its loss-augmented oracles, and the training algorithms behind one
// seam (Trainer, Options, Result, the table Algorithms): GDMM with
// factorwise maximization oracles (Yen et al., Alg. 1-3, Sect. 3.2), which
// on multilabel data trains the LP-relaxed objective (eq. 5; PrimalLP, the
// LP solved exactly as a roof dual by one minimum cut).
//
// Decoding for prediction goes through the inference engine: the chain MAP
// of package slaves (column-generation Viterbi) for sequences, a
// model.Model with Pair factors solved by package exact for multilabel
// (brute force for few labels).
//
// It must not know about the command line, trace files or transports: the
// command (cmd/coordinator train, predict, gen) reads flags and writes
// traces from the progress reports.
package learn
