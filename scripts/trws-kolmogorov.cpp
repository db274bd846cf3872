// trws-kolmogorov: runs Kolmogorov's TRW-S (MRFEnergy v1.3, TypeGeneral)
// on a pairwise UAI MARKOV file for a fixed number of iterations and prints
// one line: iterations, CPU and wall milliseconds per iteration
// (Minimize_TRW_S alone, not reading or building), the bound and the labelling's score, both in
// ddrun's convention (maximised log-potentials: bound = -lower bound on the
// energy E = -sum log potential).
//
// Part of ddrun's benchmark (scripts/bench-trws.sh), which builds it
// against a copy of Kolmogorov's code kept outside the repository:
//
//	g++ -O2 -I$TRWS scripts/trws-kolmogorov.cpp $TRWS/MRFEnergy.cpp \
//	    $TRWS/minimize.cpp $TRWS/ordering.cpp $TRWS/treeProbabilities.cpp
//
// Usage: trws-kolmogorov FILE.uai ITERATIONS
// Every factor must be over one or two variables; all edges are GENERAL
// (dense) tables, as issue 17 compares. A zero potential becomes the
// energy 1e20 (TypeGeneral has no infinity).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <string>
#include <vector>

#include "MRFEnergy.h"

typedef MRFEnergy<TypeGeneral> MRF;

static void die(const char* what, const char* file) {
	fprintf(stderr, "trws-kolmogorov: %s: %s\n", file, what);
	exit(1);
}

static double energy(double p) { return p > 0 ? -log(p) : 1e20; }

int main(int argc, char** argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: trws-kolmogorov FILE.uai ITERATIONS\n");
		return 2;
	}
	const char* file = argv[1];
	int iters = atoi(argv[2]);
	if (iters < 1) die("ITERATIONS must be a positive integer", file);
	FILE* f = fopen(file, "r");
	if (!f) die("cannot open", file);
	char kind[32];
	int n;
	if (fscanf(f, "%31s %d", kind, &n) != 2 || strcmp(kind, "MARKOV") != 0 || n < 1) die("not a UAI MARKOV file", file);
	std::vector<int> card(n);
	for (int i = 0; i < n; i++)
		if (fscanf(f, "%d", &card[i]) != 1 || card[i] < 1) die("bad cardinality", file);
	int nf;
	if (fscanf(f, "%d", &nf) != 1 || nf < 0) die("bad factor count", file);
	std::vector<std::vector<int> > scope(nf);
	for (int a = 0; a < nf; a++) {
		int k;
		if (fscanf(f, "%d", &k) != 1 || k < 1 || k > 2) die("a factor is not over one or two variables", file);
		scope[a].resize(k);
		for (int j = 0; j < k; j++)
			if (fscanf(f, "%d", &scope[a][j]) != 1 || scope[a][j] < 0 || scope[a][j] >= n) die("bad scope", file);
	}
	std::vector<double> unary;
	std::vector<int> uoff(n + 1, 0);
	for (int i = 0; i < n; i++) uoff[i + 1] = uoff[i] + card[i];
	unary.assign(uoff[n], 0);
	int maxK = 1;
	for (int i = 0; i < n; i++) maxK = card[i] > maxK ? card[i] : maxK;
	MRF* mrf = new MRF(TypeGeneral::GlobalSize());
	std::vector<MRF::NodeId> nodes(n);
	// Tables: unaries first (they must be known when nodes are added),
	// pairwise tables kept in factor order.
	std::vector<std::vector<double> > tables(nf);
	for (int a = 0; a < nf; a++) {
		int size;
		if (fscanf(f, "%d", &size) != 1) die("bad table size", file);
		int want = scope[a].size() == 1 ? card[scope[a][0]] : card[scope[a][0]] * card[scope[a][1]];
		if (size != want) die("table size does not match its scope", file);
		std::vector<double> t(size);
		for (int j = 0; j < size; j++)
			if (fscanf(f, "%lf", &t[j]) != 1) die("bad table entry", file);
		if (scope[a].size() == 1) {
			for (int j = 0; j < size; j++) unary[uoff[scope[a][0]] + j] += energy(t[j]);
		} else {
			tables[a].swap(t);
		}
	}
	fclose(f);
	for (int i = 0; i < n; i++)
		nodes[i] = mrf->AddNode(TypeGeneral::LocalSize(card[i]), TypeGeneral::NodeData(&unary[uoff[i]]));
	std::vector<double> V(maxK * maxK);
	for (int a = 0; a < nf; a++) {
		if (scope[a].size() != 2) continue;
		int u = scope[a][0], v = scope[a][1], ku = card[u], kv = card[v];
		// TypeGeneral: V(ki, kj) = data[ki + kj*Ki]; UAI: row-major, first
		// variable slowest.
		for (int i = 0; i < ku; i++)
			for (int j = 0; j < kv; j++) V[i + j * ku] = energy(tables[a][i * kv + j]);
		std::vector<double>().swap(tables[a]);
		mrf->AddEdge(nodes[u], nodes[v], TypeGeneral::EdgeData(TypeGeneral::GENERAL, &V[0]));
	}
	std::vector<std::vector<double> >().swap(tables);
	MRF::Options opt;
	opt.m_iterMax = iters;
	opt.m_printMinIter = iters + 1; // the labelling once, at the end
	opt.m_eps = -1;
	double lower = 0, en = 0;
	mrf->ZeroMessages(); // completes the construction, outside the timing
	struct timespec w0, w1, c0, c1;
	clock_gettime(CLOCK_MONOTONIC, &w0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	mrf->Minimize_TRW_S(opt, lower, en);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	clock_gettime(CLOCK_MONOTONIC, &w1);
	double wall = (w1.tv_sec - w0.tv_sec) * 1e3 + (w1.tv_nsec - w0.tv_nsec) / 1e6;
	double cpu = (c1.tv_sec - c0.tv_sec) * 1e3 + (c1.tv_nsec - c0.tv_nsec) / 1e6;
	printf("iterations %d cpu_ms_per_iteration %.3f wall_ms_per_iteration %.3f bound %.6f primal %.6f\n", iters, cpu / iters, wall / iters, -lower, -en);
	delete mrf;
	return 0;
}
