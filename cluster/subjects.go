package cluster

// Subjects of the job protocol. Everything of a job lives under
// "ddrun.<job>."; only worker registration, which happens before a worker
// has a job, is global:
//
//	ddrun.control                    hello           workers -> coordinator(s)
//	ddrun.<job>.assign.<worker>      assign          coordinator -> one worker (it subscribes ddrun.*.assign.<worker>)
//	ddrun.<job>.step.<worker>        step            coordinator -> one worker
//	ddrun.<job>.report.<worker>      ready, report   worker -> coordinator (it subscribes report.*)
//	ddrun.<job>.heartbeat.<worker>   heartbeat       worker -> coordinator (it subscribes heartbeat.*)
//	ddrun.<job>.beat                 beat            coordinator -> the workers it holds (they subscribe ddrun.*.beat)
//
// Claims and releases travel on the assign subject, their answers on the
// report subject.
//
// Job ids and worker names are transport.ValidNames, so each is exactly one
// subject token. These helpers do not check; transport.Encode checks the
// names in a header, and Publish and Subscribe reject malformed subjects.
const (
	// subjectRoot is the first token of every subject of the protocol.
	subjectRoot = "ddrun"
	// controlSubject carries worker registration (hello) for all jobs.
	controlSubject = subjectRoot + ".control"
)

// ControlSubject is where workers say hello (every 500 ms), for a watcher of the pool.
const ControlSubject = controlSubject

// assignSubject is where worker receives its assignment for job.
func assignSubject(job, worker string) string {
	return subjectRoot + "." + job + ".assign." + worker
}

// assignWildcard matches a worker's assignments in every job.
func assignWildcard(worker string) string {
	return subjectRoot + ".*.assign." + worker
}

// stepSubject is where the coordinator of job sends worker its steps.
func stepSubject(job, worker string) string {
	return subjectRoot + "." + job + ".step." + worker
}

// reportSubject is where worker sends its acknowledgements and reports for
// job.
func reportSubject(job, worker string) string {
	return subjectRoot + "." + job + ".report." + worker
}

// reportsWildcard matches the reports of every worker of job.
func reportsWildcard(job string) string { return subjectRoot + "." + job + ".report.*" }

// heartbeatSubject is where worker sends its heartbeats for job.
func heartbeatSubject(job, worker string) string {
	return subjectRoot + "." + job + ".heartbeat." + worker
}

// heartbeatsWildcard matches the heartbeats of every worker of job.
func heartbeatsWildcard(job string) string { return subjectRoot + "." + job + ".heartbeat.*" }

// beatSubject is where the coordinator of job says it is alive.
func beatSubject(job string) string { return subjectRoot + "." + job + ".beat" }

// beatsWildcard matches the beats of every job.
const beatsWildcard = subjectRoot + ".*.beat"
