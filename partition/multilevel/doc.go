// Package multilevel places the slaves of a decomposition plan on workers
// (Place): it builds the slave graph (one vertex per slave, weighted by its
// estimated solve cost; edges between slaves that share variables) and
// partitions it with a multilevel k-way graph partitioner in the style of
// METIS (Partition, over CSR graphs: Graph), balancing the workers' work
// and minimising the variables replicated across workers.
//
// It knows plans (package partition) and models only as far as their
// sizes and scopes; it must not know how plans are built, how slaves are
// solved, how multipliers are updated, or how workers talk. The METIS file
// format is known only to its tests (metis_io_test.go), which compare the
// partitioner with the gpmetis binary.
package multilevel
