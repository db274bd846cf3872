package trws

import "github.com/ddrun/ddrun/model"

// Parallel TRW-S (Options.Threads > 1).
//
// TRW-S is sequential: a forward pass updates the nodes one after another
// in a fixed order, each reading the messages just sent by its earlier
// neighbours. Two nodes may nevertheless be updated at the same time when
// neither is a neighbour of the other and all they read is final, and the
// order can be chosen so that this holds for long stretches:
//
//  1. The variables, in the model's order, are cut into T parts of about
//     equal work (sum over edges of card u * card v), T = Threads.
//  2. The separator S holds the later end (in the model's order) of every
//     edge between two parts. Outside S, no edge joins two parts.
//  3. The processing order is: part 1 without S, part 2 without S, ...,
//     part T without S (each in the model's order), then S (in the model's
//     order).
//
// TRW-S in this order is run exactly, on T threads: in a forward pass the
// parts' nodes have all their earlier neighbours inside their own part (a
// neighbour in another part would be joined by an edge between parts, whose
// later end is in S), so thread c updates part c alone and reads only
// messages it wrote itself or messages from later nodes (written by the
// previous backward pass and not touched by a forward pass); after a
// barrier one thread updates S. A backward pass runs the other way round:
// S first on one thread, then the parts in parallel. The iterates are those
// of sequential TRW-S in that order, so everything pass.go proves about a
// pass holds: the bound after every pass is the exact dual value at the
// current messages (the threads' sums of c_st and end terms are added in
// part order, so the result is deterministic for a given thread count), it
// never increases, and the labelling is Kolmogorov's for that order. Only
// the order differs from one thread (on a 300x300 grid cut into 2 parts, S
// is the first row of the second part, 300 of 90000 nodes), and so do the
// iterates, not the guarantees.

// partition returns the processing order for threads threads: order[s] is
// the model variable at node s, pos its inverse, and parts the node ranges
// of the parts (parts[c]:parts[c+1]; the separator is parts[threads]:n).
// With one thread it returns nil, nil, [0, n]: the model's order.
func partition(m *model.Model, refs []pairRef, threads int) (order, pos []int32, parts []int) {
	n := m.NumVars()
	if threads <= 1 || n < 2*threads {
		return nil, nil, []int{0, n}
	}
	// Work per variable: the table sizes of its terms.
	work := make([]float64, n)
	total := 0.0
	for _, r := range refs {
		w := float64(m.Cards[r.u] * m.Cards[r.v])
		work[r.u] += w
		work[r.v] += w
		total += 2 * w
	}
	part := make([]int32, n)
	acc, c := 0.0, int32(0)
	for v := range n {
		part[v] = c
		acc += work[v] + 1
		if int(c) < threads-1 && acc >= (total+float64(n))*float64(c+1)/float64(threads) {
			c++
		}
	}
	sep := make([]bool, n)
	for _, r := range refs {
		if part[r.u] != part[r.v] {
			sep[max(r.u, r.v)] = true
		}
	}
	order, pos = make([]int32, 0, n), make([]int32, n)
	parts = make([]int, 0, threads+1)
	for c := range int32(threads) {
		parts = append(parts, len(order))
		for v := range n {
			if part[v] == c && !sep[v] {
				order = append(order, int32(v))
			}
		}
	}
	parts = append(parts, len(order))
	for v := range n {
		if sep[v] {
			order = append(order, int32(v))
		}
	}
	for s, v := range order {
		pos[v] = int32(s)
	}
	return order, pos, parts
}
