// Package metrics owns what a ddrun process tells its operators over HTTP:
// a Prometheus registry per process (never the global default) with the
// ddrun_... series of a coordinator or a worker, and a handler with
// GET /metrics (the Prometheus text format), GET /healthz (the process is
// alive) and GET /readyz (200 only when the process is ready: connected to
// NATS and, for a Raft member, leading or following a known leader; 503
// with a one-line reason otherwise). Serve and Start listen on an address
// and shut down with their context; the job service mounts Handler
// instead.
//
// It knows the solver's progress reports (package solver) and nothing
// else of ddrun: the numerics never import it, and the runtime reports to
// it only through the callbacks the commands wire (cluster.Hooks,
// cluster.WorkerOptions) and functions read at scrape time (bytes on the
// connection, readiness checks), so that no hot loop does more than one
// call per iteration for it.
package metrics
