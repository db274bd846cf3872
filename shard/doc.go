// Package shard owns the sharded input of a distributed run: how a job
// whose model no process holds whole is cut into parts, and how a worker
// builds its part from the model file.
//
// The model is an indexed file (package model/indexed, .ddx) that every
// worker can read at the same path (a shared volume). The coordinator
// reads its structure section in two passes and keeps no table and no
// scope (PlanLayout): the first pass cuts the factors into consecutive ranges of
// about equal cost, one per worker, and notes where every k-th factor's
// record starts (k at most 1024, less on small models), or takes all that
// from a Summary that the writer filled as this process converted the
// model (summary.go: why skipping the walk's checksum is safe there); the second finds
// the variables that ranges share (the boundary) and counts each worker's
// slaves over each boundary variable. The first pass notes every chunk's
// least and greatest variable, so every worker's factors lie within a
// hull, and the boundary among the variables inside two hulls: on a file
// in a local order the second pass reads again only the chunks that meet
// those (hulls.go: a few per cut). Where the hulls overlap too much (no
// local order) it walks every range instead, in two groups of
// workers at once, the first forwards and the second backwards. Each
// group keeps a window of the variables touched lately and a bit for each
// variable seen before, by pages dropped once full (owners.go), so that
// on a file in a local order what the pass holds is a few rows of a grid,
// not the variables; a variable that comes back after it left the window
// is counted again by one more walk. What it keeps is O(boundary +
// factors/1024 + workers + window), and the set of the variables some
// factor holds (a bit each, by pages dropped once full: a few pages of a
// file in a local order, NumVars/8 bytes at most). Each
// worker then reads only its range of factor records, their payloads and
// its variables' unaries by byte ranges (Load) and builds a
// consensus.Part from them, with one slave per factor; or, for a solver
// that runs its part whole (distributed TRW-S), a Piece: the part as a
// model, the unary of each boundary variable divided between the parts
// that hold it (LoadPiece, Layout.Copies).
//
// The file's factor order is the partition: files whose order follows the
// graph (grids row by row, chains, what coordinator gen writes) give
// boundaries of a few rows; a file in random order gives a large one
// (convert it in a good order first). The file must have no factor over
// fewer than two variables and no forbidden state (coordinator convert
// folds unary factors into the unaries), and evidence is not applied.
//
// A worker of a sharded run saves its part's state for a checkpoint into a
// state file (WriteState, StateFiles), in a directory every worker sees,
// and the coordinator's checkpoint keeps only its reference (StateRef: the
// name, size and sha256); ReadState checks a file before it is used.
//
// A worker that cannot open the file receives the bytes its part reads
// instead (ship.go): the coordinator hashes the file in blocks
// (HashBlocks) and announces the digest in the specs (Blocks.Announce,
// Spec.Root); the worker reads its part through a Received, which checks
// every block it fetches against that digest and keeps the blocks in a
// file of the worker's own directory. Fetching is the caller's (a Fetch).
//
// What a message names is never a path a worker writes to: Dirs confine a
// worker to its own state directory (the only one it writes, with names it
// makes: ConfinedPath) and its model roots (ModelPath), and the errors it
// sends back name no path and no size.
//
// It owns a Spec's wire form both ways: a sharded job's coordinator ships
// a Layout's specs (EncodeSpecs; Digest is the job's identity) and a worker
// builds its part from its own (LoadFlat, LoadPiece, after Dirs.ModelPath
// or a Received). It must not know how parts travel (package cluster
// carries the specs as opaque bytes, package launch the received blocks)
// nor the command line.
package shard
