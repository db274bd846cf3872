// Package service is ddrun's job service (`coordinator serve`): a queue of
// solve jobs behind an HTTP API and the same operations over NATS
// request/reply, with each job's model, state, result and convergence
// trace kept under a data directory so that a restarted service lists the
// jobs it finished and runs again those it had not.
//
// It owns the API (routes, bodies, errors, docs/openapi.yaml), who may use
// it (API tokens: RequireToken for HTTP, the token field over NATS; a
// service without tokens lets no request in), the validation of what
// clients send (sizes, decompressed sizes, formats, parameter names, ids),
// the per-client limits, the replay protection of sealed NATS submits (a
// nonce per submit, recorded for every service of a cluster in a JetStream
// key-value bucket when the server has JetStream), the job lifecycle (queued, running, done, failed,
// cancelled), the queue and how many models it holds in memory at once,
// the files of a job, and the HTTP server with the process's /metrics
// beside the API (Serve).
//
// It must not know the algorithms, their flags or how a job is spread over
// workers: a Runner (cmd/coordinator's, which reuses solve's and run's
// plumbing) checks a job's settings and model and runs it. It knows no
// model format beyond choosing a file name by format, and nothing of the
// job protocol between a coordinator and its workers. Where tokens and
// certificates come from (files, the environment, the data directory) is
// its caller's (launch.ServeConfig).
package service
